// Drafts: outgoing messages bots staged with save_draft. Only a person sends one (edited if they
// like) or rejects it with a reason the bot reads in its thread. The inbox's Needs action tab shows
// the pending ones too (draftCard).
//   #/drafts (pending)   #/drafts/sent   #/drafts/rejected

import { h, clear, debounce, timeEl, nextId, toast } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";

const TABS = [
  { id: "pending", label: "Pending", path: "#/drafts" },
  { id: "sent", label: "Sent", path: "#/drafts/sent" },
  { id: "rejected", label: "Rejected", path: "#/drafts/rejected" },
];

export function mount(container, parts) {
  let tab = TABS.some((t) => t.id === parts[1]) ? parts[1] : "pending";
  const list = h("ul.draft-list", { "aria-label": "Drafts" });
  const status = h("span.muted.small", { role: "status" });
  const tabs = TABS.map((t) => h("a.tab", { role: "tab", href: t.path, dataset: { tab: t.id } }, t.label));
  container.append(
    h(
      "section.page.drafts",
      { "aria-labelledby": "drafts-title" },
      h("div.page-head", h("h1", { id: "drafts-title" }, "Drafts"), status),
      h("p.muted.small", "Messages bots prepared for someone outside the team. Nothing is sent until a person sends it."),
      h("div.tabs", { role: "tablist", "aria-label": "Draft status" }, tabs),
      list,
    ),
  );

  let seq = 0; // tabs switch faster than answers come back: only the newest load may draw
  async function load() {
    const mine = ++seq;
    for (const a of tabs) a.setAttribute("aria-selected", a.dataset.tab === tab ? "true" : "false");
    let items;
    try {
      items = await api.drafts({ status: tab });
      if (mine !== seq) return;
      status.textContent = "";
    } catch (error) {
      if (mine !== seq) return;
      status.textContent = `Could not load: ${describeError(error)}`;
      return;
    }
    clear(list);
    if (!items.length) list.append(h("li.empty", tab === "pending" ? "No draft waits for you." : `No ${tab} drafts.`));
    list.append(...draftCards(items.reverse(), cards, load));
  }

  const cards = new Map();

  const offs = [live.on("draft.updated", () => load()), live.on("resync", () => load())];
  const ready = load();
  const dispose = () => offs.forEach((off) => off());
  dispose.route = (newParts) => {
    tab = TABS.some((t) => t.id === newParts[1]) ? newParts[1] : "pending";
    load();
  };
  dispose.ready = ready;
  return dispose;
}

/** Keep the nav badge on the number of drafts waiting for a person (loads on every (re)connect). */
export function watchDraftsBadge(badge) {
  const refresh = debounce(async () => {
    let pending;
    try {
      pending = await api.drafts({ status: "pending" });
    } catch {
      return; // offline: the connection indicator says so
    }
    const label = `${pending.length} draft${pending.length === 1 ? "" : "s"} waiting to be sent or rejected`;
    badge.hidden = pending.length === 0;
    badge.textContent = String(pending.length);
    badge.setAttribute("aria-label", label);
    badge.title = label;
  }, 200);
  live.on("draft.updated", refresh);
  live.on("resync", refresh);
}

function target(draft) {
  const thread = draft.target.thread_id || draft.thread_id;
  return h(
    "span",
    draft.target.actor ? `to @${draft.target.actor} in ` : "in ",
    h("a", { href: `#/t/${encodeURIComponent(thread)}` }, store.threadTitle(thread)),
  );
}

/**
 * Cards for ``drafts``, reusing the ones in ``cache`` (draft id + status → element) so an edit or a
 * reason being typed survives a reload caused by another draft; cards of drafts gone are dropped.
 */
export function draftCards(drafts, cache, onDecided) {
  const keep = new Set(drafts.map((d) => `${d.id}:${d.status}`));
  for (const key of cache.keys()) if (!keep.has(key)) cache.delete(key);
  return drafts.map((d) => {
    const key = `${d.id}:${d.status}`;
    if (!cache.has(key)) cache.set(key, draftCard(d, onDecided));
    return cache.get(key);
  });
}

/** One draft: what it says and where it goes; pending ones can be edited, sent or rejected. */
export function draftCard(draft, onDecided) {
  const id = nextId("draft");
  const meta = h(
    "div.draft-meta",
    h("strong", { id: `${id}-title` }, draft.title),
    h("span.muted", " · by @", draft.bot, " "),
    target(draft),
    h("span.muted", " · "),
    timeEl(draft.created_at),
  );
  const item = h("li.draft.card", { dataset: { draftId: draft.id, status: draft.status }, "aria-labelledby": `${id}-title` }, meta);
  if (draft.status !== "pending") {
    item.append(h("pre.draft-content", draft.content));
    const who = draft.decided_by ? `@${draft.decided_by}` : "someone";
    const verdict = draft.status === "sent" ? `Sent by ${who}` : `Rejected by ${who}${draft.reason ? `: ${draft.reason}` : ""}`;
    item.append(h("p.draft-verdict.muted.small", verdict, " ", timeEl(draft.decided_at)));
    return item;
  }
  const content = h("textarea.draft-content", { id: `${id}-content`, rows: 5 }, draft.content);
  content.value = draft.content;
  const reason = h("input", { id: `${id}-reason`, type: "text", placeholder: "Why not? The bot will read it." });
  const error = h("p.form-error", { role: "alert", hidden: true });
  const decide = async (send) => {
    error.hidden = true;
    try {
      if (send) await api.approveDraft(draft.id, content.value !== draft.content ? { content: content.value } : {});
      else await api.rejectDraft(draft.id, reason.value.trim() ? { reason: reason.value.trim() } : {});
      toast(send ? `Sent “${draft.title}”` : `Rejected “${draft.title}”`);
      if (onDecided) onDecided();
    } catch (err) {
      error.textContent = describeError(err);
      error.hidden = false;
    }
  };
  item.append(
    h("label.small", { for: `${id}-content` }, "Message"),
    content,
    h(
      "div.row.draft-actions",
      h("button.primary", { type: "button", onclick: () => decide(true) }, "Send"),
      h("label.visually-hidden", { for: `${id}-reason` }, "Reason"),
      reason,
      h("button", { type: "button", onclick: () => decide(false) }, "Reject"),
    ),
    error,
  );
  return item;
}
