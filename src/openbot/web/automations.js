// Automations: scheduled posts to bots. The list (schedule, next and last run, on/off, run now,
// edit), the selected automation's history of occurrences, and the new/edit dialog.
//   #/automations   #/automations/<id>

import { h, fill, clear, timeEl, absTime, relTime, nextId, toast } from "/web/dom.js";
import { api, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";

const STATUS_LABEL = { fired: "fired", caught_up: "caught up", skipped: "skipped", failed: "failed" };

export function schedule(a) {
  if (a.cron) return a.timezone && a.timezone !== "UTC" ? `${a.cron} (${a.timezone})` : `${a.cron} (UTC)`;
  return `once, ${absTime(a.at)}`;
}

export function mount(container, parts) {
  let selected = parts[1] || null;
  let items = [];
  let loaded = false; // the list came from the server at least once
  const rows = h("tbody");
  const history = h("div.automation-history", { "aria-live": "polite" });
  const status = h("span.muted.small", { role: "status" });
  container.append(page(rows, history, status, () => openEditor(null, load)));

  // Loads and deletions take turns. A load that read the list before a deletion would otherwise
  // go on to ask for the deleted automation's history: a 404 the browser logs as an error.
  let tail = Promise.resolve();
  function serial(fn) {
    const run = tail.then(fn);
    tail = run.catch(() => {});
    return run;
  }

  function render() {
    clear(rows);
    // Empty only once the server said so: a failed load shows its error, never "none yet".
    if (loaded && !items.length) rows.append(h("tr", h("td.empty", { colSpan: 7 }, "No automations yet.")));
    for (const a of items) rows.append(row(a, a.id === selected, { load, select }));
  }

  const load = () => serial(loadNow);

  async function loadNow() {
    try {
      items = await api.automations();
      loaded = true;
      status.textContent = "";
    } catch (error) {
      status.textContent = `Could not load: ${describeError(error)}`;
    }
    render();
    await showHistory();
  }

  function select(id) {
    location.hash = id ? `#/automations/${encodeURIComponent(id)}` : "#/automations";
  }

  async function showHistory() {
    const a = items.find((x) => x.id === selected);
    if (!a) {
      fill(history, selected && loaded ? h("p.empty", `No automation ${selected}.`) : null);
      return;
    }
    let occurrences = [];
    try {
      occurrences = await api.occurrences(a.id);
    } catch (error) {
      fill(history, h("p.form-error", { role: "alert" }, describeError(error)));
      return;
    }
    fill(history, historyPanel(a, occurrences, { load, serial }));
  }

  const reload = () => load();
  const offs = [live.on("automation.updated", reload), live.on("automation.fired", reload), live.on("resync", reload)];
  const ready = load();
  const dispose = () => offs.forEach((off) => off());
  dispose.route = (newParts) => {
    selected = newParts[1] || null;
    render();
    serial(showHistory);
  };
  dispose.ready = ready;
  return dispose;
}

function page(rows, history, status, create) {
  return h(
    "section.page.automations",
    { "aria-labelledby": "automations-title" },
    h(
      "div.page-head",
      h("h1", { id: "automations-title" }, "Automations"),
      status,
      h("span.spacer"),
      h("button.primary", { type: "button", onclick: create }, "New automation"),
    ),
    h("p.muted.small", "Each firing posts the content as its owner to the bot, in its thread or a new one."),
    h(
      "div.table-wrap",
      h(
        "table.activity-table.automation-table",
        h("caption.visually-hidden", "Automations"),
        h("thead", h("tr", ["Automation", "Bot", "Schedule", "Next run", "Last run", "On", ""].map((c) => h("th", { scope: "col" }, c)))),
        rows,
      ),
    ),
    history,
  );
}

function row(a, selected, { load, select }) {
  const toggle = h("input", {
    type: "checkbox",
    checked: a.enabled,
    "aria-label": `Enabled: ${a.title || a.content}`,
    onchange: async (event) => {
      const enabled = event.target.checked;
      try {
        await api.updateAutomation(a.id, { enabled });
      } catch (error) {
        event.target.checked = !enabled;
        toast(describeError(error), "error");
      }
      load();
    },
  });
  const name = a.title || a.content;
  return h(
    "tr",
    { class: selected ? "selected" : "", dataset: { id: a.id } },
    h("td", h("a", { href: `#/automations/${encodeURIComponent(a.id)}`, "aria-current": selected ? "true" : null }, name.length > 60 ? `${name.slice(0, 60)}…` : name), a.kind === "heartbeat" ? h("span.chip", " heartbeat") : null),
    h("td", `@${a.bot}`),
    h("td.schedule", schedule(a)),
    h("td.next-run", a.next_run_at ? timeEl(a.next_run_at, absTime) : h("span.muted", a.enabled ? "—" : "off")),
    h("td", a.last_run_at ? timeEl(a.last_run_at, relTime) : h("span.muted", "never")),
    h("td", toggle),
    h(
      "td.nowrap",
      h("button.small", { type: "button", onclick: () => runNow(a, load, select) }, "Run now"),
      " ",
      h("button.small", { type: "button", onclick: () => openEditor(a, load) }, "Edit"),
    ),
  );
}

async function runNow(a, load, select) {
  try {
    const occurrence = await api.runAutomation(a.id);
    toast(`Fired: ${a.title || a.content}`);
    select(a.id);
    if (occurrence.status === "failed") toast(occurrence.error?.message || "the firing failed", "error");
  } catch (error) {
    toast(describeError(error), "error");
  }
  load();
}

function historyPanel(a, occurrences, { load, serial }) {
  const remove = async () => {
    if (!confirm(`Delete the automation "${a.title || a.content}"?`)) return;
    await serial(async () => {
      try {
        await api.deleteAutomation(a.id);
        location.hash = "#/automations";
      } catch (error) {
        toast(describeError(error), "error");
      }
    });
    load();
  };
  const list = h("ol.occurrence-list", { "aria-label": "History" });
  if (!occurrences.length) list.append(h("li.empty", "Not fired yet."));
  for (const o of occurrences) {
    const thread = o.thread_id ? h("a", { href: `#/t/${encodeURIComponent(o.thread_id)}` }, store.threadTitle(o.thread_id)) : null;
    list.append(
      h(
        "li.occurrence",
        { dataset: { status: o.status } },
        h("span.state-pill", { class: `occurrence-${o.status}` }, STATUS_LABEL[o.status] || o.status),
        " ",
        // When it fired ("Run now" fires off the schedule), else when it was due.
        o.fired_at ? h("span", "fired ", timeEl(o.fired_at, absTime)) : h("span", "due ", timeEl(o.scheduled_for, absTime)),
        thread ? [" · ", thread] : null,
        o.error ? h("span.muted", ` · ${o.error.message}`) : null,
      ),
    );
  }
  return h(
    "section.card.stack",
    { "aria-labelledby": "history-title" },
    h("div.row", h("h2", { id: "history-title" }, `History: ${a.title || a.content}`), h("span.spacer"), h("button.small.danger-outline", { type: "button", onclick: remove }, "Delete")),
    h("p.muted.small", `Owner @${a.owner} · catch-up after downtime: ${a.catch_up === "skip" ? "skip" : "fire once"}`),
    list,
  );
}

function field(label, input, help) {
  const id = input.id || (input.id = nextId("auto"));
  return h("div.field", h("label", { for: id }, label), input, help ? h("p.help", help) : null);
}

/** The dialog's inputs, filled from `a` (null: a new automation's defaults). */
function inputs(a) {
  const bots = [...store.bots.values()].map((b) => b.handle).sort();
  const threads = [...store.threads.values()].sort((x, y) => (x.title || "").localeCompare(y.title || ""));
  const option = (value, label, selected) => h("option", { value, selected }, label);
  return {
    bot: h("select", { disabled: Boolean(a) }, bots.map((b) => option(b, `@${b}`, a ? a.bot === b : false))),
    purpose: h(
      "select",
      { disabled: Boolean(a) },
      option("message", "A message to the bot", a?.kind !== "heartbeat"),
      option("heartbeat", "Heartbeat: review threads with open todos", a?.kind === "heartbeat"),
    ),
    title: h("input", { type: "text", value: a?.title || "", placeholder: "Morning summary" }),
    content: h("textarea", { rows: 3 }, a?.content || ""),
    kind: h("select", option("cron", "Repeating (cron)", !a || Boolean(a.cron)), option("at", "Once", Boolean(a && a.at))),
    cron: h("input", { type: "text", value: a?.cron || "0 9 * * 1-5", spellcheck: false }),
    at: h("input", { type: "datetime-local", value: a?.at ? a.at.slice(0, 16) : "" }),
    // A one-shot's `at` is shown in UTC, so it is read back in UTC.
    timezone: h("input", { type: "text", value: (!a?.at && a?.timezone) || "UTC", spellcheck: false }),
    thread: h("select", option("", "A new thread each time", false), threads.map((t) => option(t.id, t.title || t.id, a?.thread_id === t.id))),
    catchUp: h("select", option("once", "Fire once", a?.catch_up !== "skip"), option("skip", "Skip", a?.catch_up === "skip")),
  };
}

function bodyOf(i) {
  const body = { title: i.title.value.trim(), content: i.content.value, timezone: i.timezone.value.trim() || "UTC", catch_up: i.catchUp.value, thread_id: i.thread.value || null };
  if (i.kind.value === "cron") body.cron = i.cron.value.trim();
  else body.at = i.at.value;
  return body;
}

/** The new/edit dialog. `a` null: a new automation. */
export function openEditor(a, onSaved) {
  const i = inputs(a);
  const cronField = field("Cron", i.cron, "minute hour day month weekday, e.g. 0 9 * * 1-5");
  const atField = field("At", i.at, "read in the time zone below");
  const sync = () => {
    cronField.hidden = i.kind.value !== "cron";
    atField.hidden = i.kind.value !== "at";
  };
  i.kind.addEventListener("change", sync);
  sync();
  const error = h("p.form-error", { role: "alert", hidden: true });
  const cancel = h("button", { type: "button" }, "Cancel");
  const form = h(
    "form.stack",
    h("h2", { id: "automation-editor-title" }, a ? "Edit automation" : "New automation"),
    field("Bot", i.bot),
    field("Kind", i.purpose, "a heartbeat wakes the bot in each thread where its todo list has unfinished items"),
    field("Title", i.title),
    field("Content", i.content, "posted as you, addressed to the bot (a heartbeat has a default)"),
    field("Schedule", i.kind),
    cronField,
    atField,
    field("Time zone", i.timezone, "an IANA name, e.g. Europe/Paris"),
    field("Thread", i.thread),
    field("After downtime", i.catchUp),
    error,
    h("div.row.end", cancel, h("button.primary", { type: "submit" }, a ? "Save" : "Create")),
  );
  const dialog = h("dialog.automation-editor", { "aria-labelledby": "automation-editor-title" }, form);
  document.body.append(dialog);
  cancel.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => dialog.remove());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      if (a) await api.updateAutomation(a.id, bodyOf(i));
      else await api.createAutomation({ bot: i.bot.value, kind: i.purpose.value, ...bodyOf(i) });
      dialog.close();
      toast(a ? "Automation saved" : "Automation created");
      onSaved();
    } catch (err) {
      error.hidden = false;
      error.textContent = describeError(err);
    }
  });
  dialog.showModal();
  i.content.focus();
}
