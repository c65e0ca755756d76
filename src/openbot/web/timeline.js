// A thread's timeline: messages and run cards in one scrolling list.
//
// Rendering is windowed from the bottom: the newest WINDOW entries are rendered first and
// earlier ones are rendered in pages when the reader scrolls up (or jumps to a trigger), so a
// 2,000-message thread paints as fast as a short one. The list sticks to the bottom while the
// reader is there; otherwise a "New messages" button appears.

import { h, clear, parseTime } from "/web/dom.js";

const WINDOW = 80;
const PAGE = 120;

export function entryTime(iso) {
  const d = parseTime(iso);
  return d ? d.getTime() : 0;
}

/**
 * One timeline: messages in server order; a run's card sits right below its reply (the first
 * message it posted) or, for a run without a reply yet, where it started.
 * messages, runs: Maps by id. Returns the entries ([{kind: "m" | "r", id, t}], oldest first) and
 * the ids of the runs whose reply is among the messages.
 */
export function buildEntries(messages, runs) {
  const replied = new Map(); // reply message id → [run ids]
  const replyOf = new Set();
  for (const m of messages.values()) {
    if (m.run_id && runs.has(m.run_id) && !replyOf.has(m.run_id)) {
      replyOf.add(m.run_id);
      replied.set(m.id, [...(replied.get(m.id) || []), m.run_id]);
    }
  }
  const loose = [...runs.values()]
    .filter((r) => !replyOf.has(r.id))
    .map((r) => ({ kind: "r", id: r.id, t: entryTime(r.created_at) }))
    .sort((a, b) => a.t - b.t);
  const entries = [];
  let next = 0;
  for (const m of messages.values()) {
    const t = entryTime(m.created_at);
    while (next < loose.length && loose[next].t < t) entries.push(loose[next++]);
    entries.push({ kind: "m", id: m.id, t });
    for (const runId of replied.get(m.id) || []) entries.push({ kind: "r", id: runId, t });
  }
  while (next < loose.length) entries.push(loose[next++]);
  return { entries, replied: replyOf };
}

export class Timeline {
  /** renderEntry(entry) → the element of a message or a run card. */
  constructor(renderEntry) {
    this.renderEntry = renderEntry;
    this.entries = []; // [{kind: "m" | "r", id, t}] oldest first
    this.renderedFrom = 0; // index into entries of the first rendered entry
    this.rendered = new Map(); // entry key → element
    this.ready = false;
    this.stick = true;

    this.earlier = h("button.load-earlier", { type: "button", hidden: true, onclick: () => this.renderEarlier() }, "Show earlier messages");
    this.list = h("div.timeline-items");
    this.timeline = h(
      "div.timeline",
      { role: "log", "aria-label": "Messages", "aria-live": "polite", "aria-relevant": "additions", tabindex: "0" },
      this.earlier,
      this.list,
    );
    this.jump = h("button.jump-latest", { type: "button", hidden: true, onclick: () => this.scrollToEnd(true) }, "↓ New messages");
    this.el = h("div.timeline-wrap", this.timeline, this.jump);

    this.timeline.addEventListener("scroll", () => {
      const gap = this.timeline.scrollHeight - this.timeline.scrollTop - this.timeline.clientHeight;
      this.stick = gap < 60;
      if (this.stick) this.jump.hidden = true;
    });
    this.observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting) && this.ready) this.renderEarlier();
      },
      { root: this.timeline, rootMargin: "200px 0px 0px 0px" },
    );
    this.observer.observe(this.earlier);
  }

  teardown() {
    this.observer.disconnect();
  }

  lastMessageId() {
    return this.entries.filter((e) => e.kind === "m").map((e) => e.id).pop();
  }

  renderOne(entry) {
    const el = this.renderEntry(entry);
    this.rendered.set(`${entry.kind}:${entry.id}`, el);
    return el;
  }

  /** Show these entries: the newest WINDOW of them, scrolled to the end. */
  renderInitial(entries) {
    this.entries = entries;
    clear(this.list);
    this.rendered.clear();
    this.renderedFrom = Math.max(0, this.entries.length - WINDOW);
    const frag = document.createDocumentFragment();
    for (let i = this.renderedFrom; i < this.entries.length; i += 1) frag.appendChild(this.renderOne(this.entries[i]));
    if (!this.entries.length) frag.appendChild(h("div.empty.thread-empty", "No messages yet. Say hello — mention a bot with @ (the line under the box says who a message reaches)."));
    this.list.appendChild(frag);
    this.updateEarlier();
    this.scrollToEnd(true);
    this.ready = true;
  }

  renderEarlier(count = PAGE) {
    if (this.renderedFrom === 0) return;
    const from = Math.max(0, this.renderedFrom - count);
    const frag = document.createDocumentFragment();
    for (let i = from; i < this.renderedFrom; i += 1) frag.appendChild(this.renderOne(this.entries[i]));
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

  append(entry) {
    this.list.querySelector(".thread-empty")?.remove();
    this.entries.push(entry);
    this.list.appendChild(this.renderOne(entry));
    if (this.stick) this.scrollToEnd();
    else this.jump.hidden = false;
  }

  /** Move an entry (already rendered as el) to the end of the timeline. */
  moveToEnd(kind, id, el) {
    const at = this.entries.findIndex((e) => e.kind === kind && e.id === id);
    if (at >= 0) {
      const [entry] = this.entries.splice(at, 1);
      this.entries.push(entry);
      if (at < this.renderedFrom) this.renderedFrom -= 1;
    }
    this.list.appendChild(el);
  }

  /** Something grew at the end: follow it if the reader is there. */
  follow() {
    if (this.stick) this.scrollToEnd();
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
}
