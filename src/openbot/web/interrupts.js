// The human-in-the-loop cards of a run waiting for a human: a question (a text answer) and an
// approval (per action: approve, edit the arguments, or reject with a reason). A run card shows
// them in the thread; the inbox's "Needs action" tab shows them across threads.

import { h, fill, json, nextId, renderText } from "/web/dom.js";
import { api, describeError } from "/web/api.js";

export function interruptCard(run, { threadTitle } = {}) {
  const interrupt = run.interrupt || {};
  if (interrupt.kind === "approval") return approvalCard(run, threadTitle);
  return questionCard(run, threadTitle);
}

function cardHead(kind, text, threadTitle) {
  return h(
    "div.interrupt-head",
    h("span.interrupt-kind", kind),
    h("span", text),
    threadTitle ? h("span.muted", ` in ${threadTitle}`) : null,
  );
}

function errorSlot() {
  return h("p.form-error", { role: "alert", hidden: true });
}

function showError(slot, error) {
  slot.hidden = false;
  slot.textContent = describeError(error);
}

function questionCard(run, threadTitle) {
  const id = nextId("answer");
  const question = run.interrupt?.question ?? "";
  const textarea = h("textarea", { id, rows: 2, required: true, placeholder: "Type your answer" });
  const err = errorSlot();
  const submit = h("button.primary", { type: "submit" }, "Answer");
  const form = h(
    "form.interrupt.interrupt-question",
    { "aria-label": `Question from @${run.bot}`, dataset: { runId: run.id } },
    cardHead("Question", ` from @${run.bot}`, threadTitle),
    h("p.interrupt-text", renderText(question)),
    h("label.visually-hidden", { for: id }, "Your answer"),
    textarea,
    err,
    h("div.row.end", submit),
  );
  textarea.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = textarea.value.trim();
    if (!answer) {
      textarea.focus();
      return;
    }
    submit.disabled = true;
    err.hidden = true;
    try {
      await api.resume(run.id, { answer });
      form.classList.add("sent");
      fill(form, h("p.muted", { role: "status" }, `Answered: “${answer}”. Resuming @${run.bot}…`));
    } catch (error) {
      submit.disabled = false;
      showError(err, error);
    }
  });
  return form;
}

function approvalCard(run, threadTitle) {
  const actions = run.interrupt?.actions || [];
  const err = errorSlot();
  const rows = actions.map((action, index) => approvalRow(action, index));
  const submit = h("button.primary", { type: "submit" }, actions.length > 1 ? "Send decisions" : "Send decision");
  const wants = ` @${run.bot} wants to run ${actions.length} action${actions.length === 1 ? "" : "s"}`;
  const form = h(
    "form.interrupt.interrupt-approval",
    { "aria-label": `Approval requested by @${run.bot}`, dataset: { runId: run.id } },
    cardHead("Approval", wants, threadTitle),
    rows.map((r) => r.el),
    err,
    h("div.row.end", submit),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    err.hidden = true;
    let decisions;
    try {
      decisions = rows.map((r) => r.decision());
    } catch (error) {
      showError(err, error);
      return;
    }
    submit.disabled = true;
    try {
      await api.resume(run.id, { decisions });
      const summary = decisions.map((d, i) => `${actions[i].name}: ${d.type}`).join(", ");
      fill(form, h("p.muted", { role: "status" }, `Sent (${summary}). Resuming @${run.bot}…`));
    } catch (error) {
      submit.disabled = false;
      showError(err, forAction(error, actions));
    }
  });
  return form;
}

/** A refusal that names a decision by its index ("decision 0: …") named as the card does:
 * "Action 1 (run_shell): …". */
function forAction(error, actions) {
  const index = error?.details?.index;
  if (!Number.isInteger(index) || !actions[index]) return error;
  const text = describeError(error).replace(/^decision \d+: /, "");
  return new Error(`Action ${index + 1} (${actions[index].name}): ${text}`);
}

/** One action of an approval: its decision (approve, edit, reject), arguments and reason. */
function approvalRow(action, index) {
  const group = nextId("decision");
  const argsId = nextId("args");
  const reasonId = nextId("reason");
  const radio = (value, label) =>
    h(
      "label.seg",
      h("input", { type: "radio", name: group, value, checked: value === "approve" }),
      h("span", label),
    );
  const argsText = json(action.args ?? {});
  const args = h("textarea.code", { id: argsId, rows: Math.min(10, argsText.split("\n").length + 1), readOnly: true, spellcheck: false }, argsText);
  args.value = argsText;
  const reason = h("input", { id: reasonId, type: "text", placeholder: "Why not? (sent to the bot)" });
  const reasonWrap = h("div.stack.tight", { hidden: true }, h("label", { for: reasonId }, "Reason for rejecting"), reason);
  const argsLabel = h("label", { for: argsId }, "Arguments");
  const el = h(
    "fieldset.action",
    h("legend", h("code", action.name), h("span.muted", ` · action ${index + 1}`)),
    h("div.segmented", { role: "radiogroup", "aria-label": `Decision for ${action.name}` }, radio("approve", "Approve"), radio("edit", "Edit"), radio("reject", "Reject")),
    argsLabel,
    args,
    reasonWrap,
  );
  const current = () => el.querySelector(`input[name="${group}"]:checked`)?.value || "approve";
  let edited = null; // the edit, kept while another decision is picked (which shows the original)
  el.addEventListener("change", (event) => {
    if (event.target.name !== group) return;
    const value = current();
    if (value === "edit") {
      if (edited !== null) args.value = edited;
    } else {
      if (!args.readOnly) edited = args.value;
      args.value = argsText; // approving runs these arguments, not the edit
    }
    args.readOnly = value !== "edit";
    argsLabel.textContent = value === "edit" ? "Arguments (JSON, editable)" : "Arguments";
    reasonWrap.hidden = value !== "reject";
    el.dataset.decision = value;
    if (value === "edit") args.focus();
    if (value === "reject") reason.focus();
  });
  el.dataset.decision = "approve";
  return { el, decision: () => decision(current(), action, index, args, reason) };
}

function decision(value, action, index, args, reason) {
  if (value === "approve") return { type: "approve" };
  if (value === "reject") {
    const message = reason.value.trim();
    return message ? { type: "reject", message } : { type: "reject" };
  }
  try {
    return { type: "edit", args: JSON.parse(args.value) };
  } catch (error) {
    throw new Error(`Action ${index + 1} (${action.name}): the arguments are not valid JSON: ${error.message}`);
  }
}
