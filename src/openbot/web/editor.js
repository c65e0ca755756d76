// The bot editor: every setting of one bot (name, model, instructions, tools, approval tools,
// memory, parallelism) and, for the offline scripted model, its rules. Save and Delete.

import { h, json, avatar, toast, nextId } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { store } from "/web/store.js";
import { ToolPicker } from "/web/tool_picker.js";

const WORKSPACE_ACCESS = { none: "None", read: "Read", write: "Read and write" };
const MODELS = ["scripted", "anthropic:claude-sonnet-4-5", "openai:gpt-4o", "ollama:llama3.1"];

function field(label, control, help) {
  const id = control.id || nextId("f");
  control.id = id;
  return h("div.field", h("label", { for: id }, label), control, help ? h("p.help", help) : null);
}

/** state: the bot's live state line (nodes); onDeleted() runs once the bot is deleted. */
export class BotEditor {
  constructor(bot, { state, onDeleted }) {
    this.bot = bot;
    this.handle = bot.handle;
    this.onDeleted = onDeleted;
    this.settings = bot.model_settings && typeof bot.model_settings === "object" ? bot.model_settings : {};
    this.stateEl = h("p.bot-state", state);
    this.error = h("p.form-error", { role: "alert", hidden: true });
    this.buildInputs();
    this.script = new ScriptEditor(Array.isArray(this.settings.script) ? this.settings.script : [], this.settings.delay_ms);
    const syncScript = () => (this.script.el.hidden = this.model.value.trim() !== "scripted");
    this.model.addEventListener("input", syncScript);
    syncScript();
    this.el = this.form();
  }

  buildInputs() {
    const bot = this.bot;
    this.name = h("input", { type: "text", value: bot.name || "" });
    this.description = h("input", { type: "text", value: bot.description || "" });
    this.aliases = h("input", { type: "text", value: (bot.aliases || []).join(", "), placeholder: "e.g. eng, the builder" });
    this.instructions = h("textarea", { rows: 6 }, bot.instructions || "");
    this.instructions.value = bot.instructions || "";
    this.modelList = nextId("models");
    this.model = h("input", { type: "text", value: bot.model || "", list: this.modelList, spellcheck: false });
    this.model.setAttribute("list", this.modelList);
    this.tools = new ToolPicker(bot.tools || [], bot.approval_tools || []);
    this.memory = h("input", { type: "checkbox", checked: Boolean(bot.memory_enabled) });
    this.enabled = h("input", { type: "checkbox", checked: bot.enabled !== false });
    this.parallel = h("input", { type: "number", min: 1, max: 64, step: 1, value: bot.max_parallel_threads ?? 1 });
    this.mailbox = h("input", { type: "number", min: 1, max: 1000, step: 1, value: bot.max_queued ?? 200 });
    this.runLimit = h("input", { type: "number", min: 1, max: 86400, step: 1, placeholder: "server default", value: (bot.model_settings || {}).run_timeout_seconds ?? "" });
    const access = bot.workspace_access || "read";
    this.workspace = h(
      "select",
      Object.entries(WORKSPACE_ACCESS).map(([value, label]) => h("option", { value, selected: value === access }, label)),
    );
  }

  form() {
    const handle = this.handle;
    this.saveButton = h("button.primary", { type: "submit" }, "Save");
    const remove = h("button.danger-outline", { type: "button", onclick: () => this.remove() }, "Delete bot");
    const form = h(
      "form.bot-editor",
      { "aria-labelledby": "bot-editor-title" },
      h("div.editor-head", avatar(handle, "bot"), h("h2", { id: "bot-editor-title" }, `@${handle}`), h("span.spacer"), h("a.close", { href: "#/bots", "aria-label": "Close editor" }, "×")),
      this.stateEl,
      h("div.grid2", field("Name", this.name), field("Model", this.model, "“scripted” runs offline from the script below.")),
      h("datalist", { id: this.modelList }, MODELS.map((m) => h("option", { value: m }))),
      field("Description", this.description),
      field("Aliases", this.aliases, "Other names for this bot, comma-separated: in a channel, a message naming it asks the gate whether it is addressed."),
      field("Instructions", this.instructions),
      field("Workspace access", this.workspace, "The files of the thread's working directory: list, read and search them; with write, also write and edit."),
      h(
        "div.grid3",
        field("Max parallel threads", this.parallel),
        h("label.check", this.memory, h("span", "Memory enabled")),
        h("label.check", this.enabled, h("span", "Enabled")),
      ),
      h(
        "div.grid2",
        field("Mailbox limit", this.mailbox, "Queued messages kept; above it the oldest channel messages are dropped (never a task message that mentions the bot)."),
        field("Run time limit (seconds)", this.runLimit, "A run still going after this is stopped with a notice. Empty: the server's limit."),
      ),
      this.tools.el,
      this.script.el,
      this.error,
      h("div.row.end", remove, h("span.spacer"), this.saveButton),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    if (store.pinned) {
      // An actor token acts in its own threads: changing a bot is the admin's (the server says 403).
      for (const control of form.querySelectorAll("input, textarea, select, button")) control.disabled = true;
      form.insertBefore(h("p.admin-only", { role: "note" }, `Changing a bot needs the admin token; this page acts as @${store.pinned}.`), this.stateEl.nextSibling);
    }
    return form;
  }

  showError(text) {
    this.error.hidden = false;
    this.error.textContent = text;
  }

  /** The PATCH body from the form; throws when a rule's tool calls are not valid JSON. */
  patch() {
    const modelSettings = { ...this.settings };
    if (this.model.value.trim() === "scripted") Object.assign(modelSettings, this.script.value());
    if (this.runLimit.value.trim()) modelSettings.run_timeout_seconds = Number(this.runLimit.value);
    else delete modelSettings.run_timeout_seconds;
    return {
      name: this.name.value,
      description: this.description.value,
      aliases: this.aliases.value.split(",").map((a) => a.trim()).filter(Boolean),
      instructions: this.instructions.value,
      model: this.model.value.trim(),
      model_settings: modelSettings,
      ...this.tools.value(),
      memory_enabled: this.memory.checked,
      enabled: this.enabled.checked,
      max_parallel_threads: Number(this.parallel.value) || 1,
      max_queued: Number(this.mailbox.value) || 200,
      workspace_access: this.workspace.value,
    };
  }

  async save() {
    this.error.hidden = true;
    let patch;
    try {
      patch = this.patch();
    } catch (err) {
      this.showError(err.message);
      return;
    }
    this.saveButton.disabled = true;
    try {
      const updated = await api.updateBot(this.handle, patch);
      store.putBot(updated);
      toast(`Saved @${this.handle}`);
    } catch (err) {
      this.showError(`Not saved: ${describeError(err)}`);
    } finally {
      this.saveButton.disabled = false;
    }
  }

  async remove() {
    if (!confirm(`Delete @${this.handle}? This cannot be undone.`)) return;
    try {
      await api.deleteBot(this.handle);
      store.bots.delete(this.handle);
      store.notify("bots");
      toast(`Deleted @${this.handle}`);
      this.onDeleted();
    } catch (err) {
      this.showError(`Not deleted: ${describeError(err)}`);
    }
  }
}

/** The scripted model's settings: a delay per model call and the rules, tried in order. */
class ScriptEditor {
  constructor(script, delayMs) {
    this.rules = [];
    this.delay = h("input", { type: "number", min: 0, step: 100, value: delayMs ?? 0 });
    this.list = h("ol.rules");
    script.forEach((rule) => this.addRule(rule));
    this.el = h(
      "fieldset.script",
      h("legend", "Scripted model"),
      h("p.help", "Rules are tried in order against the trigger text; the first match replies. No match: a neutral acknowledgement."),
      field("Delay per model call (ms)", this.delay),
      this.list,
      h("button.small", { type: "button", onclick: () => this.addRule().item.querySelector("input").focus() }, "Add rule"),
    );
  }

  value() {
    return { script: this.rules.map((r) => r.value()), delay_ms: Number(this.delay.value) || 0 };
  }

  addRule(rule = { match: "", reply: "" }) {
    const rules = this.rules;
    const match = h("input", { type: "text", value: rule.match || "", placeholder: "regex, e.g. (?i)deploy", spellcheck: false });
    const reply = h("textarea", { rows: 2, placeholder: "reply; may use {trigger} {handle} {tool_result}" });
    reply.value = rule.reply || "";
    const calls = h("textarea.code", { rows: 4, placeholder: '[{"name": "ask_human", "args": {"question": "Ship it?"}}]', spellcheck: false });
    calls.value = rule.tool_calls && rule.tool_calls.length ? json(rule.tool_calls) : "";
    const say = h("input", { type: "text", value: rule.say || "", placeholder: "optional text said beside the tool calls" });
    const item = h("li.rule");
    const entry = {
      item,
      value() {
        const out = { ...rule, match: match.value, reply: reply.value };
        delete out.tool_calls;
        delete out.say; // said beside tool calls only: it goes when they go
        if (calls.value.trim()) {
          try {
            out.tool_calls = JSON.parse(calls.value);
          } catch (error) {
            throw new Error(`Rule ${rules.indexOf(entry) + 1}: tool calls are not valid JSON (${error.message})`);
          }
          if (say.value) out.say = say.value;
        }
        return out;
      },
    };
    const remove = h("button.small.danger-outline", { type: "button", onclick: () => {
      rules.splice(rules.indexOf(entry), 1);
      item.remove();
    } }, "Remove rule");
    item.append(
      field("Match (regex)", match),
      field("Reply", reply),
      field("Tool calls (JSON, optional)", calls),
      field("Said with the tool calls (optional)", say),
      h("div.row.end", remove),
    );
    rules.push(entry);
    this.list.append(item);
    return entry;
  }
}
