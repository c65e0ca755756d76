// Bots: the team with live state (idle, running in thread X, waiting for a human, queue depth)
// and an editor for every setting, including the scripted model's script.

import { h, fill, clear, json, avatar, toast, nextId } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { store } from "/web/store.js";

const BUILTIN_TOOLS = ["list_bots", "ask_human", "read_history", "recall_messages", "todo_write"];
const MODELS = ["scripted", "anthropic:claude-sonnet-4-5", "openai:gpt-4o", "ollama:llama3.1"];

function threadLink(id) {
  return h("a", { href: `#/t/${encodeURIComponent(id)}` }, store.threadTitle(id));
}

/** "idle" | "running in X" | "waiting for a human in Y" (+ queue depth) as nodes. */
export function stateLine(bot) {
  const state = bot.state || {};
  const parts = [];
  const status = state.status || "idle";
  if (bot.enabled === false) parts.push(h("span.state-pill.state-disabled", "disabled"));
  if ((state.running_threads || []).length) {
    parts.push(h("span.state-pill.state-running", "running"), " in ", joinNodes(state.running_threads.map(threadLink)));
  }
  if ((state.waiting_threads || []).length) {
    if (parts.length) parts.push(" · ");
    parts.push(h("span.state-pill.state-waiting_human", "waiting for a human"), " in ", joinNodes(state.waiting_threads.map(threadLink)));
  }
  if (!parts.length || (parts.length === 1 && bot.enabled === false)) {
    if (status === "running" || status === "waiting_human") parts.push(h("span.state-pill", { class: `state-${status}` }, status === "running" ? "running" : "waiting for a human"));
    else parts.push(h("span.state-pill.state-idle", "idle"));
  }
  const depth = state.queue_depth || 0;
  parts.push(h("span.queue", { title: "Queued inbox items" }, ` · queue ${depth}`));
  return parts;
}

function joinNodes(nodes) {
  const out = [];
  nodes.forEach((n, i) => {
    if (i) out.push(", ");
    out.push(n);
  });
  return out;
}

export function mount(container, parts) {
  let selected = parts[1] || null;
  const list = h("ul.bot-list", { "aria-label": "Bots" });
  const editorHost = h("div.bot-editor-host");
  container.append(
    h(
      "section.page.bots",
      { "aria-labelledby": "bots-title" },
      h("div.page-head", h("h1", { id: "bots-title" }, "Bots"), h("span.spacer"), h("button", { type: "button", onclick: () => openNewBot() }, "New bot")),
      h("div.bots-layout", { class: selected ? "has-editor" : "" }, list, editorHost),
    ),
  );
  const layout = container.querySelector(".bots-layout");
  let editor = null;

  function renderList() {
    const bots = [...store.bots.values()].sort((a, b) => a.handle.localeCompare(b.handle));
    clear(list);
    if (!bots.length) list.append(h("li.empty", "No bots."));
    for (const bot of bots) {
      list.append(
        h(
          "li.bot-card",
          { class: bot.handle === selected ? "selected" : "", dataset: { handle: bot.handle, status: bot.state?.status || "idle" } },
          avatar(bot.handle, "bot"),
          h(
            "div.bot-card-main",
            h(
              "div.bot-card-head",
              h("a.bot-name", { href: `#/bots/${encodeURIComponent(bot.handle)}`, "aria-current": bot.handle === selected ? "true" : null }, `@${bot.handle}`),
              bot.name && bot.name !== bot.handle ? h("span.muted", bot.name) : null,
              h("span.spacer"),
              h("code.model", bot.model || ""),
            ),
            bot.description ? h("p.bot-desc", bot.description) : null,
            h("p.bot-state", { "aria-live": "polite" }, stateLine(bot)),
          ),
        ),
      );
    }
  }

  function renderEditor() {
    layout.classList.toggle("has-editor", Boolean(selected));
    if (!selected) {
      fill(editorHost, h("div.empty.editor-empty", "Select a bot to edit its settings."));
      editor = null;
      return;
    }
    const bot = store.bots.get(selected);
    if (!bot) {
      fill(editorHost, h("div.empty", store.bots.size ? `No bot @${selected}.` : "Loading…"));
      editor = null;
      return;
    }
    if (editor && editor.handle === selected) {
      fill(editor.stateEl, ...stateLine(bot)); // live state; unsaved edits stay
      return;
    }
    editor = botEditor(bot, () => {
      selected = null;
      location.hash = "#/bots";
    });
    fill(editorHost, editor.el);
  }

  const off = store.on("bots", () => {
    renderList();
    renderEditor();
  });
  renderList();
  renderEditor();
  const dispose = () => off();
  dispose.route = (newParts) => {
    selected = newParts[1] || null;
    renderList();
    renderEditor();
    if (editor) editor.el.querySelector("input, textarea")?.focus();
  };
  return dispose;
}

function splitList(text) {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function field(label, control, help) {
  const id = control.id || nextId("f");
  control.id = id;
  return h("div.field", h("label", { for: id }, label), control, help ? h("p.help", help) : null);
}

function botEditor(bot, onDeleted) {
  const settings = bot.model_settings && typeof bot.model_settings === "object" ? bot.model_settings : {};
  const name = h("input", { type: "text", value: bot.name || "" });
  const description = h("input", { type: "text", value: bot.description || "" });
  const instructions = h("textarea", { rows: 6 }, bot.instructions || "");
  instructions.value = bot.instructions || "";
  const modelList = nextId("models");
  const model = h("input", { type: "text", value: bot.model || "", list: modelList, spellcheck: false });
  model.setAttribute("list", modelList);
  const tools = h("input", { type: "text", value: (bot.tools || []).join(", "), spellcheck: false });
  const approval = h("input", { type: "text", value: (bot.approval_tools || []).join(", "), spellcheck: false });
  const memory = h("input", { type: "checkbox", checked: Boolean(bot.memory_enabled) });
  const enabled = h("input", { type: "checkbox", checked: bot.enabled !== false });
  const parallel = h("input", { type: "number", min: 1, max: 64, step: 1, value: bot.max_parallel_threads ?? 1 });
  const delay = h("input", { type: "number", min: 0, step: 100, value: settings.delay_ms ?? 0 });
  const rules = h("ol.rules");
  const script = Array.isArray(settings.script) ? settings.script : [];
  const ruleEditors = [];

  function addRule(rule = { match: "", reply: "" }) {
    const match = h("input", { type: "text", value: rule.match || "", placeholder: "regex, e.g. (?i)deploy", spellcheck: false });
    const reply = h("textarea", { rows: 2, placeholder: "reply; may use {trigger} {handle} {tool_result}" });
    reply.value = rule.reply || "";
    const calls = h("textarea.code", { rows: 2, placeholder: '[{"name": "ask_human", "args": {"question": "Ship it?"}}]', spellcheck: false });
    calls.value = rule.tool_calls && rule.tool_calls.length ? json(rule.tool_calls) : "";
    const item = h("li.rule");
    const entry = {
      item,
      value() {
        const out = { ...rule, match: match.value, reply: reply.value };
        delete out.tool_calls;
        if (calls.value.trim()) {
          try {
            out.tool_calls = JSON.parse(calls.value);
          } catch (error) {
            throw new Error(`Rule ${ruleEditors.indexOf(entry) + 1}: tool calls are not valid JSON (${error.message})`);
          }
        }
        return out;
      },
    };
    const remove = h("button.small.danger-outline", { type: "button", onclick: () => {
      ruleEditors.splice(ruleEditors.indexOf(entry), 1);
      item.remove();
    } }, "Remove rule");
    item.append(
      field("Match (regex)", match),
      field("Reply", reply),
      field("Tool calls (JSON, optional)", calls),
      h("div.row.end", remove),
    );
    ruleEditors.push(entry);
    rules.append(item);
    return entry;
  }
  script.forEach((rule) => addRule(rule));

  const scriptSection = h(
    "fieldset.script",
    h("legend", "Scripted model"),
    h("p.help", "Rules are tried in order against the trigger text; the first match replies. No match: a neutral acknowledgement."),
    field("Delay per model call (ms)", delay),
    rules,
    h("button.small", { type: "button", onclick: () => addRule().item.querySelector("input").focus() }, "Add rule"),
  );
  const syncScript = () => (scriptSection.hidden = model.value.trim() !== "scripted");
  model.addEventListener("input", syncScript);
  syncScript();

  const error = h("p.form-error", { role: "alert", hidden: true });
  const save = h("button.primary", { type: "submit" }, "Save");
  const remove = h("button.danger-outline", { type: "button" }, "Delete bot");
  const stateEl = h("p.bot-state", stateLine(bot));
  const form = h(
    "form.bot-editor",
    { "aria-labelledby": "bot-editor-title" },
    h("div.editor-head", avatar(bot.handle, "bot"), h("h2", { id: "bot-editor-title" }, `@${bot.handle}`), h("span.spacer"), h("a.close", { href: "#/bots", "aria-label": "Close editor" }, "×")),
    stateEl,
    h("div.grid2", field("Name", name), field("Model", model, "“scripted” runs offline from the script below.")),
    h("datalist", { id: modelList }, MODELS.map((m) => h("option", { value: m }))),
    field("Description", description),
    field("Instructions", instructions),
    field("Extra tools", tools, `Comma-separated, beyond the built-ins every bot has (${BUILTIN_TOOLS.join(", ")}).`),
    field("Approval tools", approval, "Comma-separated. Calls to these tools wait for a human decision (approve, edit, reject)."),
    h(
      "div.grid3",
      field("Max parallel threads", parallel),
      h("label.check", memory, h("span", "Memory enabled")),
      h("label.check", enabled, h("span", "Enabled")),
    ),
    scriptSection,
    error,
    h("div.row.end", remove, h("span.spacer"), save),
  );

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.hidden = true;
    let patch;
    try {
      const modelSettings = { ...settings };
      if (model.value.trim() === "scripted") {
        modelSettings.script = ruleEditors.map((r) => r.value());
        modelSettings.delay_ms = Number(delay.value) || 0;
      }
      patch = {
        name: name.value,
        description: description.value,
        instructions: instructions.value,
        model: model.value.trim(),
        model_settings: modelSettings,
        tools: splitList(tools.value),
        approval_tools: splitList(approval.value),
        memory_enabled: memory.checked,
        enabled: enabled.checked,
        max_parallel_threads: Number(parallel.value) || 1,
      };
    } catch (err) {
      error.hidden = false;
      error.textContent = err.message;
      return;
    }
    save.disabled = true;
    try {
      const updated = await api.updateBot(bot.handle, patch);
      store.putBot(updated);
      toast(`Saved @${bot.handle}`);
    } catch (err) {
      error.hidden = false;
      error.textContent = `Not saved: ${describeError(err)}`;
    } finally {
      save.disabled = false;
    }
  });
  remove.addEventListener("click", async () => {
    if (!confirm(`Delete @${bot.handle}? This cannot be undone.`)) return;
    try {
      await api.deleteBot(bot.handle);
      store.bots.delete(bot.handle);
      store.notify("bots");
      toast(`Deleted @${bot.handle}`);
      onDeleted();
    } catch (err) {
      error.hidden = false;
      error.textContent = `Not deleted: ${describeError(err)}`;
    }
  });
  return { el: form, handle: bot.handle, stateEl };
}

function openNewBot() {
  const handleId = nextId("handle");
  const nameId = nextId("name");
  const handle = h("input", { id: handleId, type: "text", required: true, pattern: "[a-z0-9_\\-]{2,32}", placeholder: "e.g. writer", spellcheck: false });
  const name = h("input", { id: nameId, type: "text", placeholder: "Writer" });
  const error = h("p.form-error", { role: "alert", hidden: true });
  const cancel = h("button", { type: "button" }, "Cancel");
  const form = h(
    "form.stack",
    h("h2", { id: "new-bot-title" }, "New bot"),
    h("label", { for: handleId }, "Handle"),
    handle,
    h("p.help", "2–32 characters: a–z, 0–9, _ and -."),
    h("label", { for: nameId }, "Name"),
    name,
    error,
    h("div.row.end", cancel, h("button.primary", { type: "submit" }, "Create")),
  );
  const dialog = h("dialog", { "aria-labelledby": "new-bot-title" }, form);
  document.body.append(dialog);
  cancel.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => dialog.remove());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const bot = await api.createBot({ handle: handle.value.trim(), name: name.value.trim() || handle.value.trim() });
      store.putBot(bot);
      dialog.close();
      location.hash = `#/bots/${encodeURIComponent(bot.handle)}`;
    } catch (err) {
      error.hidden = false;
      error.textContent = describeError(err);
    }
  });
  dialog.showModal();
  handle.focus();
}
