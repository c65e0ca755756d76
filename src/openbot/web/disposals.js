// Dropped triggers (a sub-view of Activity): mail a bot's mailbox admitted and then dropped without
// a run — shed because the mailbox was full, demoted to context because it waited too long,
// collapsed into one run after a restart, given up after failed attempts. "Why was my message
// dropped?" is answered here, filtered by bot, thread and reason (kept in the URL). Live: every
// drop writes an activity row (`disposal.<reason>`), which reloads the list.
//   #/disposals[?bot=<handle>&thread_id=<id>&reason=<reason>]

import { h, fill, clear, timeEl, absTime, debounce } from "/web/dom.js";
import { request, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";

const REASONS = ["shed", "stale", "collapsed", "attempts_exhausted", "cancelled", "bot_disabled", "thread_deleted"];
const LABEL = {
  shed: "Shed",
  stale: "Too old",
  collapsed: "Collapsed",
  attempts_exhausted: "Gave up",
  cancelled: "Cancelled",
  bot_disabled: "Bot disabled",
  thread_deleted: "Thread deleted",
};
// Collapsed triggers were answered (in one run): good news. The others never got an answer.
const PILL = { collapsed: "state-running", stale: "state-waiting_human" };

function seconds(s) {
  if (s == null) return "";
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// One sentence a person can read: what happened to these messages, and the numbers behind it.
export function explain(d) {
  const n = plural(d.message_ids.length, "message");
  switch (d.reason) {
    case "shed":
      return `@${d.bot}'s mailbox was full (${d.queue_depth} queued, limit ${d.bound}): ${n} dropped, oldest first.`;
    case "stale":
      return `${n} waited ${seconds(d.trigger_age_s)} for @${d.bot}, longer than ${seconds(d.bound)}: kept as context, not answered.`;
    case "collapsed":
      return `${plural(d.collapsed_count || d.message_ids.length, "message")} waiting after a restart were answered together in one run.`;
    case "attempts_exhausted":
      return `@${d.bot} gave up on ${n} after ${d.bound} attempts (each run was interrupted).`;
    case "bot_disabled":
      return `The bot was deleted: ${n} it had not answered dropped.`;
    case "thread_deleted":
      return `The thread was deleted: ${n} dropped for @${d.bot}.`;
    default:
      return `${n} for @${d.bot} cancelled.`;
  }
}

function query(filters) {
  const s = new URLSearchParams(Object.entries(filters).filter(([, v]) => v)).toString();
  return s ? `?${s}` : "";
}

export function mount(container, parts, params) {
  const filters = { bot: params.bot || "", thread_id: params.thread_id || "", reason: params.reason || "" };
  const rows = h("tbody");
  const status = h("span.muted.small", { role: "status" });
  const botSel = h("select", { id: "disposals-bot" });
  const threadSel = h("select", { id: "disposals-thread" });
  const reasonSel = h(
    "select",
    { id: "disposals-reason" },
    h("option", { value: "" }, "Any reason"),
    REASONS.map((r) => h("option", { value: r }, LABEL[r])),
  );
  container.append(
    h(
      "section.page.disposals",
      { "aria-labelledby": "disposals-title" },
      h(
        "div.page-head",
        h("h1", { id: "disposals-title" }, "Dropped triggers"),
        status,
        h("span.spacer"),
        h("a.small", { href: "#/activity" }, "Activity timeline"),
      ),
      h(
        "p.muted.small",
        "Messages a bot was asked to answer and never did: its mailbox was full, the message waited too long in a channel, or its runs kept failing. Every drop is listed here.",
      ),
      h(
        "form.filters",
        { "aria-label": "Filters", onsubmit: (e) => e.preventDefault() },
        h("div.filter", h("label", { for: "disposals-bot" }, "Bot"), botSel),
        h("div.filter", h("label", { for: "disposals-thread" }, "Thread"), threadSel),
        h("div.filter", h("label", { for: "disposals-reason" }, "Reason"), reasonSel),
      ),
      h(
        "div.table-wrap",
        h(
          "table.activity-table.disposal-table",
          h("caption.visually-hidden", "Dropped triggers, newest first"),
          h("thead", h("tr", ["Time", "Bot", "Reason", "What happened", "Thread"].map((c) => h("th", { scope: "col" }, c)))),
          rows,
        ),
      ),
    ),
  );

  function fillSelects() {
    const bots = [...store.actors.values()].filter((a) => a.kind === "bot").sort((a, b) => a.handle.localeCompare(b.handle));
    fill(botSel, h("option", { value: "" }, "All bots"), bots.map((a) => h("option", { value: a.handle }, `@${a.handle}`)));
    if (filters.bot && !bots.some((a) => a.handle === filters.bot)) botSel.append(h("option", { value: filters.bot }, `@${filters.bot}`));
    botSel.value = filters.bot;
    const threads = [...store.threads.values()].sort((a, b) => (a.title || "").localeCompare(b.title || ""));
    fill(threadSel, h("option", { value: "" }, "All threads"), threads.map((t) => h("option", { value: t.id }, t.title || t.id)));
    if (filters.thread_id && !store.threads.has(filters.thread_id)) threadSel.append(h("option", { value: filters.thread_id }, filters.thread_id));
    threadSel.value = filters.thread_id;
  }

  function row(d) {
    const thread = store.threads.get(d.thread_id);
    return h(
      "tr",
      { "data-disposal": d.id, "data-reason": d.reason },
      h("td.nowrap", timeEl(d.created_at, absTime)),
      h("td", `@${d.bot}`),
      h("td", h(`span.state-pill.${PILL[d.reason] || "state-disabled"}`, LABEL[d.reason] || d.reason)),
      h("td.summary", explain(d)),
      h("td", thread ? h("a", { href: `#/t/${encodeURIComponent(d.thread_id)}` }, thread.title || d.thread_id) : h("span.muted", "(deleted)")),
    );
  }

  let seq = 0;
  async function load() {
    const mine = ++seq;
    try {
      const page = await request("GET", `/disposals${query(filters)}`);
      if (mine !== seq) return;
      clear(rows);
      if (!page.items.length) rows.append(h("tr", h("td.empty", { colSpan: 5 }, "Nothing was dropped.")));
      for (const d of page.items) rows.append(row(d));
      status.textContent = page.items.length ? plural(page.items.length, "drop") : "";
    } catch (error) {
      status.textContent = `Could not load: ${describeError(error)}`;
    }
  }

  function apply() {
    filters.bot = botSel.value;
    filters.thread_id = threadSel.value;
    filters.reason = reasonSel.value;
    history.replaceState(null, "", `#/disposals${query(filters)}`);
    load();
  }
  for (const el of [botSel, threadSel, reasonSel]) el.addEventListener("change", apply);
  reasonSel.value = filters.reason;
  fillSelects();
  const reload = debounce(load, 300);
  const offs = [
    live.on("activity.created", (r) => {
      if (r && String(r.event || "").startsWith("disposal.")) reload();
    }),
    live.on("resync", reload),
    store.on("actors", fillSelects),
    store.on("threads", fillSelects),
  ];
  const ready = load();
  const unmount = () => offs.forEach((off) => off());
  unmount.ready = ready;
  return unmount;
}
