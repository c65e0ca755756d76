// Explanations on the thread view: "who saw this" under each message (its dispositions: what each
// bot decided — engage, observe or ignore — by which tier and signal, and why), and "why didn't
// @x answer?" from a bot's avatar in the thread header, for the latest message from a person.

import { h, fill, toast } from "/web/dom.js";
import { request, describeError } from "/web/api.js";

const enc = encodeURIComponent;

/** The "who saw this" toggle for one message; the panel opens below the message's text. */
export function seenToggle(messageId) {
  const panel = h("div.seen-panel", { hidden: true, role: "region", "aria-label": "Who saw this" });
  const button = h(
    "button.seen-toggle",
    {
      type: "button",
      title: "Who saw this, and what each bot decided",
      "aria-expanded": "false",
      onclick: async () => {
        const open = panel.hidden;
        panel.hidden = !open;
        button.setAttribute("aria-expanded", String(open));
        if (open) await loadDispositions(messageId, panel);
      },
    },
    "who saw this",
  );
  return { button, panel };
}

async function loadDispositions(messageId, panel) {
  fill(panel, h("span.muted", "Loading…"));
  try {
    const { items } = await request("GET", `/messages/${enc(messageId)}/dispositions`);
    if (!items.length) return fill(panel, h("span.muted", "No bot saw this message."));
    fill(
      panel,
      h(
        "ul.seen-list",
        items.map((d) =>
          h(
            "li.seen-item",
            { class: `seen-${d.disposition}`, dataset: { bot: d.bot, disposition: d.disposition } },
            h("span.seen-bot", `@${d.bot}`),
            h("span.chip.seen-verdict", d.pending ? `${d.disposition} (deciding)` : d.disposition),
            h("span.muted.seen-signal", `tier ${d.tier} · ${d.signal.replace(/_/g, " ")}`),
            h("span.seen-reason", d.reason),
          ),
        ),
      ),
    );
  } catch (error) {
    fill(panel, h("span.error", describeError(error)));
  }
}

/** The answer to "why didn't @bot answer?" for a message, shown in `target`. */
export async function showWhy(target, bot, message) {
  target.hidden = false;
  if (!message) {
    fill(target, h("span.muted", `No message from a person in this thread yet: nothing for @${bot} to answer.`));
    return;
  }
  fill(target, h("span.muted", "Asking…"));
  try {
    const answer = await request("GET", `/why?message_id=${enc(message.id)}&bot=${enc(bot)}`);
    const d = answer.disposition;
    fill(
      target,
      h("div.why-head", h("strong", answer.answer === "answered" ? `@${bot} answered` : `Why didn't @${bot} answer?`), closeButton(target)),
      h("p.why-quote.muted", `“${message.content.slice(0, 140)}”`),
      h("p.why-answer", { dataset: { answer: answer.answer } }, h("span.chip", answer.answer.replace(/_/g, " ")), " ", answer.summary),
      d ? h("p.muted.why-detail", `Decided: ${d.disposition} · tier ${d.tier} · ${d.signal.replace(/_/g, " ")} — ${d.reason}`) : null,
      answer.reply_message_id ? h("a.why-link", { href: `#m-${answer.reply_message_id}` }, "See the reply") : null,
      answer.disposal ? h("p.muted", `Dropped: ${answer.disposal.reason}`) : null,
    );
  } catch (error) {
    fill(target, h("span.error", describeError(error)), closeButton(target));
  }
}

function closeButton(target) {
  return h("button.why-close", { type: "button", "aria-label": "Close", onclick: () => (target.hidden = true) }, "×");
}

/** The newest message from a person (what "why didn't @x answer?" is about). */
export function latestHumanMessage(messages) {
  let latest = null;
  for (const m of messages) if (m.sender && m.sender.kind === "human" && (!latest || m.id > latest.id)) latest = m;
  return latest;
}

/** A channel's "mention required" switch (PATCH require_mention): when on, only a mention or a
 *  hand-off wakes a bot; names, the direct and small-group signals and tier 2 are off. */
export function mentionToggle(thread) {
  const box = h("input", {
    type: "checkbox",
    checked: Boolean(thread.require_mention),
    onchange: async () => {
      box.disabled = true;
      try {
        await request("PATCH", `/threads/${enc(thread.id)}`, { require_mention: box.checked });
      } catch (error) {
        box.checked = !box.checked;
        toast(describeError(error), "error");
      } finally {
        box.disabled = false;
      }
    },
  });
  return h("label.check.mention-toggle", { title: "Only a mention (or a bot's hand-off) wakes a bot in this channel" }, box, h("span", "mention required"));
}
