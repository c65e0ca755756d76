// The thread view: messages and run cards on one timeline, the reply streaming in token by
// token, question/approval cards, and the composer.
//
// Rendering is windowed from the bottom: the newest WINDOW entries are rendered first and
// earlier ones are rendered in pages when the reader scrolls up (or jumps to a trigger), so a
// 2,000-message thread paints as fast as a short one.

import { h, fill, clear, timeEl, renderText, avatar, debounce, toast, parseTime } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";
import { RunCard, OPEN_STATUSES, statusLabel } from "/web/runs.js";
import { createComposer } from "/web/composer.js";

const WINDOW = 80;
const PAGE = 120;

const NOTICE_LABEL = {
  hop_limit: "Hop limit reached",
  handoff_held: "Hand-off held",
  handoff_released: "Hand-off released",
  run_failed: "Run failed",
  run_cancelled: "Run cancelled",
  restart: "Server restarted",
  server_restart: "Server restarted",
  shed: "Request shed",
};

function entryTime(iso) {
  const d = parseTime(iso);
  return d ? d.getTime() : 0;
}

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
    store.on("bots", () => view.renderPresence()),
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
    this.entries = []; // [{kind: "m" | "r", id, t}] oldest first
    this.renderedFrom = 0; // index into entries of the first rendered entry
    this.rendered = new Map(); // entry key → element
    this.loaded = false;
    this.disposed = false;
    this.stick = true;

    this.title = h("h1.thread-title", "Loading…");
    this.meta = h("div.thread-meta");
    this.presence = h("div.presence", { "aria-label": "Participants" });
    const header = h(
      "header.thread-head",
      h("a.back", { href: "#/threads", "aria-label": "Back to threads" }, "←"),
      h("div.thread-head-main", this.title, this.meta),
      this.presence,
    );
    this.earlier = h("button.load-earlier", { type: "button", hidden: true, onclick: () => this.renderEarlier() }, "Show earlier messages");
    this.list = h("div.timeline-items");
    this.timeline = h(
      "div.timeline",
      { role: "log", "aria-label": "Messages", "aria-live": "polite", "aria-relevant": "additions", tabindex: "0" },
      this.earlier,
      this.list,
    );
    this.jump = h("button.jump-latest", { type: "button", hidden: true, onclick: () => this.scrollToEnd(true) }, "↓ New messages");
    this.composer = createComposer({
      handles: () => this.handles(),
      recipients: (mentions) => this.recipientHint(mentions),
      onSend: (text) => this.send(text),
    });
    this.root = h("section.thread-view", { "aria-labelledby": "thread-title" }, header, h("div.timeline-wrap", this.timeline, this.jump), this.composer.el);
    this.title.id = "thread-title";
    container.append(this.root);

    this.timeline.addEventListener("scroll", () => {
      const gap = this.timeline.scrollHeight - this.timeline.scrollTop - this.timeline.clientHeight;
      this.stick = gap < 60;
      if (this.stick) this.jump.hidden = true;
    });
    this.observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting) && this.loaded) this.renderEarlier();
      },
      { root: this.timeline, rootMargin: "200px 0px 0px 0px" },
    );
    this.observer.observe(this.earlier);
    this.ackSoon = debounce(() => this.ack(), 400);
    this.onVisible = () => {
      if (document.visibilityState === "visible") this.ackSoon();
    };
    document.addEventListener("visibilitychange", this.onVisible);
  }

  teardown() {
    this.observer.disconnect();
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
      this.rebuildEntries();
      this.renderHeader();
      this.renderInitial();
      this.loaded = true;
      const ms = performance.now() - this.started;
      const stats = { ms, at: performance.now(), messages: this.messages.size, runs: this.runs.size, rendered: this.rendered.size };
      window.__openbot = Object.assign(window.__openbot || {}, { lastThreadRender: stats });
      this.root.dataset.rendered = "true";
      performance.mark("openbot:thread-rendered");
      // Time to the first frame that shows it (the next animation frame has been painted).
      requestAnimationFrame(() => setTimeout(() => {
        stats.paintedAt = performance.now();
        stats.paintedMs = stats.paintedAt - this.started;
        this.root.dataset.painted = "true";
      }, 0));
      if (matchMedia("(min-width: 761px)").matches) this.composer.focus(); // no keyboard pop-up on phones
      this.ack();
    } catch (error) {
      if (this.disposed) return;
      fill(this.list, 
        h(
          "div.empty",
          error.status === 404 ? "This thread does not exist (or was deleted)." : `Could not load the thread: ${describeError(error)}`,
        ),
      );
      this.title.textContent = "Thread";
    }
  }

  /** After a reconnect or reset: catch up over REST (messages after the last one, runs, header). */
  async resync() {
    if (!this.loaded || this.disposed) return;
    try {
      const lastId = this.entries.filter((e) => e.kind === "m").map((e) => e.id).pop();
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

  /**
   * One timeline: messages in server order; a run's card sits right below its reply (the first
   * message it posted) or, for a run without a reply yet, where it started.
   */
  rebuildEntries() {
    const replied = new Map(); // reply message id → [run ids]
    const replyOf = new Set();
    this.replied = replyOf;
    for (const m of this.messages.values()) {
      if (m.run_id && this.runs.has(m.run_id) && !replyOf.has(m.run_id)) {
        replyOf.add(m.run_id);
        replied.set(m.id, [...(replied.get(m.id) || []), m.run_id]);
      }
    }
    const loose = [...this.runs.values()]
      .filter((r) => !replyOf.has(r.id))
      .map((r) => ({ kind: "r", id: r.id, t: entryTime(r.created_at) }))
      .sort((a, b) => a.t - b.t);
    const entries = [];
    let next = 0;
    for (const m of this.messages.values()) {
      const t = entryTime(m.created_at);
      while (next < loose.length && loose[next].t < t) entries.push(loose[next++]);
      entries.push({ kind: "m", id: m.id, t });
      for (const runId of replied.get(m.id) || []) entries.push({ kind: "r", id: runId, t });
    }
    while (next < loose.length) entries.push(loose[next++]);
    this.entries = entries;
  }

  // ---- rendering ----------------------------------------------------------------------------

  key(entry) {
    return `${entry.kind}:${entry.id}`;
  }

  renderEntry(entry) {
    let el;
    if (entry.kind === "m") {
      el = this.messageEl(this.messages.get(entry.id));
    } else {
      const card = this.card(this.runs.get(entry.id));
      el = card.el;
    }
    this.rendered.set(this.key(entry), el);
    return el;
  }

  renderInitial() {
    clear(this.list);
    this.rendered.clear();
    this.renderedFrom = Math.max(0, this.entries.length - WINDOW);
    const frag = document.createDocumentFragment();
    for (let i = this.renderedFrom; i < this.entries.length; i += 1) frag.appendChild(this.renderEntry(this.entries[i]));
    if (!this.entries.length) frag.appendChild(h("div.empty.thread-empty", "No messages yet. Say hello — mention a bot with @, or just write to the default bot."));
    this.list.appendChild(frag);
    this.updateEarlier();
    this.scrollToEnd(true);
  }

  renderEarlier(count = PAGE) {
    if (this.renderedFrom === 0) return;
    const from = Math.max(0, this.renderedFrom - count);
    const frag = document.createDocumentFragment();
    for (let i = from; i < this.renderedFrom; i += 1) frag.appendChild(this.renderEntry(this.entries[i]));
    const before = this.timeline.scrollHeight;
    const top = this.timeline.scrollTop;
    this.list.insertBefore(frag, this.list.firstChild);
    this.renderedFrom = from;
    this.timeline.scrollTop = top + (this.timeline.scrollHeight - before);
    this.updateEarlier();
  }

  updateEarlier() {
    const hidden = this.renderedFrom;
    this.earlier.hidden = hidden === 0;
    this.earlier.textContent = `Show earlier (${hidden} more)`;
  }

  appendEntry(entry) {
    this.list.querySelector(".thread-empty")?.remove();
    this.entries.push(entry);
    this.list.appendChild(this.renderEntry(entry));
    this.afterAppend();
  }

  afterAppend() {
    if (this.stick) this.scrollToEnd();
    else this.jump.hidden = false;
  }

  scrollToEnd(force = false) {
    if (force) this.stick = true;
    requestAnimationFrame(() => {
      this.timeline.scrollTop = this.timeline.scrollHeight;
    });
    this.jump.hidden = true;
  }

  jumpTo(messageId) {
    const index = this.entries.findIndex((e) => e.kind === "m" && e.id === messageId);
    if (index < 0) return;
    if (index < this.renderedFrom) this.renderEarlier(this.renderedFrom - index + 5);
    const el = this.rendered.get(`m:${messageId}`);
    if (!el) return;
    el.scrollIntoView({ block: "center", behavior: "smooth" });
    el.classList.add("flash");
    setTimeout(() => el.classList.remove("flash"), 1600);
  }

  messageEl(m) {
    if (!m.sender) {
      const kind = (m.metadata && m.metadata.kind) || "notice";
      return h(
        "div.notice",
        { id: `m-${m.id}`, class: `notice-${kind}`, role: "note", dataset: { messageId: m.id, kind } },
        h("span.notice-label", NOTICE_LABEL[kind] || kind.replace(/_/g, " ")),
        h("span.notice-text", renderText(m.content)),
        timeEl(m.created_at),
      );
    }
    const sender = m.sender;
    const mine = sender.handle === store.actor;
    return h(
      "article.msg",
      {
        id: `m-${m.id}`,
        class: `msg-${sender.kind}${mine ? " msg-mine" : ""}`,
        dataset: { messageId: m.id, sender: sender.handle },
        "aria-label": `@${sender.handle}`,
      },
      avatar(sender.handle, sender.kind),
      h(
        "div.msg-body",
        h(
          "div.msg-head",
          h("span.msg-sender", `@${sender.handle}`),
          sender.kind !== "human" ? h("span.msg-kind", sender.kind) : null,
          m.hop ? h("span.msg-hop", { title: "Bot-to-bot hand-offs since the last human message" }, `hop ${m.hop}`) : null,
          timeEl(m.created_at),
        ),
        h("div.msg-content", renderText(m.content, this.handleSet(m))),
      ),
    );
  }

  /** Handles to highlight: the server-resolved mentions plus the team (null: highlight all). */
  handleSet(m) {
    if (!store.actors.size) return null; // team not loaded yet: trust the text
    if (!this._handleSet || this._handleSetSize !== store.actors.size) {
      this._handleSet = new Set(store.actors.keys());
      this._handleSetSize = store.actors.size;
    }
    if (!m.mentions || !m.mentions.length) return this._handleSet;
    return new Set([...this._handleSet, ...m.mentions]);
  }

  card(run) {
    let card = this.cards.get(run.id);
    if (!card) {
      card = new RunCard(run, { onJump: (id) => this.jumpTo(id) });
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
      t.last_message_at ? h("span.muted", "last activity ", timeEl(t.last_message_at)) : null,
    );
    this.renderPresence();
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
      this.presence.append(
        h(
          "span.presence-item",
          { class: state ? `state-${state}` : "", title: `@${p.handle} · ${label}` },
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
    this.thread = { ...this.thread, ...thread };
    if (this.loaded) this.renderHeader();
  }

  onMessage(m) {
    if (!m || m.thread_id !== this.threadId) return;
    if (this.messages.has(m.id)) return;
    this.messages.set(m.id, m);
    if (!this.loaded) return; // the initial load will include it (or resync will)
    const card = m.run_id ? this.cards.get(m.run_id) : null;
    if (card) card.markReplied();
    this.appendEntry({ kind: "m", id: m.id, t: entryTime(m.created_at) });
    if (card && card.el.isConnected && !this.replied.has(m.run_id)) {
      // The reply replaces the streamed text; its run card moves under it.
      this.replied.add(m.run_id);
      const at = this.entries.findIndex((e) => e.kind === "r" && e.id === m.run_id);
      if (at >= 0) {
        const [entry] = this.entries.splice(at, 1);
        this.entries.push(entry);
        if (at < this.renderedFrom) this.renderedFrom -= 1;
      }
      this.list.appendChild(card.el);
    }
    if (m.sender && !(this.thread.participants || []).some((p) => p.handle === m.sender.handle)) {
      this.thread.participants = [...(this.thread.participants || []), m.sender];
      this.renderPresence();
    }
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
    if (!known) this.appendEntry({ kind: "r", id: run.id, t: entryTime(run.created_at) });
    else if (this.stick) this.scrollToEnd();
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
      if (this.stick) this.scrollToEnd();
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
    const t = this.thread;
    if (!t) return "";
    const bots = (t.participants || []).filter((p) => p.kind === "bot").map((p) => p.handle);
    const target = t.default_bot || (bots.length === 1 ? bots[0] : "chief_of_staff");
    return `To @${target} (default) · Enter to send, Shift+Enter for a new line`;
  }

  async send(text) {
    try {
      const result = await api.postMessage(this.threadId, { content: text, from: store.actor });
      if (result && result.message) this.onMessage(result.message);
      this.scrollToEnd(true);
      if (result && result.held && result.held.length) toast(`Hand-off held for ${result.held.map((x) => `@${x}`).join(", ")}`);
    } catch (error) {
      toast(`Not sent: ${describeError(error)}`, "error");
      throw error;
    }
  }

  async ack() {
    if (document.visibilityState !== "visible" || this.disposed) return;
    try {
      await api.ackThread(store.actor, this.threadId);
    } catch {
      /* read state is best effort */
    }
  }
}

export { statusLabel, OPEN_STATUSES };
