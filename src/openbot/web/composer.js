// The message composer: Enter sends, Shift+Enter adds a line, "@" opens an autocomplete of
// handles (the thread's participants first, then the rest of the team). ARIA combobox pattern.
// After a post whose mentions named nobody, a dismissible notice says so; its suggestion puts
// the corrected text back in the box.

import { h, clear, nextId, avatar } from "/web/dom.js";

const MENTION_BEFORE_CARET = /(^|[^a-z0-9_@-])@([a-z0-9_-]{0,32})$/i;
const MENTIONS = /(?:^|[^a-z0-9_@-])@([a-z0-9_-]{2,32})/gi;

/**
 * createComposer({ handles: () => [{handle, kind, name, inThread}], recipients: (mentions) => string,
 *                  onSend: async (text) => post response | void, label }) → { el, input, focus(), refreshHint() }
 */
export function createComposer(options) {
  return new Composer(options);
}

class Composer {
  constructor({ handles, recipients, onSend, label = "Message" }) {
    this.recipients = recipients;
    this.onSend = onSend;
    this.sending = false;
    const inputId = nextId("composer");
    const listId = nextId("mentions");
    const hintId = nextId("hint");
    this.input = h("textarea.composer-input", {
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
    this.mentions = new MentionList(this.input, listId, handles, () => this.edited());
    this.sendButton = h("button.primary.send", { type: "submit", "aria-label": "Send message" }, "Send");
    this.hint = h("div.composer-hint", { id: hintId });
    this.notice = h("div.composer-notice", { role: "status", hidden: true });
    this.el = h(
      "form.composer",
      { "aria-label": "Compose a message" },
      this.notice,
      h("label.visually-hidden", { for: inputId }, label),
      h("div.composer-box", this.mentions.list, this.input, this.sendButton),
      this.hint,
    );
    this.input.addEventListener("input", () => {
      this.autosize();
      this.mentions.refresh();
      this.refreshHint();
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.isComposing || this.mentions.onKey(event)) return;
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        this.submit();
      }
    });
    this.el.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
    this.refreshHint();
  }

  focus() {
    this.input.focus();
  }

  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 220)}px`;
  }

  refreshHint() {
    const mentioned = [...this.input.value.matchAll(MENTIONS)].map((m) => m[1].toLowerCase());
    this.hint.textContent = this.recipients ? this.recipients(mentioned) : "";
  }

  showUnknown(unknown, sent = "", addressed = undefined) {
    clear(this.notice);
    this.notice.hidden = !unknown.length;
    if (unknown.length) this.notice.append(...unknownNotice(this, unknown, sent, addressed));
  }

  /** Put the sent text back with the mistyped mention replaced by the suggestion. */
  useSuggestion(sent, { handle, suggestion }) {
    const mention = new RegExp(`(^|[^a-z0-9_@.-])@${handle}(?![a-z0-9_-])`, "gi");
    this.input.value = sent.replace(mention, `$1@${suggestion}`);
    this.showUnknown([]);
    this.edited();
    this.input.focus();
  }

  /** The text changed other than by typing (a mention was picked, or it was sent). */
  edited() {
    this.refreshHint();
    this.autosize();
  }

  async submit() {
    const text = this.input.value.trim();
    if (!text || this.sending) return;
    this.sending = true;
    this.sendButton.disabled = true;
    try {
      const result = await this.onSend(text);
      this.showUnknown(result?.unknown_mentions || [], text, result?.addressed);
      this.input.value = "";
      this.autosize();
      this.refreshHint();
    } catch {
      /* onSend reported it; keep the text so nothing is lost */
    } finally {
      this.sending = false;
      this.sendButton.disabled = false;
      this.input.focus();
    }
  }
}

/** After a post: which mentions named nobody, each suggestion a button that fixes the draft. */
function unknownNotice(composer, unknown, sent, addressed) {
  const items = unknown.map((u, i) =>
    h(
      "span.unknown-mention",
      i ? "; " : null,
      `@${u.handle} is not a member`,
      u.suggestion
        ? [" — did you mean ", h("button.link-button", { type: "button", onclick: () => composer.useSuggestion(sent, u) }, `@${u.suggestion}`), "?"]
        : null,
    ),
  );
  const last = unknown[unknown.length - 1];
  const end = last && !last.suggestion ? "." : ""; // a suggestion ends in its own "?"
  const nobody = addressed && !addressed.length ? " The message reached no bot." : "";
  return [
    h("span.composer-notice-text", items, end, nobody),
    h("button.icon-button.dismiss", { type: "button", "aria-label": "Dismiss", onclick: () => composer.showUnknown([]) }, "×"),
  ];
}

/** The "@" autocomplete under a textarea: a listbox of handles, picked by keyboard or mouse. */
class MentionList {
  constructor(input, listId, handles, onPick) {
    this.input = input;
    this.listId = listId;
    this.handles = handles;
    this.onPick = onPick;
    this.options = [];
    this.active = -1;
    this.list = h("ul.mention-list", { id: listId, role: "listbox", "aria-label": "Mention suggestions", hidden: true });
    input.addEventListener("click", () => this.refresh());
    input.addEventListener("blur", () => setTimeout(() => this.close(), 100));
  }

  close() {
    this.list.hidden = true;
    this.options = [];
    this.active = -1;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  /** The partial handle typed after an "@" just before the caret, or null. */
  query() {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const m = before.match(MENTION_BEFORE_CARET);
    return m ? m[2].toLowerCase() : null;
  }

  /** Handles that start with q, then those that contain it; the thread's participants first. */
  rank(q) {
    const all = this.handles();
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
    return ranked.sort((a, b) => Number(Boolean(b.inThread)) - Number(Boolean(a.inThread))).slice(0, 8);
  }

  refresh() {
    const q = this.query();
    if (q === null || this.input.selectionStart !== this.input.selectionEnd) return this.close();
    this.options = this.rank(q);
    if (!this.options.length) return this.close();
    this.active = 0;
    clear(this.list);
    this.options.forEach((a, i) => this.list.appendChild(this.optionEl(a, i)));
    this.list.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.highlight();
  }

  optionEl(a, i) {
    return h(
      "li.mention-option",
      {
        id: `${this.listId}-${i}`,
        role: "option",
        "aria-selected": i === this.active ? "true" : "false",
        onmousedown: (event) => {
          event.preventDefault(); // keep focus in the textarea
          this.pick(i);
        },
      },
      avatar(a.handle, a.kind),
      h("span.mention-handle", `@${a.handle}`),
      a.name && a.name !== a.handle ? h("span.muted", a.name) : null,
      h("span.mention-kind", a.inThread ? "in thread" : a.kind),
    );
  }

  highlight() {
    [...this.list.children].forEach((li, i) => li.setAttribute("aria-selected", i === this.active ? "true" : "false"));
    if (this.active >= 0) {
      this.input.setAttribute("aria-activedescendant", `${this.listId}-${this.active}`);
      this.list.children[this.active]?.scrollIntoView({ block: "nearest" });
    }
  }

  pick(i) {
    const option = this.options[i];
    if (!option) return;
    const input = this.input;
    const caret = input.selectionStart;
    const before = input.value.slice(0, caret);
    const after = input.value.slice(caret);
    const start = before.lastIndexOf("@");
    const insert = `@${option.handle} `;
    input.value = before.slice(0, start) + insert + after.replace(/^[a-z0-9_-]*/i, "").replace(/^ /, "");
    const pos = start + insert.length;
    input.setSelectionRange(pos, pos);
    this.close();
    this.onPick();
  }

  /** Arrow keys, Enter/Tab and Escape while the list is open; true when the key was used. */
  onKey(event) {
    if (this.list.hidden || !this.options.length) return false;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.options.length) % this.options.length;
      this.highlight();
    } else if (event.key === "Enter" || event.key === "Tab") {
      this.pick(this.active);
    } else if (event.key === "Escape") {
      this.close();
    } else {
      return false;
    }
    event.preventDefault();
    return true;
  }
}
