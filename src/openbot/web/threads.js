// Threads: the list (last activity first, search by title) and the new-thread dialog.

import { h, clear, debounce, relTime, absTime, avatar, nextId } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { store } from "/web/store.js";

/** One thread as a list row (shared with the inbox). */
export function threadRow(t) {
  const participants = t.participants || [];
  const unread = t.unread || 0;
  const action = t.needs_action || 0;
  const when = t.last_message_at || t.created_at;
  const label = [
    t.title || "Untitled thread",
    unread ? `${unread} unread` : "",
    action ? `${action} need${action === 1 ? "s" : ""} action` : "",
  ]
    .filter(Boolean)
    .join(", ");
  return h(
    "li.thread-row",
    { class: unread ? "is-unread" : "", dataset: { threadId: t.id } },
    h(
      "a.thread-link",
      { href: `#/t/${encodeURIComponent(t.id)}`, "aria-label": label },
      h(
        "span.thread-avatars",
        { "aria-hidden": "true" },
        participants.filter((p) => p.kind !== "human").slice(0, 3).map((p) => avatar(p.handle, p.kind)),
      ),
      h(
        "span.thread-main",
        h("span.thread-name", t.title || "Untitled thread"),
        h(
          "span.thread-sub",
          h("span.chip", t.kind || "task"),
          participants.length ? ` ${participants.map((p) => `@${p.handle}`).join(" ")}` : "",
        ),
      ),
      h(
        "span.thread-side",
        h("time", { dateTime: when || "", title: absTime(when) }, relTime(when)),
        h(
          "span.thread-badges",
          action ? h("span.badge.badge-action", { title: "Needs action" }, `${action} action`) : null,
          unread ? h("span.badge", { title: "Unread" }, String(unread)) : null,
        ),
      ),
    ),
  );
}

export function mount(container, parts, params) {
  const searchId = nextId("search");
  const search = h("input", { id: searchId, type: "search", placeholder: "Search by title", autocomplete: "off", value: params.q || "" });
  const list = h("ul.thread-list", { "aria-label": "Threads" });
  const status = h("p.muted.small", { role: "status" });
  const newButton = h("button.primary", { type: "button", onclick: () => openNewThread() }, "New thread");
  container.append(
    h(
      "section.page.threads",
      { "aria-labelledby": "threads-title" },
      h("div.page-head", h("h1", { id: "threads-title" }, "Threads"), h("span.spacer"), newButton),
      h("div.searchbar", h("label.visually-hidden", { for: searchId }, "Search threads by title"), search),
      status,
      list,
    ),
  );

  let results = null; // null: show the live store list; array: search results
  let seq = 0;

  function render() {
    const items = (results || [...store.threads.values()]).slice().sort((a, b) =>
      (b.last_message_at || b.created_at || "").localeCompare(a.last_message_at || a.created_at || ""),
    );
    clear(list);
    if (!items.length) {
      list.append(h("li.empty", results ? `No thread matches “${search.value}”.` : "No threads yet. Create one to get started."));
    } else {
      for (const t of items) list.append(threadRow(store.threads.get(t.id) ? { ...t, ...store.threads.get(t.id) } : t));
    }
    status.textContent = results ? `${items.length} match${items.length === 1 ? "" : "es"}` : "";
  }

  const runSearch = debounce(async () => {
    const q = search.value.trim();
    const mine = ++seq;
    if (!q) {
      results = null;
      render();
      return;
    }
    try {
      const found = await api.threads({ q, actor: store.actor });
      if (mine === seq) {
        results = found;
        render();
      }
    } catch (error) {
      status.textContent = `Search failed: ${describeError(error)}`;
    }
  }, 200);
  search.addEventListener("input", runSearch);
  const off = store.on("threads", () => render());
  render();
  if (search.value) runSearch();
  if (params.new) openNewThread();

  return () => off();
}

/** The new-thread dialog; navigates to the thread when created. */
export function openNewThread() {
  const f = newThreadForm();
  const dialog = h("dialog.new-thread", { "aria-labelledby": "new-thread-title" }, f.form);
  document.body.append(dialog);
  const close = () => {
    dialog.close();
    dialog.remove();
  };
  f.cancel.addEventListener("click", close);
  dialog.addEventListener("close", () => dialog.remove());
  // Picking a default bot makes it a participant too.
  f.defaultBot.addEventListener("change", () => {
    const box = f.boxes.find((i) => i.value === f.defaultBot.value);
    if (box) box.checked = true;
  });
  f.form.addEventListener("submit", async (event) => {
    event.preventDefault();
    f.error.hidden = true;
    f.create.disabled = true;
    const participants = f.boxes.filter((i) => i.checked).map((i) => i.value);
    const body = { title: f.title.value.trim(), kind: f.kind.value, participants: [store.actor, ...participants] };
    if (f.defaultBot.value) body.default_bot = f.defaultBot.value;
    try {
      const thread = await api.createThread(body);
      store.putThread(thread);
      close();
      location.hash = `#/t/${encodeURIComponent(thread.id)}`;
    } catch (err) {
      f.create.disabled = false;
      f.error.hidden = false;
      f.error.textContent = describeError(err);
    }
  });
  dialog.showModal();
  f.title.focus();
  return dialog;
}

function newThreadForm() {
  const bots = [...store.bots.values()].sort((a, b) => a.handle.localeCompare(b.handle));
  const humans = store.humans();
  const ids = { title: nextId("title"), kind: nextId("kind"), bot: nextId("bot") };
  const title = h("input", { id: ids.title, type: "text", required: true, placeholder: "e.g. Ship the release notes", maxLength: 500 });
  const kind = h(
    "select",
    { id: ids.kind },
    h("option", { value: "task" }, "Task — a piece of work"),
    h("option", { value: "channel" }, "Channel — a shared room"),
  );
  const defaultBot = h(
    "select",
    { id: ids.bot },
    h("option", { value: "" }, "(none: @chief_of_staff)"),
    bots.map((b) => h("option", { value: b.handle }, `@${b.handle}`)),
  );
  const checks = [...bots, ...humans.filter((a) => a.handle !== store.actor)].map((a) =>
    h(
      "label.check",
      h("input", { type: "checkbox", value: a.handle, name: "participants" }),
      avatar(a.handle, a.kind || "bot"),
      h("span", `@${a.handle}`),
    ),
  );
  const error = h("p.form-error", { role: "alert", hidden: true });
  const create = h("button.primary", { type: "submit" }, "Create thread");
  const cancel = h("button", { type: "button" }, "Cancel");
  const form = h(
    "form.stack",
    { method: "dialog" },
    h("h2", { id: "new-thread-title" }, "New thread"),
    h("label", { for: ids.title }, "Title"),
    title,
    h("fieldset.participants", h("legend", "Participants"), h("div.check-grid", checks)),
    h("div.grid2", h("div.stack.tight", h("label", { for: ids.bot }, "Default bot"), defaultBot), h("div.stack.tight", h("label", { for: ids.kind }, "Kind"), kind)),
    error,
    h("div.row.end", cancel, create),
  );
  const boxes = checks.map((l) => l.querySelector("input"));
  return { form, title, kind, defaultBot, boxes, error, create, cancel };
}
