// Activity: the diagnostic timeline, newest first, with filters (thread, actor, run, level,
// event) kept in the URL, and a live tail fed by `activity.created`.

import { h, fill, clear, json, timeEl, absTime, debounce, nextId } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";

const LIMIT = 500;
const MAX_ROWS = 2000;
const LEVELS = ["debug", "info", "warning", "error"];
const FILTERS = ["thread_id", "actor", "run_id", "level", "event"];

export function mount(container, parts, params) {
  const view = new ActivityView(container, params);
  const offs = [
    live.on("activity.created", (row) => view.addLive(row)),
    ...["message.created", "run.updated", "inbox.updated", "thread.updated", "bot.updated"].map((t) => live.on(t, view.catchUp)),
    live.on("resync", (info) => {
      if (info && info.reason !== "connected") view.load();
    }),
    store.on("threads", () => view.fillSelects()),
    store.on("actors", () => view.fillSelects()),
  ];
  view.syncInputs();
  view.load();
  return () => offs.forEach((off) => off());
}

class ActivityView {
  constructor(container, params) {
    this.filters = Object.fromEntries(FILTERS.map((k) => [k, params[k] || ""]));
    this.rows = [];
    this.pending = []; // live rows held back while the tail is paused
    this.seq = 0;
    this.catchingUp = false;
    this.buildControls();
    const table = h(
      "table.activity-table",
      h("caption.visually-hidden", "Activity, newest first"),
      h("thead", h("tr", ["Time", "Level", "Event", "Summary", "Actor", "Thread", "Run"].map((c) => h("th", { scope: "col" }, c)))),
      this.tbody,
    );
    container.append(
      h(
        "section.page.activity",
        { "aria-labelledby": "activity-title" },
        h(
          "div.page-head",
          h("h1", { id: "activity-title" }, "Activity"),
          h("span.spacer"),
          h("a.small", { href: "#/disposals" }, "Dropped triggers"),
          h("a.small", { href: "#/webhooks" }, "Webhook deliveries"),
          h("label.check", this.tail, h("span", "Live tail")),
          this.status,
        ),
        h(
          "form.filters",
          { "aria-label": "Filters", onsubmit: (e) => e.preventDefault() },
          filterField("Thread", this.threadSel),
          filterField("Actor", this.actorSel),
          filterField("Run", this.runInput),
          filterField("Level", this.levelSel),
          filterField("Event", this.eventInput),
          h("div.filter-actions", this.clearButton),
        ),
        this.newRows,
        h("div.table-wrap", table),
      ),
    );
    this.wire();
    // activity.created is live-only; rows written while it was not flowing (or by a server that
    // does not emit it) are caught up with after_id whenever the durable stream shows a change.
    this.catchUp = debounce(() => this.catchUpNow(), 400);
  }

  buildControls() {
    const ids = Object.fromEntries(FILTERS.map((k) => [k, nextId(k)]));
    this.threadSel = h("select", { id: ids.thread_id });
    this.actorSel = h("select", { id: ids.actor });
    this.levelSel = h("select", { id: ids.level }, h("option", { value: "" }, "Any level"), LEVELS.map((l) => h("option", { value: l }, l)));
    this.runInput = h("input", { id: ids.run_id, type: "text", placeholder: "run id", spellcheck: false });
    this.eventInput = h("input", { id: ids.event, type: "text", placeholder: "run.completed, or run. for all", spellcheck: false });
    this.tail = h("input", { type: "checkbox", checked: true });
    this.status = h("span.muted.small", { role: "status" });
    this.newRows = h("button.small", { type: "button", hidden: true }, "");
    this.tbody = h("tbody");
    this.clearButton = h("button.small", { type: "button" }, "Clear filters");
  }

  wire() {
    const apply = () => this.applyFilters();
    const applySoon = debounce(apply, 300);
    for (const el of [this.threadSel, this.actorSel, this.levelSel]) el.addEventListener("change", apply);
    for (const el of [this.runInput, this.eventInput]) el.addEventListener("input", applySoon);
    this.clearButton.addEventListener("click", () => {
      for (const k of FILTERS) this.filters[k] = "";
      this.syncInputs();
      this.applyFilters();
    });
    this.newRows.addEventListener("click", () => this.flushPending());
    this.tail.addEventListener("change", () => {
      if (this.tail.checked) this.flushPending();
    });
  }

  fillSelects() {
    const { filters, threadSel, actorSel } = this;
    const threads = [...store.threads.values()].sort((a, b) => (a.title || "").localeCompare(b.title || ""));
    fill(threadSel, h("option", { value: "" }, "All threads"), threads.map((t) => h("option", { value: t.id }, t.title || t.id)));
    if (filters.thread_id && !store.threads.has(filters.thread_id)) threadSel.append(h("option", { value: filters.thread_id }, filters.thread_id));
    threadSel.value = filters.thread_id;
    const actors = [...store.actors.values()].sort((a, b) => a.handle.localeCompare(b.handle));
    fill(actorSel, h("option", { value: "" }, "All actors"), actors.map((a) => h("option", { value: a.handle }, `@${a.handle}`)));
    actorSel.value = filters.actor;
  }

  syncInputs() {
    this.fillSelects();
    this.runInput.value = this.filters.run_id;
    this.levelSel.value = this.filters.level;
    this.eventInput.value = this.filters.event;
  }

  matches(row) {
    const filters = this.filters;
    if (filters.thread_id && row.thread_id !== filters.thread_id) return false;
    if (filters.actor && row.actor !== filters.actor) return false;
    if (filters.run_id && row.run_id !== filters.run_id) return false;
    if (filters.level && row.level !== filters.level) return false;
    if (filters.event) {
      // Same rule as the server: a trailing "." matches a prefix ("run." → every run event).
      const ev = String(row.event || "");
      if (filters.event.endsWith(".") ? !ev.startsWith(filters.event) : ev !== filters.event) return false;
    }
    return true;
  }

  rowEl(row) {
    const filters = this.filters;
    const detail = row.detail && Object.keys(row.detail).length ? row.detail : null;
    return h(
      "tr",
      { class: `level-${row.level || "info"}`, dataset: { id: row.id } },
      h("td.nowrap", timeEl(row.created_at, (iso) => absTime(iso))),
      h("td", h("span.level", { class: `level-pill level-${row.level}` }, row.level || "")),
      h("td", h("code", row.event || "")),
      h(
        "td.summary",
        detail ? h("details", h("summary", row.summary || ""), h("pre", json(detail))) : row.summary || "",
      ),
      h("td", row.actor ? h("a", { href: link({ ...filters, actor: row.actor }) }, `@${row.actor}`) : ""),
      h("td", row.thread_id ? h("a", { href: `#/t/${encodeURIComponent(row.thread_id)}` }, store.threadTitle(row.thread_id)) : ""),
      h("td", row.run_id ? h("a", { href: link({ ...filters, run_id: row.run_id }), title: row.run_id }, h("code", shortId(row.run_id))) : ""),
    );
  }

  render() {
    clear(this.tbody);
    if (!this.rows.length) {
      this.tbody.append(h("tr", h("td.empty", { colSpan: 7 }, "No activity matches these filters.")));
      return;
    }
    const frag = document.createDocumentFragment();
    for (const row of this.rows) frag.append(this.rowEl(row));
    this.tbody.append(frag);
  }

  async load() {
    const mine = ++this.seq;
    this.status.textContent = "Loading…";
    try {
      // Without after_id the server answers the newest `limit` rows (oldest first).
      const all = await api.activity({ ...this.filters, limit: LIMIT });
      if (mine !== this.seq) return;
      const byId = new Map(all.map((r) => [String(r.id), r]));
      this.rows = [...byId.values()].sort((a, b) => Number(b.id) - Number(a.id) || (b.created_at || "").localeCompare(a.created_at || ""));
      this.pending = [];
      this.newRows.hidden = true;
      this.status.textContent = `${this.rows.length} row${this.rows.length === 1 ? "" : "s"}`;
      this.render();
    } catch (error) {
      if (mine === this.seq) this.status.textContent = `Could not load: ${describeError(error)}`;
    }
  }

  applyFilters() {
    const filters = this.filters;
    filters.thread_id = this.threadSel.value;
    filters.actor = this.actorSel.value;
    filters.run_id = this.runInput.value.trim();
    filters.level = this.levelSel.value;
    filters.event = this.eventInput.value.trim();
    history.replaceState(null, "", link(filters));
    this.load();
  }

  flushPending() {
    this.rows = this.pending.concat(this.rows).slice(0, MAX_ROWS);
    this.pending = [];
    this.newRows.hidden = true;
    this.status.textContent = `${this.rows.length} rows`;
    this.render();
  }

  addLive(row) {
    const known = (r) => String(r.id) === String(row.id);
    if (!row || !this.matches(row) || this.rows.some(known) || this.pending.some(known)) return;
    if (this.tail.checked) {
      this.rows.unshift(row);
      if (this.rows.length > MAX_ROWS) this.rows.pop();
      if (this.tbody.querySelector("td.empty")) this.render();
      else this.tbody.insertBefore(this.rowEl(row), this.tbody.firstChild);
      this.status.textContent = `${this.rows.length} rows`;
    } else {
      this.pending.unshift(row);
      this.newRows.hidden = false;
      this.newRows.textContent = `Show ${this.pending.length} new row${this.pending.length === 1 ? "" : "s"}`;
    }
  }

  async catchUpNow() {
    if (this.catchingUp) return;
    this.catchingUp = true;
    try {
      const newest = [...this.rows, ...this.pending].reduce((m, r) => Math.max(m, Number(r.id) || 0), 0);
      const fresh = await api.activity({ ...this.filters, after_id: newest, limit: LIMIT });
      for (const row of fresh) this.addLive(row);
    } catch {
      /* the next change retries */
    } finally {
      this.catchingUp = false;
    }
  }
}

function filterField(label, control) {
  return h("div.filter", h("label", { for: control.id }, label), control);
}

function link(filters) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v) p.set(k, v);
  const s = p.toString();
  return `#/activity${s ? `?${s}` : ""}`;
}

function shortId(id) {
  const s = String(id);
  return s.length > 10 ? `${s.slice(0, 4)}…${s.slice(-4)}` : s;
}
