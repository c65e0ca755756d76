// The thread view: the header (title, kind, participants and what their bots are doing), the
// timeline (timeline.js: messages from messages.js and run cards from runs.js, the reply
// streaming in token by token, question/approval cards) and the composer; kept live from the
// event stream.

import { h, fill, clear, timeEl, avatar, debounce, toast } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";
import { RunCard } from "/web/runs.js";
import { createComposer } from "/web/composer.js";
import { messageEl } from "/web/messages.js";
import { showWhy, latestHumanMessage, mentionToggle } from "/web/engagement.js";
import { Timeline, buildEntries, entryTime } from "/web/timeline.js";

export function mount(container, parts) {
  const threadId = parts[1];
  const started = performance.now();
  const disposers = [];
  const view = new ThreadView(container, threadId, started);
  disposers.push(
    live.on("message.created", (m) => view.onMessage(m)),
    live.on("run.updated", (r) => view.onLiveRun(r)),
    live.on("run.event", (e) => view.onRunEvent(e)),
    live.on("text.delta", (d) => view.onDelta(d)),
    live.on("thread.updated", (t) => view.onThread(t)),
    live.on("resync", () => view.resync()),
    store.on("bots", () => {
      view.renderPresence();
      view.composer.refreshHint(); // a default bot disabled or enabled again
    }),
    store.on("actors", () => view.renderPresence()),
  );
  const dispose = () => {
    view.disposed = true;
    for (const off of disposers) off();
    view.teardown();
  };
  dispose.ready = view.load();
  return dispose;
}

class ThreadView {
  constructor(container, threadId, started) {
    this.threadId = threadId;
    this.started = started;
    this.thread = null;
    this.messages = new Map();
    this.runs = new Map();
    this.runTicks = new Map(); // run id → run.updated events applied from the stream
    this.cards = new Map();
    this.replied = new Set(); // runs whose reply message is on the timeline
    this.loaded = false;
    this.disposed = false;

    this.title = h("h1.thread-title", "Loading…");
    this.meta = h("div.thread-meta");
    this.presence = h("div.presence", { "aria-label": "Participants" });
    const header = h(
      "header.thread-head",
      h("a.back", { href: "#/threads", "aria-label": "Back to threads" }, "←"),
      h("div.thread-head-main", this.title, this.meta),
      this.presence,
    );
    this.timeline = new Timeline((entry) =>
      entry.kind === "m" ? messageEl(this.messages.get(entry.id)) : this.card(this.runs.get(entry.id)).el,
    );
    this.composer = createComposer({
      handles: () => this.handles(),
      recipients: (mentions) => this.recipientHint(mentions),
      onSend: (text) => this.send(text),
    });
    this.whyPanel = h("div.why-panel", { hidden: true, role: "status", "aria-live": "polite" });
    this.root = h("section.thread-view", { "aria-labelledby": "thread-title" }, header, this.whyPanel, this.timeline.el, this.composer.el);
    this.title.id = "thread-title";
    container.append(this.root);

    this.ackSoon = debounce(() => this.ack(), 400);
    this.onVisible = () => {
      if (document.visibilityState === "visible") this.ackSoon();
    };
    document.addEventListener("visibilitychange", this.onVisible);
  }

  teardown() {
    this.timeline.teardown();
    document.removeEventListener("visibilitychange", this.onVisible);
  }

  // ---- loading ------------------------------------------------------------------------------

  async load() {
    try {
      const [thread, messages, runs] = await Promise.all([
        api.thread(this.threadId, { actor: store.actor }),
        api.messages(this.threadId),
        api.runs({ thread_id: this.threadId }),
      ]);
      if (this.disposed) return;
      this.thread = thread;
      for (const m of messages) this.messages.set(m.id, m);
      for (const r of runs) this.runs.set(r.id, r);
      const { entries, replied } = buildEntries(this.messages, this.runs);
      this.replied = replied;
      this.renderHeader();
      this.timeline.renderInitial(entries);
      this.loaded = true;
      this.reportRendered();
      if (matchMedia("(min-width: 761px)").matches) this.composer.focus(); // no keyboard pop-up on phones
      this.ack();
    } catch (error) {
      if (this.disposed) return;
      fill(this.timeline.list,
        h(
          "div.empty",
          error.status === 404 ? "This thread does not exist (or was deleted)." : `Could not load the thread: ${describeError(error)}`,
        ),
      );
      this.title.textContent = "Thread";
      if (error.status === 404) this.composer.el.hidden = true; // nowhere to post
    }
  }

  /** Render timings for the benchmarks: window.__openbot.lastThreadRender, data-rendered/painted. */
  reportRendered() {
    const ms = performance.now() - this.started;
    const stats = { ms, at: performance.now(), messages: this.messages.size, runs: this.runs.size, rendered: this.timeline.rendered.size };
    window.__openbot = Object.assign(window.__openbot || {}, { lastThreadRender: stats });
    this.root.dataset.rendered = "true";
    performance.mark("openbot:thread-rendered");
    // Time to the first frame that shows it (the next animation frame has been painted).
    requestAnimationFrame(() => setTimeout(() => {
      stats.paintedAt = performance.now();
      stats.paintedMs = stats.paintedAt - this.started;
      this.root.dataset.painted = "true";
    }, 0));
  }

  /** After a reconnect or reset: catch up over REST (messages after the last one, runs, header). */
  async resync() {
    if (!this.loaded || this.disposed) return;
    try {
      const lastId = this.timeline.lastMessageId();
      const before = new Map(this.runTicks);
      const [thread, messages, runs] = await Promise.all([
        api.thread(this.threadId, { actor: store.actor }),
        api.messages(this.threadId, { after: lastId }),
        api.runs({ thread_id: this.threadId }),
      ]);
      if (this.disposed) return;
      this.onThread(thread);
      for (const m of messages) this.onMessage(m);
      for (const r of runs) this.onFetchedRun(r, before);
    } catch (error) {
      if (error.status === 404) toast("This thread was deleted.", "error");
    }
  }

  // ---- rendering ----------------------------------------------------------------------------

  card(run) {
    let card = this.cards.get(run.id);
    if (!card) {
      card = new RunCard(run, { onJump: (id) => this.timeline.jumpTo(id) });
      this.cards.set(run.id, card);
    }
    return card;
  }

  renderHeader() {
    const t = this.thread;
    if (!t) return;
    this.title.textContent = t.title || "Untitled thread";
    document.title = `${t.title || "Thread"} · OpenBot`;
    fill(this.meta, 
      h("span.chip", t.kind || "task"),
      t.default_bot ? h("span.muted", `default @${t.default_bot}`) : null,
      t.kind === "channel" ? mentionToggle(t) : null,
      t.last_message_at ? h("span.muted", "last activity ", timeEl(t.last_message_at)) : null,
    );
    this.renderPresence();
    this.composer.refreshHint(); // who a post without a mention reaches follows the thread
  }

  renderPresence() {
    if (!this.thread) return;
    clear(this.presence);
    for (const p of this.thread.participants || []) {
      const bot = store.bots.get(p.handle);
      let state = "";
      if (bot && bot.state) {
        if ((bot.state.waiting_threads || []).includes(this.threadId)) state = "waiting_human";
        else if ((bot.state.running_threads || []).includes(this.threadId)) state = "running";
        else if (bot.state.status === "running") state = "busy";
      }
      const label = state === "waiting_human" ? "waiting for a human" : state === "busy" ? "busy elsewhere" : state || (bot ? "idle" : p.kind);
      const ask = () => showWhy(this.whyPanel, p.handle, latestHumanMessage(this.messages.values()));
      this.presence.append(
        h(
          p.kind === "bot" ? "button.presence-item" : "span.presence-item",
          {
            class: state ? `state-${state}` : "",
            title: p.kind === "bot" ? `@${p.handle} · ${label} · why didn't @${p.handle} answer?` : `@${p.handle} · ${label}`,
            type: p.kind === "bot" ? "button" : null,
            onclick: p.kind === "bot" ? ask : null,
            dataset: { handle: p.handle },
          },
          avatar(p.handle, p.kind),
          h("span.presence-handle", `@${p.handle}`),
          bot ? h("span.visually-hidden", ` ${label}`) : null,
        ),
      );
    }
  }

  // ---- live updates -------------------------------------------------------------------------

  onThread(thread) {
    if (!thread || thread.id !== this.threadId) return;
    const seen = this.thread && this.thread.last_message_at;
    this.thread = { ...this.thread, ...thread };
    if (seen && !(Date.parse(thread.last_message_at) > Date.parse(seen))) {
      this.thread.last_message_at = seen; // a message seen live is newer than an older snapshot
    }
    if (this.loaded) this.renderHeader();
  }

  onMessage(m) {
    if (!m || m.thread_id !== this.threadId) return;
    if (this.messages.has(m.id)) return;
    this.messages.set(m.id, m);
    if (!this.loaded) return; // the initial load will include it (or resync will)
    const card = m.run_id ? this.cards.get(m.run_id) : null;
    if (card) card.markReplied();
    this.timeline.append({ kind: "m", id: m.id, t: entryTime(m.created_at) });
    if (card && card.el.isConnected && !this.replied.has(m.run_id)) {
      // The reply replaces the streamed text; its run card moves under it.
      this.replied.add(m.run_id);
      this.timeline.moveToEnd("r", m.run_id, card.el);
    }
    if (m.sender && !(this.thread.participants || []).some((p) => p.handle === m.sender.handle)) {
      this.thread.participants = [...(this.thread.participants || []), m.sender];
    }
    if (!this.thread.last_message_at || Date.parse(m.created_at) > Date.parse(this.thread.last_message_at)) {
      this.thread.last_message_at = m.created_at;
    }
    this.renderHeader(); // "last activity" and who takes part move with every message
    if (!m.sender || m.sender.handle !== store.actor) this.ackSoon();
  }

  /** A run.updated from the event stream: newer than any REST read started before it. */
  onLiveRun(run) {
    if (!run) return;
    this.runTicks.set(run.id, (this.runTicks.get(run.id) || 0) + 1);
    this.onRun(run);
  }

  /** Apply a run read over REST unless the stream updated it while the request was in flight. */
  onFetchedRun(run, ticksBefore) {
    if ((this.runTicks.get(run.id) || 0) !== (ticksBefore.get(run.id) || 0)) return;
    this.onRun(run);
  }

  onRun(run) {
    if (!run || run.thread_id !== this.threadId) return;
    const known = this.runs.get(run.id);
    this.runs.set(run.id, { ...(known || {}), ...run });
    if (!this.loaded) return;
    const card = this.cards.get(run.id);
    if (card) card.update(run);
    if (!known) this.timeline.append({ kind: "r", id: run.id, t: entryTime(run.created_at) });
    else this.timeline.follow();
    this.renderPresence();
  }

  onRunEvent(event) {
    if (!event || event.thread_id !== this.threadId || !this.loaded) return;
    const card = this.cards.get(event.run_id);
    if (card) {
      card.addEvent(event);
    } else if (!this.runs.has(event.run_id)) {
      this.fetchRun(event.run_id);
    }
  }

  onDelta(delta) {
    if (!delta || delta.thread_id !== this.threadId || !this.loaded) return;
    const card = this.cards.get(delta.run_id);
    if (card) {
      card.appendDelta(delta.delta || "");
      this.timeline.follow();
    } else {
      // A delta before its run.updated: show the run now, then keep streaming into it.
      this.onRun({ id: delta.run_id, thread_id: this.threadId, bot: delta.bot, status: "running", created_at: new Date().toISOString() });
      this.cards.get(delta.run_id)?.appendDelta(delta.delta || "");
      this.fetchRun(delta.run_id);
    }
  }

  async fetchRun(runId) {
    try {
      const before = new Map(this.runTicks);
      const run = await api.run(runId);
      const { events, ...rest } = run;
      this.onFetchedRun(rest, before);
    } catch {
      /* the run.updated event will bring it */
    }
  }

  // ---- composing ----------------------------------------------------------------------------

  handles() {
    const inThread = new Set((this.thread?.participants || []).map((p) => p.handle));
    return store
      .handles()
      .filter((a) => a.handle !== store.actor)
      .map((a) => ({ ...a, inThread: inThread.has(a.handle) }));
  }

  recipientHint(mentions) {
    const known = mentions.filter((m) => store.actors.has(m) && m !== store.actor);
    if (known.length) return `To ${[...new Set(known)].map((m) => `@${m}`).join(", ")}`;
    const unknown = store.actors.size ? mentions.filter((m) => !store.actors.has(m)) : [];
    if (unknown.length) return `${[...new Set(unknown)].map((m) => `@${m}`).join(", ")}: no such member — this message will reach no bot`;
    const t = this.thread;
    if (!t) return "";
    const keys = "Enter to send, Shift+Enter for a new line";
    if (t.kind === "channel") {
      // The engagement gate, not a default bot, takes a channel post without a mention.
      return t.require_mention
        ? `Only an @mention wakes a bot here · ${keys}`
        : `No @mention: each bot here decides whether it is meant for it · ${keys}`;
    }
    return `${defaultHint(t)} · ${keys}`;
  }

  async send(text) {
    try {
      const result = await api.postMessage(this.threadId, { content: text, from: store.actor });
      if (result && result.message) this.onMessage(result.message);
      this.timeline.scrollToEnd(true);
      if (result && result.held && result.held.length) toast(`Hand-off held for ${result.held.map((x) => `@${x}`).join(", ")}`);
      return result; // the composer shows its unknown_mentions
    } catch (error) {
      toast(`Not sent: ${describeError(error)}`, "error");
      throw error;
    }
  }

  async ack() {
    if (document.visibilityState !== "visible" || this.disposed) return;
    try {
      await store.load(); // who we act as is known once the store has loaded (an actor token)
      await api.ackThread(store.actor, this.threadId);
    } catch {
      /* read state is best effort */
    }
  }
}

/** Who a task thread's post without a mention wakes, as the server routes it: the default bot,
 * else the thread's only bot, else @chief_of_staff; a disabled bot is passed over. */
function defaultHint(t) {
  // Until the bots have loaded, every bot counts as enabled (never a flash of "no bot").
  const loaded = store.bots.size > 0;
  const enabled = (handle) => !loaded || (store.bots.has(handle) && store.bots.get(handle).enabled !== false);
  const disabled = t.default_bot && store.bots.has(t.default_bot) && !enabled(t.default_bot) ? t.default_bot : null;
  const bots = (t.participants || []).filter((p) => p.kind === "bot" && enabled(p.handle)).map((p) => p.handle);
  let target = null;
  if (t.default_bot && enabled(t.default_bot)) target = t.default_bot;
  else if (bots.length === 1) target = bots[0];
  else if (enabled("chief_of_staff")) target = "chief_of_staff";
  const why = disabled ? ` (@${disabled} is disabled)` : " (default)";
  return target ? `To @${target}${why}` : `No bot will get this${disabled ? why : ""}: @mention one`;
}
