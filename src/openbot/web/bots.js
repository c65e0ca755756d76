// Bots: the team with live state (idle, running in thread X, waiting for a human, queue depth),
// the editor of the selected bot (editor.js) and the new-bot dialog.

import { h, fill, clear, avatar, nextId } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { store } from "/web/store.js";
import { BotEditor } from "/web/editor.js";
import { botTabs } from "/web/memory.js";

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
  let tab = parts[2] || "settings";
  const list = h("ul.bot-list", { "aria-label": "Bots" });
  const editorHost = h("div.bot-editor-host");
  container.append(
    h(
      "section.page.bots",
      { "aria-labelledby": "bots-title" },
      h("div.page-head", h("h1", { id: "bots-title" }, "Bots"), h("span.spacer"), h("button.new-bot", { type: "button", onclick: () => openNewBot() }, "New bot")),
      h("div.bots-layout", { class: selected ? "has-editor" : "" }, list, editorHost),
    ),
  );
  const layout = container.querySelector(".bots-layout");
  let editor = null;

  function renderList() {
    container.querySelector(".new-bot").hidden = Boolean(store.pinned); // the admin's (403 otherwise)
    const bots = [...store.bots.values()].sort((a, b) => a.handle.localeCompare(b.handle));
    clear(list);
    if (!bots.length) list.append(h("li.empty", "No bots."));
    for (const bot of bots) list.append(botCard(bot, bot.handle === selected));
  }

  function renderEditor() {
    layout.classList.toggle("has-editor", Boolean(selected));
    const bot = selected ? store.bots.get(selected) : null;
    if (!bot) {
      fill(editorHost, editorPlaceholder(selected));
      editor = null;
      return;
    }
    if (editor && editor.handle === selected && editor.tab === tab) {
      fill(editor.stateEl, ...stateLine(bot)); // live state; unsaved edits stay
      return;
    }
    const onDeleted = () => {
      selected = null;
      location.hash = "#/bots";
    };
    editor = new BotEditor(bot, { state: stateLine(bot), onDeleted });
    editor.tab = tab;
    fill(editorHost, botTabs(bot.handle, editor.el, tab));
  }

  function render() {
    renderList();
    renderEditor();
  }

  const off = store.on("bots", render);
  render();
  const dispose = () => off();
  dispose.route = (newParts) => {
    selected = newParts[1] || null;
    tab = newParts[2] || "settings";
    render();
    if (editor) editor.el.querySelector("input, textarea")?.focus();
  };
  return dispose;
}

function editorPlaceholder(selected) {
  if (!selected) return h("div.empty.editor-empty", "Select a bot to edit its settings.");
  return h("div.empty", store.bots.size ? `No bot @${selected}.` : "Loading…");
}

function botCard(bot, selected) {
  return h(
    "li.bot-card",
    { class: selected ? "selected" : "", dataset: { handle: bot.handle, status: bot.state?.status || "idle" } },
    avatar(bot.handle, "bot"),
    h(
      "div.bot-card-main",
      h(
        "div.bot-card-head",
        h("a.bot-name", { href: `#/bots/${encodeURIComponent(bot.handle)}`, "aria-current": selected ? "true" : null }, `@${bot.handle}`),
        bot.name && bot.name !== bot.handle ? h("span.muted", bot.name) : null,
        h("span.spacer"),
        h("code.model", bot.model || ""),
      ),
      bot.description ? h("p.bot-desc", bot.description) : null,
      h("p.bot-state", { "aria-live": "polite" }, stateLine(bot)),
    ),
  );
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
