// One message on a thread's timeline: a post by a bot, a human or a system (with its sender,
// hop count and highlighted @mentions), or a notice without a sender (hop limit reached,
// hand-off held, run failed, server restarted…).

import { h, timeEl, renderText, avatar } from "/web/dom.js";
import { store } from "/web/store.js";
import { seenToggle } from "/web/engagement.js";

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

export function messageEl(m) {
  if (!m.sender) return noticeEl(m);
  const sender = m.sender;
  const mine = sender.handle === store.actor;
  const seen = seenToggle(m.id);
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
        automationLink(m),
        timeEl(m.created_at),
        seen.button,
      ),
      h("div.msg-content", renderText(m.content, handleSet(m))),
      seen.panel,
    ),
  );
}

/** A message an automation posted links to it (why did this appear at 9:00?). */
function automationLink(m) {
  const id = m.metadata && m.metadata.kind === "automation" ? m.metadata.automation_id : null;
  if (!id) return null;
  return h("a.msg-hop.msg-automation", { href: `#/automations/${encodeURIComponent(id)}`, title: "Posted by an automation" }, "automation");
}

function noticeEl(m) {
  const kind = (m.metadata && m.metadata.kind) || "notice";
  return h(
    "div.notice",
    { id: `m-${m.id}`, class: `notice-${kind}`, role: "note", dataset: { messageId: m.id, kind } },
    h("span.notice-label", NOTICE_LABEL[kind] || kind.replace(/_/g, " ")),
    h("span.notice-text", renderText(m.content)),
    timeEl(m.created_at),
  );
}

let team = null; // the team's handles, rebuilt when the number of actors changes
let teamSize = 0;

/** Handles to highlight: the server-resolved mentions plus the team (null: highlight all). */
function handleSet(m) {
  if (!store.actors.size) return null; // team not loaded yet: trust the text
  if (!team || teamSize !== store.actors.size) {
    team = new Set(store.actors.keys());
    teamSize = store.actors.size;
  }
  if (!m.mentions || !m.mentions.length) return team;
  return new Set([...team, ...m.mentions]);
}
