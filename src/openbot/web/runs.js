// Run cards: status, triggers, steps, usage, Cancel, the streamed reply, and (while the run
// waits for a human) its question or approval card from interrupts.js.

import { h, fill, clear, json, duration, timeEl, toast } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { interruptCard } from "/web/interrupts.js";
import { runContext } from "/web/memory.js";

export const OPEN_STATUSES = new Set(["queued", "running", "waiting_human"]);

const STATUS_LABEL = {
  queued: "queued",
  running: "running",
  waiting_human: "waiting for you",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

export function statusLabel(status) {
  return STATUS_LABEL[status] || status || "unknown";
}

function usageText(usage) {
  if (!usage || typeof usage !== "object") return "";
  const input = usage.input_tokens ?? usage.prompt_tokens;
  const output = usage.output_tokens ?? usage.completion_tokens;
  if (input !== undefined || output !== undefined) return `${input ?? 0} in · ${output ?? 0} out tokens`;
  const parts = Object.entries(usage)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => `${k.replace(/_/g, " ")} ${v}`);
  return parts.join(" · ");
}

function errorText(error) {
  if (!error) return "";
  if (typeof error === "string") return error;
  return [error.code, error.message].filter(Boolean).join(": ") || json(error);
}

// One ticker for every running run on the page: their elapsed time moves each second.
setInterval(() => {
  for (const el of document.querySelectorAll(".run-elapsed")) el.textContent = duration(el.dataset.since);
}, 1000);

export class RunCard {
  /** options.onJump(messageId) scrolls the thread to a trigger message. */
  constructor(run, options = {}) {
    this.run = run;
    this.options = options;
    this.events = new Map();
    this.eventsLoaded = false;
    this.streamText = "";
    this.interruptKey = "";
    this.el = h("section.run", { "aria-label": "" });
    this.head = h("div.run-head");
    this.stream = h("div.run-stream", { hidden: true });
    this.interruptHost = h("div.run-interrupt");
    this.details = h("details.run-details");
    this.detailsBody = h("div.run-details-body");
    this.details.append(h("summary", "Details"), this.detailsBody);
    this.context = runContext(run.id);
    this.details.addEventListener("toggle", () => {
      if (this.details.open) this.loadEvents();
    });
    this.el.append(this.head, this.stream, this.interruptHost, this.details);
    this.render();
    if (OPEN_STATUSES.has(run.status)) this.loadEvents();
  }

  update(run) {
    this.updates = (this.updates || 0) + 1;
    const wasOpen = OPEN_STATUSES.has(this.run.status);
    this.run = { ...this.run, ...run, events: undefined };
    if (wasOpen && !OPEN_STATUSES.has(this.run.status)) {
      // Finished: the reply message (if any) replaces the streamed text.
      this.setStream("");
    }
    this.render();
  }

  addEvent(event) {
    if (!event || event.seq === undefined) return;
    this.events.set(event.seq, event);
    this.renderHead();
    if (this.details.open) this.renderDetails();
  }

  appendDelta(text) {
    if (this.replied) return; // late deltas can trail the reply message on the wire
    this.setStream(this.streamText + text);
  }

  /** The run's reply message is on screen: drop the streamed copy for good. */
  markReplied() {
    this.replied = true;
    this.setStream("");
  }

  setStream(text) {
    this.streamText = text;
    this.stream.hidden = !text;
    if (!text) {
      clear(this.stream);
      return;
    }
    if (!this.streamNode) {
      this.streamNode = document.createTextNode("");
      this.caret = h("span.caret", { "aria-hidden": "true" });
    }
    if (!this.stream.firstChild) this.stream.append(this.streamNode, this.caret);
    this.streamNode.data = text;
    this.caret.hidden = this.run.status !== "running"; // a paused run is not typing
  }

  async loadEvents() {
    if (this.loadingEvents) return this.loadingEvents;
    const updatesBefore = this.updates || 0;
    this.loadingEvents = api
      .run(this.run.id)
      .then((full) => {
        for (const event of full.events || []) this.events.set(event.seq, event);
        this.eventsLoaded = true;
        const { events, ...rest } = full;
        // A live update that landed while this request was in flight is newer: keep it.
        if ((this.updates || 0) === updatesBefore) this.run = { ...this.run, ...rest };
        this.render();
      })
      .catch(() => {})
      .finally(() => {
        this.loadingEvents = null;
      });
    return this.loadingEvents;
  }

  render() {
    const run = this.run;
    this.el.className = `run run-${run.status}`;
    this.el.id = `run-${run.id}`;
    this.el.dataset.runId = run.id;
    this.el.dataset.status = run.status;
    this.el.setAttribute("aria-label", `Run by @${run.bot}: ${statusLabel(run.status)}`);
    this.renderHead();
    this.renderInterrupt();
    if (this.caret) this.caret.hidden = run.status !== "running"; // what it said stays; the caret goes
    if (this.details.open) this.renderDetails();
  }

  /** The run's own tool calls (a sub-agent's are counted apart). */
  toolCalls() {
    return [...this.events.values()].filter((e) => e.type === "tool_call" && !e.payload?.agent).length;
  }

  subagents() {
    return new Set([...this.events.values()].map((e) => e.payload?.agent).filter(Boolean)).size;
  }

  renderHead() {
    const run = this.run;
    const calls = this.toolCalls();
    const meta = [];
    if (calls) meta.push(`${calls} tool call${calls === 1 ? "" : "s"}`);
    const subs = this.subagents();
    if (subs) meta.push(`${subs} sub-agent${subs === 1 ? "" : "s"}`);
    if (run.started_at) {
      // A run still working shows its time so far, kept current by the ticker below.
      const live = run.status === "running" && !run.finished_at;
      meta.push(live ? h("span.run-elapsed", { dataset: { since: run.started_at } }, duration(run.started_at)) : duration(run.started_at, run.finished_at));
    }
    const usage = usageText(run.usage);
    if (usage && !OPEN_STATUSES.has(run.status)) meta.push(usage);
    fill(this.head, 
      h("span.run-dot", { "aria-hidden": "true" }),
      h("span.run-bot", `@${run.bot}`),
      h("span.run-status", statusLabel(run.status)),
      meta.length ? h("span.run-meta", meta.flatMap((m, i) => (i ? [" · ", m] : [m]))) : null,
      run.status === "failed" && run.error ? h("span.run-error", errorText(run.error)) : null,
      h("span.spacer"),
      OPEN_STATUSES.has(run.status)
        ? h(
            "button.small.danger-outline",
            {
              type: "button",
              "aria-label": `Cancel run by @${run.bot}`,
              onclick: (event) => this.cancel(event.currentTarget),
            },
            "Cancel",
          )
        : null,
    );
  }

  async cancel(button) {
    button.disabled = true;
    try {
      await api.cancel(this.run.id); // the card itself turns "cancelled" (run.updated)
    } catch (error) {
      button.disabled = false;
      toast(`Cancel failed: ${describeError(error)}`, "error");
    }
  }

  renderInterrupt() {
    const run = this.run;
    const key = run.status === "waiting_human" && run.interrupt ? `${run.id}:${json(run.interrupt)}` : "";
    if (key === this.interruptKey) return;
    this.interruptKey = key;
    clear(this.interruptHost);
    if (key) this.interruptHost.append(interruptCard(run));
  }

  renderDetails() {
    const run = this.run;
    const body = clear(this.detailsBody);
    const triggers = run.trigger_message_ids || [];
    body.append(
      h(
        "dl.kv",
        h("dt", "Run"),
        h("dd", h("code", run.id)),
        h("dt", "Created"),
        h("dd", timeEl(run.created_at)),
        run.finished_at ? [h("dt", "Finished"), h("dd", timeEl(run.finished_at))] : null,
        h("dt", "Triggers"),
        h(
          "dd",
          triggers.length
            ? triggers.map((id, i) =>
                h(
                  "a.trigger",
                  {
                    href: `#m-${id}`,
                    onclick: (event) => {
                      if (this.options.onJump) {
                        event.preventDefault();
                        this.options.onJump(id);
                      }
                    },
                  },
                  `message ${i + 1}`,
                ),
              )
            : "—",
        ),
        h("dt", "Usage"),
        h("dd", usageText(run.usage) || "—"),
        run.error ? [h("dt", "Error"), h("dd.error-text", errorText(run.error))] : null,
      ),
      this.context,
    );
    const steps = [...this.events.values()].sort((a, b) => a.seq - b.seq);
    if (!this.eventsLoaded && !steps.length) {
      body.append(h("p.muted.small", "Loading steps…"));
      return;
    }
    if (!steps.length) {
      body.append(h("p.muted.small", "No steps recorded."));
      return;
    }
    body.append(stepList(steps));
  }
}

/** The run's steps; a sub-agent's steps (payload.agent) nest under the call that spawned it. */
function stepList(steps) {
  const nested = new Map();
  const own = [];
  for (const event of steps) {
    const p = event.payload || {};
    if (!p.agent) {
      own.push(event);
      continue;
    }
    const key = p.parent || p.agent;
    if (!nested.has(key)) nested.set(key, { agent: p.agent, steps: [] });
    nested.get(key).steps.push(event);
  }
  const placed = new Set();
  const items = own.map((event) => {
    const item = stepItem(event);
    const sub = event.type === "tool_call" ? nested.get(event.payload?.id) : null;
    if (sub) {
      placed.add(event.payload.id);
      item.append(subagentBlock(sub));
    }
    return item;
  });
  // A sub-agent whose spawning call is not among the steps (yet): shown on its own.
  for (const [key, sub] of nested) if (!placed.has(key)) items.push(h("li.step", subagentBlock(sub)));
  return h("ol.steps", items);
}

function subagentBlock(sub) {
  const n = sub.steps.length;
  return h(
    "div.subagent",
    { "data-agent": sub.agent, role: "group", "aria-label": `Steps of ${sub.agent}` },
    h("div.subagent-head", h("span.subagent-name", sub.agent), ` · ${n} step${n === 1 ? "" : "s"}`),
    h("ol.steps.substeps", sub.steps.map(stepItem)),
  );
}

function stepItem(event) {
  const p = event.payload || {};
  let title = event.type;
  if (event.type === "tool_call") title = `call ${p.name || p.tool || "tool"}`;
  else if (event.type === "tool_result") title = `result ${p.name || p.tool || ""}`.trim();
  else if (event.type === "text") title = "text";
  const preview =
    event.type === "tool_call"
      ? json(p.args ?? p.arguments ?? p)
      : event.type === "tool_result"
        ? typeof (p.content ?? p.result ?? p.output) === "string"
          ? (p.content ?? p.result ?? p.output)
          : json(p.content ?? p.result ?? p.output ?? p)
        : typeof p === "string"
          ? p
          : p.text || p.content || json(p);
  return h(
    "li.step",
    { class: `step-${event.type}` },
    h("details", h("summary", h("span.step-type", title), h("span.step-preview", String(preview).slice(0, 80))), h("pre", String(preview))),
  );
}
