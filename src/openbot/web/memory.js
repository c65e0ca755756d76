// A bot's memory (the Memory tab of its page): list, search, filter by segment, tier and
// lifecycle, add, edit, archive/restore and delete. Also the run card's "What the model saw".

import { h, fill, clear, toast, nextId, debounce, timeEl } from "/web/dom.js";
import { request, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { upkeepControls } from "/web/memory_upkeep.js";
import { store } from "/web/store.js";

export const SEGMENTS = ["identity", "preference", "correction", "relationship", "project", "knowledge", "context"];
export const TIERS = ["short", "long", "permanent"];
const enc = encodeURIComponent;

function options(values, selected, any) {
  return [any ? h("option", { value: "" }, any) : null, ...values.map((v) => h("option", { value: v, selected: v === selected }, v))];
}

function labelled(label, control) {
  control.id = control.id || nextId("mem");
  return h("div.field", h("label", { for: control.id }, label), control);
}

/** Settings | Memory tabs around the bot editor; `tab` is "memory" or anything else (settings). */
export function botTabs(handle, settingsEl, tab) {
  // A bot's memory holds what it learned in every thread: an actor token does not reach it (403).
  const memory = store.pinned ? null : new MemoryPanel(handle);
  const closed = h("p.admin-only", { role: "note" }, `@${handle}'s memory needs the admin token; this page acts as @${store.pinned}.`);
  const panes = { settings: settingsEl, memory: memory ? memory.el : closed };
  const buttons = {};
  const tablist = h("div.tabs.bot-tabs", { role: "tablist", "aria-label": `@${handle}` });
  for (const [id, label] of [["settings", "Settings"], ["memory", "Memory"]]) {
    buttons[id] = h("button.tab", { type: "button", role: "tab", id: `bot-tab-${id}`, onclick: () => select(id) }, label);
    tablist.append(buttons[id]);
  }
  const panel = h("div.bot-tab-panel", { role: "tabpanel" });
  function select(id) {
    for (const [key, button] of Object.entries(buttons)) button.setAttribute("aria-selected", key === id ? "true" : "false");
    panel.setAttribute("aria-labelledby", `bot-tab-${id}`);
    fill(panel, panes[id]);
    if (id === "memory" && memory) memory.load();
  }
  select(tab === "memory" ? "memory" : "settings");
  return h("div.bot-tabs-host", tablist, panel);
}

export class MemoryPanel {
  constructor(handle) {
    this.handle = handle;
    this.base = `/bots/${enc(handle)}/memories`;
    this.q = h("input", { type: "search", placeholder: "Search memories", "aria-label": "Search memories" });
    this.segment = h("select", { "aria-label": "Segment" }, options(SEGMENTS, "", "All segments"));
    this.tier = h("select", { "aria-label": "Tier" }, options(TIERS, "", "All tiers"));
    this.lifecycle = h(
      "select",
      { "aria-label": "Lifecycle" },
      h("option", { value: "active" }, "Active"),
      h("option", { value: "archived" }, "Archived"),
      h("option", { value: "all" }, "All"),
    );
    const reload = debounce(() => this.load(), 200);
    // Changes by the bot (its tools, reflection) or anyone else show up as they happen.
    const off = live.on("activity.created", (row) => {
      if (!this.el.isConnected && this.loaded) off();
      else if (this.el.isConnected && row && row.actor === handle && String(row.event).startsWith("memory.")) reload();
    });
    this.q.addEventListener("input", reload);
    for (const select of [this.segment, this.tier, this.lifecycle]) select.addEventListener("change", () => this.load());
    this.index = h("p.muted.small.memory-index");
    this.formHost = h("div.memory-form-host");
    this.list = h("ul.memory-list", { "aria-label": `Memories of @${handle}` });
    const add = h("button.primary", { type: "button", onclick: () => this.openForm(null) }, "Add memory");
    this.el = h(
      "section.memory-panel",
      { "aria-label": `@${handle}'s memory` },
      h("h2.memory-title", `What @${handle} remembers`),
      h("div.row.memory-filters", this.q, this.segment, this.tier, this.lifecycle, h("span.spacer"), add),
      this.index,
      upkeepControls(handle, () => this.load()),
      this.formHost,
      this.list,
    );
  }

  async load() {
    // Filters change faster than answers come back: only the newest load may draw.
    const mine = (this.seq = (this.seq || 0) + 1);
    this.loaded = true;
    const params = new URLSearchParams({ lifecycle: this.lifecycle.value, limit: "200" });
    if (this.q.value.trim()) params.set("q", this.q.value.trim());
    if (this.segment.value) params.set("segment", this.segment.value);
    if (this.tier.value) params.set("tier", this.tier.value);
    try {
      const [page, status] = await Promise.all([request("GET", `${this.base}?${params}`), request("GET", "/status")]);
      if (mine !== this.seq) return;
      this.renderIndex(status.memory || {});
      this.render(page.items || []);
    } catch (error) {
      if (mine !== this.seq) return;
      fill(this.list, h("li.empty.error-text", `Could not load memories: ${describeError(error)}`));
    }
  }

  renderIndex(memory) {
    const note = memory.embeddings ? ` (embeddings ${memory.embeddings})` : "";
    this.index.textContent = `Relevance: ${memory.index || "lexical"} index${memory.model ? ` (${memory.model})` : ""}${note}`;
  }

  render(items) {
    clear(this.list);
    if (!items.length) {
      this.list.append(h("li.empty", this.q.value.trim() ? "No memory matches." : "No memories."));
      return;
    }
    for (const memory of items) this.list.append(this.item(memory));
  }

  item(memory) {
    const archived = memory.lifecycle === "archived";
    const meta = [
      memory.segment,
      memory.tier,
      `importance ${Number(memory.importance).toFixed(2)}`,
      `used ${memory.access_count}×`,
      memory.source,
      memory.score !== null && memory.score !== undefined ? `score ${formatScore(Number(memory.score))}` : null,
    ].filter(Boolean);
    return h(
      "li.memory-item",
      { class: archived ? "archived" : "", dataset: { id: memory.id } },
      h("p.memory-content", memory.content),
      h(
        "p.memory-meta.muted.small",
        meta.join(" · "),
        // A memory never recalled has its creation time as last_accessed_at: say so instead.
        memory.access_count ? [" · last used ", timeEl(memory.last_accessed_at)] : " · never used yet",
        archived ? h("span.state-pill", " archived") : null,
      ),
      h(
        "div.row.memory-actions",
        h("button.small", { type: "button", onclick: () => this.openForm(memory) }, "Edit"),
        h(
          "button.small",
          { type: "button", onclick: () => this.save(memory, { lifecycle: archived ? "active" : "archived" }) },
          archived ? "Restore" : "Archive",
        ),
        h("button.small.danger-outline", { type: "button", onclick: () => this.remove(memory) }, "Delete"),
      ),
    );
  }

  /** The add form (memory null) or the edit form of one memory, above the list. */
  openForm(memory) {
    const content = h("textarea", { rows: 3, required: true, "aria-label": "Memory content" });
    content.value = memory ? memory.content : "";
    const segment = h("select", options(SEGMENTS, memory ? memory.segment : "knowledge"));
    const tier = h("select", options(TIERS, memory ? memory.tier : "long"));
    const importance = h("input", { type: "number", step: "any", value: memory ? memory.importance : 0.5 });
    const error = h("p.form-error", { role: "alert", hidden: true });
    const cancel = h("button", { type: "button", onclick: () => clear(this.formHost) }, "Cancel");
    const form = h(
      "form.stack.memory-form",
      { "aria-label": memory ? "Edit memory" : "Add memory" },
      labelled("Content", content),
      h("div.row", labelled("Segment", segment), labelled("Tier", tier), labelled("Importance", importance)),
      error,
      h("div.row.end", cancel, h("button.primary", { type: "submit" }, memory ? "Save" : "Add")),
    );
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const body = { content: content.value, segment: segment.value, tier: tier.value, importance: Number(importance.value) };
      try {
        if (memory) await request("PATCH", `${this.base}/${enc(memory.id)}`, body);
        else await request("POST", this.base, body);
        clear(this.formHost);
        toast(memory ? "Memory saved" : "Memory added");
        await this.load();
      } catch (err) {
        error.hidden = false;
        error.textContent = describeError(err);
      }
    });
    fill(this.formHost, form);
    content.focus();
  }

  async save(memory, patch) {
    try {
      await request("PATCH", `${this.base}/${enc(memory.id)}`, patch);
      await this.load();
    } catch (error) {
      toast(`Not saved: ${describeError(error)}`, "error");
    }
  }

  async remove(memory) {
    if (!confirm(`Delete this memory of @${this.handle}? This cannot be undone.`)) return;
    try {
      await request("DELETE", `${this.base}/${enc(memory.id)}`);
      toast("Memory deleted");
      await this.load();
    } catch (error) {
      toast(`Not deleted: ${describeError(error)}`, "error");
    }
  }
}

/** The run card's "What the model saw": GET /runs/{id}/context, loaded when opened. */
export function runContext(runId) {
  const body = h("div.run-context-body");
  const details = h("details.run-context", h("summary", "What the model saw"), body);
  details.addEventListener("toggle", async () => {
    if (!details.open) return;
    fill(body, h("p.muted.small", "Loading…"));
    try {
      fill(body, contextView(await request("GET", `/runs/${enc(runId)}/context`)));
    } catch (error) {
      const pending = error && error.status === 404;
      fill(body, h("p.muted.small", pending ? "Nothing recorded for this run (a run being prepared, or running in another worker process, has none here yet)." : describeError(error)));
    }
  });
  return details;
}

function contextView(context) {
  const memories = context.memories || [];
  return [
    h("h4", `Injected memories (${memories.length})`),
    memories.length
      ? h("ol.context-memories", memories.map((m) => h("li", h("span.score", Number(m.score).toFixed(3)), " ", m.content)))
      : h("p.muted.small", "None."),
    h("h4", "System prompt"),
    h("pre.context-system", context.system),
    h("h4", `Messages (${(context.messages || []).length}${context.omitted ? `, ${context.omitted} left out` : ""}${context.scoped ? ", scoped" : ""})`),
    h("ol.context-messages", (context.messages || []).map((m) => h("li", h("b", `${m.role}: `), h("pre", m.content)))),
  ];
}

/** Lexical scores can be tiny (2e-6): three decimals would show them all as 0.000. */
function formatScore(score) {
  return score !== 0 && Math.abs(score) < 0.001 ? score.toExponential(1) : score.toFixed(3);
}
