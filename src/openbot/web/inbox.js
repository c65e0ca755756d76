// The inbox of the acting human: All (threads by last activity), Unread (threads with queued
// message items) and Needs action (open questions and approvals across every thread, oldest
// first, answerable in place).

import { h, clear, debounce, timeEl, toast } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";
import { interruptCard } from "/web/interrupts.js";
import { threadRow } from "/web/threads.js";
import { draftCards } from "/web/drafts.js";

const TABS = [
  { id: "all", label: "All", path: "#/inbox" },
  { id: "unread", label: "Unread", path: "#/inbox/unread", title: "Threads with unread messages (the Inbox badge counts the same)" },
  { id: "action", label: "Needs action", path: "#/inbox/action" },
];

export function mount(container, parts) {
  const view = new InboxView(container, parts[1] || "all");
  const reloadAction = debounce(() => view.loadAction().catch(() => {}), 200);
  const offs = [
    store.on("threads", () => view.onThreads()),
    store.on("actor", () => {
      view.render();
      reloadAction();
    }),
    live.on("inbox.updated", reloadAction),
    live.on("draft.updated", reloadAction),
    live.on("run.updated", (run) => {
      if (run && (run.status === "waiting_human" || view.actionRuns.some((r) => r.id === run.id))) reloadAction();
    }),
    live.on("resync", reloadAction),
  ];
  view.render();
  view.loadAction().catch((error) => toast(`Could not load open questions: ${describeError(error)}`, "error"));

  const dispose = () => offs.forEach((off) => off());
  dispose.route = (newParts) => {
    view.tab = newParts[1] || "all";
    view.render();
  };
  return dispose;
}

class InboxView {
  constructor(container, tab) {
    this.tab = tab;
    this.tabButtons = new Map();
    this.counts = new Map();
    this.actionRuns = [];
    this.actionDrafts = []; // pending drafts: a person sends or rejects them
    this.draftEls = new Map(); // their cards, reused so a half-typed edit or reason survives updates
    this.loadingAction = false;
    this.firstLoad = true;
    this.actionEls = new Map(); // run id → element, reused so a half-typed answer survives updates
    this.panel = h("div.inbox-panel", { role: "tabpanel", id: "inbox-panel", tabindex: "0" });
    this.actorNote = h("span.muted");
    this.markAll = h("button.small", { type: "button", onclick: () => this.markAllRead() }, "Mark all read");
    container.append(
      h(
        "section.page.inbox",
        { "aria-labelledby": "inbox-title" },
        h("div.page-head", h("h1", { id: "inbox-title" }, "Inbox"), this.actorNote, h("span.spacer"), this.markAll),
        this.tablist(),
        this.panel,
      ),
    );
  }

  tablist() {
    const tablist = h(
      "div.tabs",
      { role: "tablist", "aria-label": "Inbox views" },
      TABS.map((t) => {
        const count = h("span.count");
        this.counts.set(t.id, count);
        const button = h(
          "a.tab",
          { role: "tab", href: t.path, id: `tab-${t.id}`, title: t.title, "aria-controls": "inbox-panel", dataset: { tab: t.id } },
          t.label,
          count,
        );
        this.tabButtons.set(t.id, button);
        return button;
      }),
    );
    tablist.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      const ids = TABS.map((t) => t.id);
      const next = ids[(ids.indexOf(this.tab) + (event.key === "ArrowRight" ? 1 : ids.length - 1)) % ids.length];
      location.hash = TABS.find((t) => t.id === next).path;
      setTimeout(() => this.tabButtons.get(next).focus(), 0);
    });
    return tablist;
  }

  selectTab() {
    for (const [id, button] of this.tabButtons) {
      button.setAttribute("aria-selected", id === this.tab ? "true" : "false");
      button.tabIndex = id === this.tab ? 0 : -1;
    }
    this.panel.setAttribute("aria-labelledby", `tab-${this.tab}`);
  }

  renderCounts() {
    const all = [...store.threads.values()];
    const unread = all.filter((t) => t.unread > 0).length;
    this.counts.get("all").textContent = all.length ? ` ${all.length}` : "";
    this.counts.get("unread").textContent = unread ? ` ${unread}` : "";
    const action = this.actionRuns.length + this.actionDrafts.length;
    this.counts.get("action").textContent = action ? ` ${action}` : "";
    this.markAll.hidden = unread === 0;
    this.actorNote.textContent = `for @${store.actor}`;
  }

  render() {
    this.selectTab();
    this.renderCounts();
    clear(this.panel);
    if (this.tab === "action") return this.renderAction();
    const list = threadsSorted().filter((t) => this.tab !== "unread" || t.unread > 0);
    if (!list.length) {
      const unread = this.tab === "unread";
      this.panel.append(
        h(
          "div.empty",
          unread ? "You're all caught up." : "No threads yet. ",
          unread ? null : h("a", { href: "#/threads?new=1" }, "Start one"),
        ),
      );
      return;
    }
    this.panel.append(h("ul.thread-list", list.map((t) => threadRow(t))));
  }

  renderAction() {
    if (this.loadingAction && !this.actionRuns.length) {
      this.panel.append(h("p.muted", "Loading…"));
      return;
    }
    if (!this.actionRuns.length && !this.actionDrafts.length) {
      this.panel.append(h("div.empty", "Nothing needs you right now."));
      return;
    }
    if (this.actionDrafts.length) {
      const reload = () => this.loadAction().catch(() => {});
      this.panel.append(
        h("h2.small", { id: "action-drafts" }, "Drafts to send or reject"),
        h("ul.draft-list", { "aria-labelledby": "action-drafts" }, draftCards(this.actionDrafts, this.draftEls, reload)),
      );
    }
    this.panel.append(
      h(
        "ul.action-list",
        this.actionRuns.map((run) => {
          if (!this.actionEls.has(run.id)) this.actionEls.set(run.id, actionItem(run));
          return this.actionEls.get(run.id);
        }),
      ),
    );
  }

  onThreads() {
    if (this.tab !== "action") return this.render();
    this.renderCounts();
    for (const link of this.panel.querySelectorAll(".action-thread")) link.textContent = store.threadTitle(link.dataset.threadId);
  }

  async loadAction() {
    // Loads overlap when events arrive close together; an older answer must not bring back a
    // question a newer one already saw answered, so only the newest load may change anything.
    const mine = (this.actionSeq = (this.actionSeq || 0) + 1);
    this.loadingAction = true;
    try {
      const [{ runs, asked }, drafts] = await Promise.all([waitingRuns(), api.drafts({ status: "pending" }).catch(() => [])]);
      if (mine !== this.actionSeq) return;
      const previous = [...this.actionRuns, ...this.actionDrafts].map((r) => r.id).join(",");
      this.actionDrafts = drafts;
      this.actionRuns = [...runs.values()]
        .filter((r) => r.status === "waiting_human" && r.interrupt)
        .sort((a, b) => (asked.get(a.id) || a.created_at || "").localeCompare(asked.get(b.id) || b.created_at || ""));
      for (const id of this.actionEls.keys()) if (!runs.has(id)) this.actionEls.delete(id);
      if (previous === [...this.actionRuns, ...this.actionDrafts].map((r) => r.id).join(",") && !this.firstLoad) {
        this.renderCounts();
        return;
      }
    } finally {
      if (mine === this.actionSeq) this.loadingAction = false;
    }
    if (mine !== this.actionSeq) return;
    this.firstLoad = false;
    if (this.tab === "action") this.render();
    else this.renderCounts();
  }

  async markAllRead() {
    const unread = [...store.threads.values()].filter((t) => t.unread > 0);
    try {
      await Promise.all(unread.map((t) => api.ackThread(store.actor, t.id)));
      await store.refreshThreads();
    } catch (error) {
      toast(`Could not mark read: ${describeError(error)}`, "error");
    }
  }
}

function threadsSorted() {
  return [...store.threads.values()].sort((a, b) => (b.last_message_at || b.created_at || "").localeCompare(a.last_message_at || a.created_at || ""));
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

/**
 * The runs waiting for the acting human: asked of them (a queued question in their inbox) or
 * waiting in a thread they take part in. → { runs: run id → run, asked: run id → when asked }
 */
async function waitingRuns() {
  await store.load(); // thread titles and participants
  const actor = store.actor;
  const [items, waiting] = await Promise.all([
    api.inbox(actor, { status: "queued", kind: "question" }).catch(() => []),
    api.runs({ status: "waiting_human" }).catch(() => []),
  ]);
  const asked = new Map();
  for (const item of items) if (item.kind === "question" && item.run_id) asked.set(item.run_id, item.created_at);
  const participantThreads = new Set(
    [...store.threads.values()].filter((t) => (t.participants || []).some((p) => p.handle === actor)).map((t) => t.id),
  );
  const runs = new Map();
  for (const run of waiting) {
    if (asked.has(run.id) || participantThreads.has(run.thread_id)) runs.set(run.id, run);
  }
  const missing = [...asked.keys()].filter((id) => !runs.has(id));
  const fetched = await Promise.all(missing.map((id) => api.run(id).catch(() => null)));
  for (const run of fetched) if (run) runs.set(run.id, run);
  return { runs, asked };
}
