// Memory upkeep on the Memory tab: "Decay now" (POST …/memories/maintain) and "Consolidate now"
// (POST …/memories/consolidate), with what each did. Both also run on their own schedule.

import { h, fill } from "/web/dom.js";
import { request, describeError } from "/web/api.js";

const enc = encodeURIComponent;

function short(id) {
  return id.length > 10 ? `…${id.slice(-6)}` : id;
}

function maintained(done) {
  const archived = done.archived.length;
  const pruned = done.pruned.length;
  if (!archived && !pruned) return [h("p", "Decay: nothing has faded below 0.15.")];
  return [
    h("p", `Decay: ${archived} archived (score below 0.15), ${pruned} deleted (below 0.05).`),
    h("p.muted.small", [...done.archived, ...done.pruned].map(short).join(", ")),
  ];
}

function consolidated(decisions) {
  if (!decisions.length) return [h("p", "Consolidation: no similar memories, nothing to decide.")];
  const changed = decisions.filter((d) => d.action !== "keep").length;
  return [
    h("p", `Consolidation: ${changed} change(s), ${decisions.length - changed} kept.`),
    h(
      "ul.upkeep-decisions",
      { "aria-label": "Consolidation decisions" },
      decisions.map((d) =>
        h(
          "li",
          { dataset: { action: d.action } },
          h("strong", d.action),
          ` ${d.memory_ids.map(short).join(", ")}`,
          d.result_id ? ` → ${short(d.result_id)}` : "",
          h("span.muted.small", ` — ${d.reason}`),
        ),
      ),
    ),
  ];
}

/** The buttons and their report; `changed()` is called after either ran (to reload the list). */
export function upkeepControls(handle, changed) {
  const base = `/bots/${enc(handle)}/memories`;
  const report = h("div.upkeep-report", { role: "status", "aria-live": "polite" });
  async function run(button, path, render) {
    button.disabled = true;
    fill(report, h("p.muted.small", "Working…"));
    try {
      fill(report, ...render(await request("POST", `${base}/${path}`)));
      await changed();
    } catch (error) {
      fill(report, h("p.error-text", describeError(error)));
    } finally {
      button.disabled = false;
    }
  }
  const decay = h("button.small", {
    type: "button",
    title: "Archive memories whose score fell below 0.15, delete those below 0.05 (runs hourly)",
    onclick: () => run(decay, "maintain", maintained),
  }, "Decay now");
  const consolidate = h("button.small", {
    type: "button",
    title: "Merge, supersede or prune similar memories: proposer, adversary, judge (runs daily)",
    onclick: () => run(consolidate, "consolidate", (answer) => consolidated(answer.decisions)),
  }, "Consolidate now");
  return h("div.memory-upkeep", h("div.row", decay, consolidate), report);
}
