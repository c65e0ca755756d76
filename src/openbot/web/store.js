// Shared, live caches every view reads: actors, bots (with live state) and the thread list.
// Kept current by the event stream; views subscribe with store.on("bots" | "threads" | "actors").

import { api } from "/web/api.js";
import { live } from "/web/live.js";

const ACTOR_KEY = "openbot.actor";

class Store {
  constructor() {
    this.bots = new Map();
    this.actors = new Map();
    this.threads = new Map();
    this.listeners = new Map();
    this.actor = localStorage.getItem(ACTOR_KEY) || "you";
    this.pinned = null; // the actor an actor token acts as (the page may not act as anyone else)
    this.loaded = null;
  }

  on(topic, fn) {
    if (!this.listeners.has(topic)) this.listeners.set(topic, new Set());
    this.listeners.get(topic).add(fn);
    return () => this.listeners.get(topic)?.delete(fn);
  }

  notify(topic, data) {
    for (const fn of [...(this.listeners.get(topic) || [])]) fn(data);
  }

  async refreshWho() {
    const who = await api.whoami().catch(() => ({ actor: null, admin: true }));
    this.pinned = who.actor || null;
    if (this.pinned && this.actor !== this.pinned) {
      this.actor = this.pinned;
      this.notify("actor", this.actor);
    }
  }

  setActor(handle) {
    if (this.pinned) return;
    this.actor = handle;
    localStorage.setItem(ACTOR_KEY, handle);
    this.notify("actor", handle);
    this.refreshThreads().catch(() => {});
  }

  /** Handles for @autocomplete: thread participants first, then the whole team. */
  handles() {
    return [...this.actors.values()].map((a) => ({ handle: a.handle, kind: a.kind, name: a.name || "" }));
  }

  humans() {
    return [...this.actors.values()].filter((a) => a.kind === "human");
  }

  load() {
    if (!this.loaded) {
      // An actor token acts as its actor only: the page acts as that actor, and cannot switch.
      this.loaded = this.refreshWho().then(() =>
        Promise.all([this.refreshActors(), this.refreshBots(), this.refreshThreads()]),
      );
      live.on("bot.updated", (bot) => this.putBot(bot));
      live.on("thread.updated", (thread) => this.putThread(thread));
      live.on("inbox.updated", (data) => {
        if (!data || data.actor === this.actor) this.refreshThreadsSoon();
      });
      live.on("message.created", (message) => {
        const thread = message && this.threads.get(message.thread_id);
        if (thread) {
          thread.last_message_at = message.created_at;
          this.notify("threads");
        } else {
          this.refreshThreadsSoon();
        }
      });
      // Bot state (running in X, waiting, queue depth) moves with runs and deliveries.
      live.on("run.updated", () => this.refreshBotsSoon());
      live.on("message.created", () => this.refreshBotsSoon());
      live.on("resync", (info) => {
        if (info && info.reason === "connected") return; // just loaded
        const quiet = () => {}; // the connection indicator already says we are offline
        this.refreshActors().catch(quiet);
        this.refreshBots().catch(quiet);
        this.refreshThreads().catch(quiet);
      });
    }
    return this.loaded;
  }

  async refreshActors() {
    const actors = await api.actors();
    this.actors = new Map(actors.map((a) => [a.handle, a]));
    if (!this.actors.has(this.actor)) {
      const firstHuman = actors.find((a) => a.kind === "human");
      if (firstHuman) this.actor = firstHuman.handle;
    }
    this.notify("actors");
  }

  async refreshBots() {
    const mine = (this.botSeq = (this.botSeq || 0) + 1);
    const bots = await api.bots();
    if (mine !== this.botSeq) return;
    this.bots = new Map(bots.map((b) => [b.handle, b]));
    for (const bot of bots) {
      if (!this.actors.has(bot.handle)) this.actors.set(bot.handle, { handle: bot.handle, kind: "bot", name: bot.name });
    }
    this.notify("bots");
  }

  refreshBotsSoon() {
    if (this.botTimer) return;
    this.botTimer = setTimeout(() => {
      this.botTimer = null;
      this.refreshBots().catch(() => {});
    }, 250);
  }

  putBot(bot) {
    if (!bot || !bot.handle) return;
    const prev = this.bots.get(bot.handle) || {};
    this.bots.set(bot.handle, { ...prev, ...bot });
    if (!this.actors.has(bot.handle)) this.actors.set(bot.handle, { handle: bot.handle, kind: "bot", name: bot.name });
    this.notify("bots", bot);
  }

  // Refreshes overlap (a reconnect, a debounced event, a change of actor); an older answer that
  // arrives after a newer one must not undo it, so only the newest refresh of each list applies.
  async refreshThreads() {
    const mine = (this.threadSeq = (this.threadSeq || 0) + 1);
    const threads = await api.threads({ actor: this.actor });
    if (mine !== this.threadSeq) return;
    this.threads = new Map(threads.map((t) => [t.id, t]));
    this.notify("threads");
  }

  refreshThreadsSoon() {
    clearTimeout(this.threadTimer);
    this.threadTimer = setTimeout(() => this.refreshThreads().catch(() => {}), 150);
  }

  putThread(thread) {
    if (!thread || !thread.id) return;
    const prev = this.threads.get(thread.id) || {};
    // thread.updated carries counts for the default actor; keep ours when acting as someone else
    const merged = { ...prev, ...thread };
    if (this.actor !== "you" && prev.unread !== undefined) {
      merged.unread = prev.unread;
      merged.needs_action = prev.needs_action;
      this.refreshThreadsSoon();
    }
    this.threads.set(thread.id, merged);
    this.notify("threads", merged);
  }

  threadTitle(id) {
    const t = this.threads.get(id);
    return t ? t.title || "Untitled thread" : id;
  }
}

export const store = new Store();
