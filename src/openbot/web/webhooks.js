// Webhook deliveries to external actors (a sub-view of Activity): each delivery with its status,
// attempts, last error and next attempt, filtered by actor and status (kept in the URL), and a
// Retry button for what was not delivered. Live: `webhook.updated` reloads the list.
//   #/webhooks[?actor=<handle>&status=pending|delivered|failed]

import { h, fill, clear, timeEl, absTime, debounce, toast } from "/web/dom.js";
import { request, describeError } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";

const STATUSES = ["pending", "delivered", "failed"];
// The existing pill colours: delivered is good news, pending is waiting, failed needs a person.
const PILL = { delivered: "state-running", pending: "state-waiting_human", failed: "state-disabled" };

function query(filters) {
  const p = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
  const s = p.toString();
  return s ? `?${s}` : "";
}

export function mount(container, parts, params) {
  const filters = { actor: params.actor || "", status: params.status || "" };
  const rows = h("tbody");
  const status = h("span.muted.small", { role: "status" });
  const actorSel = h("select", { id: "webhooks-actor" });
  const statusSel = h(
    "select",
    { id: "webhooks-status" },
    h("option", { value: "" }, "Any status"),
    STATUSES.map((s) => h("option", { value: s }, s)),
  );
  container.append(
    h(
      "section.page.webhooks",
      { "aria-labelledby": "webhooks-title" },
      h(
        "div.page-head",
        h("h1", { id: "webhooks-title" }, "Webhook deliveries"),
        status,
        h("span.spacer"),
        h("a.small", { href: "#/activity" }, "Activity timeline"),
      ),
      h("p.muted.small", "What reached external actors' mailboxes, POSTed to their webhook URL. Failed attempts are retried on a schedule, then marked failed."),
      h(
        "form.filters",
        { "aria-label": "Filters", onsubmit: (e) => e.preventDefault() },
        h("div.filter", h("label", { for: "webhooks-actor" }, "Actor"), actorSel),
        h("div.filter", h("label", { for: "webhooks-status" }, "Status"), statusSel),
      ),
      h(
        "div.table-wrap",
        h(
          "table.activity-table.webhook-table",
          h("caption.visually-hidden", "Webhook deliveries, newest first"),
          h("thead", h("tr", ["Created", "Actor", "Type", "Status", "Attempts", "Last error", "Next attempt", "Thread", ""].map((c) => h("th", { scope: "col" }, c)))),
          rows,
        ),
      ),
    ),
  );

  function fillActors() {
    const externals = [...store.actors.values()].filter((a) => a.kind === "external").sort((a, b) => a.handle.localeCompare(b.handle));
    fill(actorSel, h("option", { value: "" }, "All external actors"), externals.map((a) => h("option", { value: a.handle }, `@${a.handle}`)));
    if (filters.actor && !externals.some((a) => a.handle === filters.actor)) actorSel.append(h("option", { value: filters.actor }, `@${filters.actor}`));
    actorSel.value = filters.actor;
  }

  function row(d) {
    const thread = store.threads.get(d.thread_id);
    const retry = h("button.small", { type: "button", hidden: d.status === "delivered", "aria-label": `Retry delivery ${d.id}` }, "Retry");
    retry.addEventListener("click", async () => {
      retry.disabled = true;
      try {
        await request("POST", `/webhooks/deliveries/${encodeURIComponent(d.id)}/retry`);
        toast("Delivery queued for another attempt");
        load();
      } catch (error) {
        toast(`Retry failed: ${describeError(error)}`, "error");
        retry.disabled = false;
      }
    });
    return h(
      "tr",
      { "data-delivery": d.id, "data-status": d.status },
      h("td", timeEl(d.created_at, absTime)),
      h("td", `@${d.actor}`),
      h("td", d.type),
      h("td", h(`span.state-pill.${PILL[d.status] || "state-idle"}`, d.status)),
      h("td.num", String(d.attempts)),
      h("td.webhook-error", d.last_error || ""),
      h("td", d.next_attempt_at ? timeEl(d.next_attempt_at, absTime) : ""),
      h("td", h("a", { href: `#/t/${encodeURIComponent(d.thread_id)}` }, (thread && thread.title) || d.thread_id)),
      h("td", retry),
    );
  }

  let seq = 0;
  async function load() {
    const mine = ++seq;
    try {
      const page = await request("GET", `/webhooks/deliveries${query(filters)}`);
      if (mine !== seq) return;
      clear(rows);
      if (!page.items.length) rows.append(h("tr", h("td.empty", { colSpan: 9 }, "No deliveries yet.")));
      for (const d of page.items) rows.append(row(d));
      status.textContent = "";
    } catch (error) {
      status.textContent = `Could not load: ${describeError(error)}`;
    }
  }

  function apply() {
    filters.actor = actorSel.value;
    filters.status = statusSel.value;
    history.replaceState(null, "", `#/webhooks${query(filters)}`);
    load();
  }
  actorSel.addEventListener("change", apply);
  statusSel.addEventListener("change", apply);
  statusSel.value = filters.status;
  fillActors();
  const reload = debounce(load, 300);
  const offs = [
    live.on("webhook.updated", reload),
    live.on("resync", reload),
    store.on("actors", fillActors),
  ];
  const ready = load();
  const unmount = () => offs.forEach((off) => off());
  unmount.ready = ready;
  return unmount;
}
