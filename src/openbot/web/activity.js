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
  const filters = Object.fromEntries(FILTERS.map((k) => [k, params[k] || ""]));
  const ids = Object.fromEntries(FILTERS.map((k) => [k, nextId(k)]));
  const threadSel = h("select", { id: ids.thread_id });
  const actorSel = h("select", { id: ids.actor });
  const levelSel = h("select", { id: ids.level }, h("option", { value: "" }, "Any level"), LEVELS.map((l) => h("option", { value: l }, l)));
  const runInput = h("input", { id: ids.run_id, type: "text", placeholder: "run id", spellcheck: false });
  const eventInput = h("input", { id: ids.event, type: "text", placeholder: "run.completed, or run. for all", spellcheck: false });
  const tail = h("input", { type: "checkbox", checked: true });
  const status = h("span.muted.small", { role: "status" });
  const newRows = h("button.small", { type: "button", hidden: true }, "");
  const tbody = h("tbody");
  const table = h(
    "table.activity-table",
    h("caption.visually-hidden", "Activity, newest first"),
    h("thead", h("tr", ["Time", "Level", "Event", "Summary", "Actor", "Thread", "Run"].map((c) => h("th", { scope: "col" }, c)))),
    tbody,
  );
  const clearButton = h("button.small", { type: "button" }, "Clear filters");
  container.append(
    h(
      "section.page.activity",
      { "aria-labelledby": "activity-title" },
      h("div.page-head", h("h1", { id: "activity-title" }, "Activity"), h("span.spacer"), h("label.check", tail, h("span", "Live tail")), status),
      h(
        "form.filters",
        { "aria-label": "Filters", onsubmit: (e) => e.preventDefault() },
        filterField("Thread", threadSel),
        filterField("Actor", actorSel),
        filterField("Run", runInput),
        filterField("Level", levelSel),
        filterField("Event", eventInput),
        h("div.filter-actions", clearButton),
      ),
      newRows,
      h("div.table-wrap", table),
    ),
  );

  let rows = [];
  let pending = [];
  let seq = 0;

  function fillSelects() {
    const threads = [...store.threads.values()].sort((a, b) => (a.title || "").localeCompare(b.title || ""));
    fill(threadSel, h("option", { value: "" }, "All threads"), threads.map((t) => h("option", { value: t.id }, t.title || t.id)));
    if (filters.thread_id && !store.threads.has(filters.thread_id)) threadSel.append(h("option", { value: filters.thread_id }, filters.thread_id));
    threadSel.value = filters.thread_id;
    const actors = [...store.actors.values()].sort((a, b) => a.handle.localeCompare(b.handle));
    fill(actorSel, h("option", { value: "" }, "All actors"), actors.map((a) => h("option", { value: a.handle }, `@${a.handle}`)));
    actorSel.value = filters.actor;
  }

  function syncInputs() {
    fillSelects();
    runInput.value = filters.run_id;
    levelSel.value = filters.level;
    eventInput.value = filters.event;
  }

  function matches(row) {
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

  function rowEl(row) {
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

  function render() {
    clear(tbody);
    if (!rows.length) {
      tbody.append(h("tr", h("td.empty", { colSpan: 7 }, "No activity matches these filters.")));
      return;
    }
    const frag = document.createDocumentFragment();
    for (const row of rows) frag.append(rowEl(row));
    tbody.append(frag);
  }

  async function load() {
    const mine = ++seq;
    status.textContent = "Loading…";
    try {
      // Without after_id the server answers the newest `limit` rows (oldest first).
      const all = await api.activity({ ...filters, limit: LIMIT });
      if (mine !== seq) return;
      const byId = new Map(all.map((r) => [String(r.id), r]));
      rows = [...byId.values()].sort((a, b) => Number(b.id) - Number(a.id) || (b.created_at || "").localeCompare(a.created_at || ""));
      pending = [];
      newRows.hidden = true;
      status.textContent = `${rows.length} row${rows.length === 1 ? "" : "s"}`;
      render();
    } catch (error) {
      if (mine === seq) status.textContent = `Could not load: ${describeError(error)}`;
    }
  }

  function applyFilters() {
    filters.thread_id = threadSel.value;
    filters.actor = actorSel.value;
    filters.run_id = runInput.value.trim();
    filters.level = levelSel.value;
    filters.event = eventInput.value.trim();
    history.replaceState(null, "", link(filters));
    load();
  }
  const applySoon = debounce(applyFilters, 300);
  for (const el of [threadSel, actorSel, levelSel]) el.addEventListener("change", applyFilters);
  for (const el of [runInput, eventInput]) el.addEventListener("input", applySoon);
  clearButton.addEventListener("click", () => {
    for (const k of FILTERS) filters[k] = "";
    syncInputs();
    applyFilters();
  });

  function flushPending() {
    rows = pending.concat(rows).slice(0, MAX_ROWS);
    pending = [];
    newRows.hidden = true;
    status.textContent = `${rows.length} rows`;
    render();
  }
  newRows.addEventListener("click", flushPending);
  tail.addEventListener("change", () => {
    if (tail.checked) flushPending();
  });

  function addLive(row) {
    if (!row || !matches(row) || rows.some((r) => String(r.id) === String(row.id)) || pending.some((r) => String(r.id) === String(row.id))) return;
    if (tail.checked) {
      rows.unshift(row);
      if (rows.length > MAX_ROWS) rows.pop();
      if (tbody.querySelector("td.empty")) render();
      else tbody.insertBefore(rowEl(row), tbody.firstChild);
      status.textContent = `${rows.length} rows`;
    } else {
      pending.unshift(row);
      newRows.hidden = false;
      newRows.textContent = `Show ${pending.length} new row${pending.length === 1 ? "" : "s"}`;
    }
  }

  // activity.created is live-only; rows written while it was not flowing (or by a server that
  // does not emit it) are caught up with after_id whenever the durable stream shows a change.
  let catchingUp = false;
  const catchUp = debounce(async () => {
    if (catchingUp) return;
    catchingUp = true;
    try {
      const newest = [...rows, ...pending].reduce((m, r) => Math.max(m, Number(r.id) || 0), 0);
      const fresh = await api.activity({ ...filters, after_id: newest, limit: LIMIT });
      for (const row of fresh) addLive(row);
    } catch {
      /* the next change retries */
    } finally {
      catchingUp = false;
    }
  }, 400);

  const offs = [
    live.on("activity.created", addLive),
    ...["message.created", "run.updated", "inbox.updated", "thread.updated", "bot.updated"].map((t) => live.on(t, catchUp)),
    live.on("resync", (info) => {
      if (info && info.reason !== "connected") load();
    }),
    store.on("threads", fillSelects),
    store.on("actors", fillSelects),
  ];
  syncInputs();
  load();
  return () => offs.forEach((off) => off());
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
