// The message composer: Enter sends, Shift+Enter adds a line, "@" opens an autocomplete of
// handles (the thread's participants first, then the rest of the team). ARIA combobox pattern.

import { h, clear, nextId, avatar } from "/web/dom.js";

const MENTION_BEFORE_CARET = /(^|[^a-z0-9_@-])@([a-z0-9_-]{0,32})$/i;
const MENTIONS = /(?:^|[^a-z0-9_@-])@([a-z0-9_-]{2,32})/gi;

/**
 * createComposer({ handles: () => [{handle, kind, name, inThread}], recipients: (mentions) => string,
 *                  onSend: async (text) => void, label })
 */
export function createComposer({ handles, recipients, onSend, label = "Message" }) {
  const inputId = nextId("composer");
  const listId = nextId("mentions");
  const hintId = nextId("hint");
  const input = h("textarea.composer-input", {
    id: inputId,
    rows: 1,
    placeholder: "Write a message — @ to mention",
    role: "combobox",
    "aria-autocomplete": "list",
    "aria-expanded": "false",
    "aria-controls": listId,
    "aria-describedby": hintId,
    autocomplete: "off",
  });
  const list = h("ul.mention-list", { id: listId, role: "listbox", "aria-label": "Mention suggestions", hidden: true });
  const send = h("button.primary.send", { type: "submit", "aria-label": "Send message" }, "Send");
  const hint = h("div.composer-hint", { id: hintId });
  const form = h(
    "form.composer",
    { "aria-label": "Compose a message" },
    h("label.visually-hidden", { for: inputId }, label),
    h("div.composer-box", list, input, send),
    hint,
  );

  let options = [];
  let active = -1;
  let sending = false;

  function autosize() {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 220)}px`;
  }

  function updateHint() {
    const mentioned = [...input.value.matchAll(MENTIONS)].map((m) => m[1].toLowerCase());
    hint.textContent = recipients ? recipients(mentioned) : "";
  }

  function close() {
    list.hidden = true;
    options = [];
    active = -1;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  }

  function query() {
    const before = input.value.slice(0, input.selectionStart);
    const m = before.match(MENTION_BEFORE_CARET);
    return m ? m[2].toLowerCase() : null;
  }

  function refresh() {
    const q = query();
    if (q === null || input.selectionStart !== input.selectionEnd) return close();
    const all = handles();
    const seen = new Set();
    const ranked = [];
    for (const pass of [(a) => a.handle.startsWith(q), (a) => a.handle.includes(q) || (a.name || "").toLowerCase().includes(q)]) {
      for (const a of all) {
        if (!seen.has(a.handle) && pass(a)) {
          seen.add(a.handle);
          ranked.push(a);
        }
      }
    }
    options = ranked.sort((a, b) => Number(Boolean(b.inThread)) - Number(Boolean(a.inThread))).slice(0, 8);
    if (!options.length) return close();
    active = 0;
    clear(list);
    options.forEach((a, i) => {
      list.appendChild(
        h(
          "li.mention-option",
          {
            id: `${listId}-${i}`,
            role: "option",
            "aria-selected": i === active ? "true" : "false",
            onmousedown: (event) => {
              event.preventDefault(); // keep focus in the textarea
              pick(i);
            },
          },
          avatar(a.handle, a.kind),
          h("span.mention-handle", `@${a.handle}`),
          a.name && a.name !== a.handle ? h("span.muted", a.name) : null,
          h("span.mention-kind", a.inThread ? "in thread" : a.kind),
        ),
      );
    });
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    highlight();
  }

  function highlight() {
    [...list.children].forEach((li, i) => li.setAttribute("aria-selected", i === active ? "true" : "false"));
    if (active >= 0) {
      input.setAttribute("aria-activedescendant", `${listId}-${active}`);
      list.children[active]?.scrollIntoView({ block: "nearest" });
    }
  }

  function pick(i) {
    const option = options[i];
    if (!option) return;
    const caret = input.selectionStart;
    const before = input.value.slice(0, caret);
    const after = input.value.slice(caret);
    const start = before.lastIndexOf("@");
    const insert = `@${option.handle} `;
    input.value = before.slice(0, start) + insert + after.replace(/^[a-z0-9_-]*/i, "").replace(/^ /, "");
    const pos = start + insert.length;
    input.setSelectionRange(pos, pos);
    close();
    updateHint();
    autosize();
  }

  async function submit() {
    const text = input.value.trim();
    if (!text || sending) return;
    sending = true;
    send.disabled = true;
    try {
      await onSend(text);
      input.value = "";
      autosize();
      updateHint();
    } catch {
      /* onSend reported it; keep the text so nothing is lost */
    } finally {
      sending = false;
      send.disabled = false;
      input.focus();
    }
  }

  input.addEventListener("input", () => {
    autosize();
    refresh();
    updateHint();
  });
  input.addEventListener("click", refresh);
  input.addEventListener("blur", () => setTimeout(close, 100));
  input.addEventListener("keydown", (event) => {
    if (event.isComposing) return;
    if (!list.hidden && options.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        active = (active + step + options.length) % options.length;
        highlight();
        return;
      }
      if (event.key === "Enter" || event.key === "Tab") {
        event.preventDefault();
        pick(active);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        close();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      submit();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  updateHint();

  return {
    el: form,
    input,
    focus: () => input.focus(),
    refreshHint: updateHint,
  };
}
