// The inbox of the acting human: All (threads by last activity), Unread (threads with queued
// message items) and Needs action (open questions and approvals across every thread, oldest
// first, answerable in place).

import { h, clear, debounce, timeEl, toast } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";
import { interruptCard } from "/web/runs.js";
import { threadRow } from "/web/threads.js";

const TABS = [
  { id: "all", label: "All", path: "#/inbox" },
  { id: "unread", label: "Unread", path: "#/inbox/unread" },
  { id: "action", label: "Needs action", path: "#/inbox/action" },
];

export function mount(container, parts) {
  let tab = parts[1] || "all";
  const tabButtons = new Map();
  const counts = new Map();
  const panel = h("div.inbox-panel", { role: "tabpanel", id: "inbox-panel", tabindex: "0" });
  const tablist = h(
    "div.tabs",
    { role: "tablist", "aria-label": "Inbox views" },
    TABS.map((t) => {
      const count = h("span.count");
      counts.set(t.id, count);
      const button = h(
        "a.tab",
        { role: "tab", href: t.path, id: `tab-${t.id}`, "aria-controls": "inbox-panel", dataset: { tab: t.id } },
        t.label,
        count,
      );
      tabButtons.set(t.id, button);
      return button;
    }),
  );
  tablist.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
    const ids = TABS.map((t) => t.id);
    const next = ids[(ids.indexOf(tab) + (event.key === "ArrowRight" ? 1 : ids.length - 1)) % ids.length];
    location.hash = TABS.find((t) => t.id === next).path;
    setTimeout(() => tabButtons.get(next).focus(), 0);
  });
  const actorNote = h("span.muted");
  const markAll = h("button.small", { type: "button", onclick: () => markAllRead() }, "Mark all read");
  container.append(
    h(
      "section.page.inbox",
      { "aria-labelledby": "inbox-title" },
      h("div.page-head", h("h1", { id: "inbox-title" }, "Inbox"), actorNote, h("span.spacer"), markAll),
      tablist,
      panel,
    ),
  );

  let actionRuns = [];
  let loadingAction = false;
  let firstLoad = true;
  const actionEls = new Map(); // run id → element, reused so a half-typed answer survives updates

  function selectTab() {
    for (const [id, button] of tabButtons) {
      button.setAttribute("aria-selected", id === tab ? "true" : "false");
      button.tabIndex = id === tab ? 0 : -1;
    }
    panel.setAttribute("aria-labelledby", `tab-${tab}`);
  }

  function threadsSorted() {
    return [...store.threads.values()].sort((a, b) => (b.last_message_at || b.created_at || "").localeCompare(a.last_message_at || a.created_at || ""));
  }

  function renderCounts() {
    const all = [...store.threads.values()];
    const unread = all.filter((t) => t.unread > 0).length;
    counts.get("all").textContent = all.length ? ` ${all.length}` : "";
    counts.get("unread").textContent = unread ? ` ${unread}` : "";
    counts.get("action").textContent = actionRuns.length ? ` ${actionRuns.length}` : "";
    markAll.hidden = unread === 0;
    actorNote.textContent = `for @${store.actor}`;
  }

  function render() {
    selectTab();
    renderCounts();
    clear(panel);
    if (tab === "action") return renderAction();
    const list = threadsSorted().filter((t) => tab !== "unread" || t.unread > 0);
    if (!list.length) {
      panel.append(
        h(
          "div.empty",
          tab === "unread" ? "You're all caught up." : "No threads yet. ",
          tab === "unread" ? null : h("a", { href: "#/threads?new=1" }, "Start one"),
        ),
      );
      return;
    }
    panel.append(h("ul.thread-list", list.map((t) => threadRow(t))));
  }

  function renderAction() {
    if (loadingAction && !actionRuns.length) {
      panel.append(h("p.muted", "Loading…"));
      return;
    }
    if (!actionRuns.length) {
      panel.append(h("div.empty", "Nothing needs you right now."));
      return;
    }
    panel.append(
      h(
        "ul.action-list",
        actionRuns.map((run) => {
          if (!actionEls.has(run.id)) actionEls.set(run.id, actionItem(run));
          return actionEls.get(run.id);
        }),
      ),
    );
  }

  function actionItem(run) {
    return h(
      "li.action-item",
      { dataset: { runId: run.id } },
      h(
        "div.action-meta",
        h("a.action-thread", { href: `#/t/${encodeURIComponent(run.thread_id)}`, dataset: { threadId: run.thread_id } }, store.threadTitle(run.thread_id)),
        h("span.muted", " · asked "),
        timeEl(run.started_at || run.created_at),
      ),
      interruptCard(run),
    );
  }

  async function loadAction() {
    loadingAction = true;
    try {
      await store.load(); // thread titles and participants
      const actor = store.actor;
      const [items, waiting] = await Promise.all([
        api.inbox(actor, { status: "queued", kind: "question" }).catch(() => []),
        api.runs({ status: "waiting_human" }).catch(() => []),
      ]);
      const runIds = new Map();
      for (const item of items) if (item.kind === "question" && item.run_id) runIds.set(item.run_id, item.created_at);
      const participantThreads = new Set(
        [...store.threads.values()].filter((t) => (t.participants || []).some((p) => p.handle === actor)).map((t) => t.id),
      );
      const byId = new Map();
      for (const run of waiting) {
        if (runIds.has(run.id) || participantThreads.has(run.thread_id)) byId.set(run.id, run);
      }
      const missing = [...runIds.keys()].filter((id) => !byId.has(id));
      const fetched = await Promise.all(missing.map((id) => api.run(id).catch(() => null)));
      for (const run of fetched) if (run) byId.set(run.id, run);
      const previous = actionRuns.map((r) => r.id).join(",");
      actionRuns = [...byId.values()]
        .filter((r) => r.status === "waiting_human" && r.interrupt)
        .sort((a, b) => (runIds.get(a.id) || a.created_at || "").localeCompare(runIds.get(b.id) || b.created_at || ""));
      for (const id of actionEls.keys()) if (!byId.has(id)) actionEls.delete(id);
      if (previous === actionRuns.map((r) => r.id).join(",") && !firstLoad) {
        renderCounts();
        return;
      }
    } finally {
      loadingAction = false;
    }
    firstLoad = false;
    if (tab === "action") render();
    else renderCounts();
  }

  async function markAllRead() {
    const unread = [...store.threads.values()].filter((t) => t.unread > 0);
    try {
      await Promise.all(unread.map((t) => api.ackThread(store.actor, t.id)));
      await store.refreshThreads();
    } catch (error) {
      toast(`Could not mark read: ${describeError(error)}`, "error");
    }
  }

  const reloadAction = debounce(() => loadAction().catch(() => {}), 200);
  const offs = [
    store.on("threads", () => {
      if (tab !== "action") return render();
      renderCounts();
      for (const link of panel.querySelectorAll(".action-thread")) link.textContent = store.threadTitle(link.dataset.threadId);
    }),
    store.on("actor", () => {
      render();
      reloadAction();
    }),
    live.on("inbox.updated", reloadAction),
    live.on("run.updated", (run) => {
      if (run && (run.status === "waiting_human" || actionRuns.some((r) => r.id === run.id))) reloadAction();
    }),
    live.on("resync", reloadAction),
  ];
  render();
  loadAction().catch((error) => toast(`Could not load open questions: ${describeError(error)}`, "error"));

  const dispose = () => offs.forEach((off) => off());
  dispose.route = (newParts) => {
    tab = newParts[1] || "all";
    render();
  };
  return dispose;
}
