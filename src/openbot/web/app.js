// Entry point: the shell (navigation, theme, connection state, acting actor) and a hash router.
//   #/inbox[/unread|/action]   #/threads   #/t/<thread id>   #/bots[/<handle>]   #/activity   #/automations[/<id>]   #/drafts[/sent|/rejected]   #/disposals

import { h, clear, toast } from "/web/dom.js";
import { describeError, ApiError, api } from "/web/api.js";
import { live } from "/web/live.js";
import { store } from "/web/store.js";
import * as inbox from "/web/inbox.js";
import * as threads from "/web/threads.js";
import * as thread from "/web/thread.js";
import * as bots from "/web/bots.js";
import * as activity from "/web/activity.js";
import * as automations from "/web/automations.js";
import * as webhooks from "/web/webhooks.js";
import * as drafts from "/web/drafts.js";
import * as disposals from "/web/disposals.js";

const view = document.getElementById("view");
let unmount = null;
let firstViewReady = Promise.resolve();
let currentKey = "";

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [pathPart, query = ""] = raw.split("?");
  const parts = pathPart.split("/").filter(Boolean).map(decodeURIComponent);
  const params = Object.fromEntries(new URLSearchParams(query));
  const name = parts[0] || "inbox";
  return { name, parts, params };
}

const ROUTES = {
  inbox: { nav: "inbox", module: inbox, title: "Inbox" },
  threads: { nav: "threads", module: threads, title: "Threads" },
  t: { nav: "threads", module: thread, title: "Thread" },
  bots: { nav: "bots", module: bots, title: "Bots" },
  activity: { nav: "activity", module: activity, title: "Activity" },
  automations: { nav: "automations", module: automations, title: "Automations" },
  webhooks: { nav: "activity", module: webhooks, title: "Webhook deliveries" },
  disposals: { nav: "activity", module: disposals, title: "Dropped triggers" },
  drafts: { nav: "drafts", module: drafts, title: "Drafts" },
};

function route() {
  const { name, parts, params } = parseRoute();
  const entry = ROUTES[name] || ROUTES.inbox;
  const key = location.hash;
  if (key === currentKey && unmount) return;
  // Same view, different sub-route: let the view handle it when it can (keeps scroll and state).
  if (unmount && unmount.route && unmount.view === name) {
    currentKey = key;
    unmount.route(parts, params);
    return;
  }
  currentKey = key;
  if (unmount) {
    try {
      unmount();
    } catch (error) {
      console.warn("unmount failed", error);
    }
  }
  clear(view);
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (link.dataset.nav === entry.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${entry.title} · OpenBot`;
  const result = entry.module.mount(view, parts, params);
  unmount = typeof result === "function" ? result : () => {};
  if (result && result.route) unmount.route = result.route;
  firstViewReady = (result && result.ready) || Promise.resolve();
  unmount.view = name;
}

// ---- theme -------------------------------------------------------------------------------------

function effectiveTheme() {
  const explicit = document.documentElement.dataset.theme;
  if (explicit) return explicit;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function syncThemeButton() {
  const button = document.getElementById("theme-toggle");
  const next = effectiveTheme() === "dark" ? "light" : "dark";
  button.setAttribute("aria-label", `Switch to ${next} theme`);
  button.dataset.theme = effectiveTheme();
}

document.getElementById("theme-toggle").addEventListener("click", () => {
  const next = effectiveTheme() === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  localStorage.setItem("openbot.theme", next);
  syncThemeButton();
});
syncThemeButton();

// The top bar's real height (on a phone its navigation wraps onto a second line): what the thread
// view's height and the toasts' offset are computed from.
const topbar = document.querySelector(".topbar");
if (topbar && "ResizeObserver" in window) {
  new ResizeObserver(() => document.documentElement.style.setProperty("--topbar-h", `${topbar.offsetHeight}px`)).observe(topbar);
}

// ---- connection indicator ------------------------------------------------------------------------

const conn = document.getElementById("conn");
const LABELS = { connecting: "Connecting…", live: "Live", offline: "Reconnecting…" };
live.on("status", ({ state }) => {
  conn.dataset.state = state;
  conn.querySelector(".conn-label").textContent = LABELS[state] || state;
});

// A revoked token ends the event stream: ask for a new token (the same dialog as any 401), then
// load the page again, since the new token may act as someone else or be the admin's.
live.on("unauthorized", () => {
  toast("This page's token was revoked.", "error");
  api.whoami().then(() => location.reload(), () => {});
});

// ---- acting actor + inbox badge --------------------------------------------------------------------

const actorSelect = document.getElementById("actor-select");
function renderActors() {
  const humans = store.pinned ? store.humans().filter((a) => a.handle === store.pinned) : store.humans();
  clear(actorSelect);
  for (const actor of humans) {
    actorSelect.appendChild(h("option", { value: actor.handle, selected: actor.handle === store.actor }, `@${actor.handle}`));
  }
  actorSelect.closest(".actor-pick").hidden = humans.length < 2;
}
actorSelect.addEventListener("change", () => store.setActor(actorSelect.value));
store.on("actors", renderActors);

// The badge's number is the number of threads with unread messages: the Unread tab's count, the
// same set it lists (it once summed unread messages and questions, and said 10 beside a tab of 2).
// With nothing unread but questions waiting, it shows "!" instead of a number.
const badge = document.getElementById("nav-inbox-badge");
store.on("threads", () => {
  let unread = 0;
  let action = 0;
  for (const t of store.threads.values()) {
    if (t.unread > 0) unread += 1;
    action += t.needs_action || 0;
  }
  badge.hidden = unread + action === 0;
  badge.textContent = unread ? String(unread) : "!";
  badge.classList.toggle("badge-action", action > 0);
  const label = `${unread} thread${unread === 1 ? "" : "s"} with unread messages${action ? `, ${action} question${action === 1 ? "" : "s"} waiting for you` : ""}`;
  badge.setAttribute("aria-label", label);
  badge.title = label;
});

drafts.watchDraftsBadge(document.getElementById("nav-drafts-badge"));

// A request that fails because the server is down is already shown by the connection
// indicator; it is not a programming error.
window.addEventListener("unhandledrejection", (event) => {
  if (event.reason instanceof ApiError && event.reason.code === "network") event.preventDefault();
});

// ---- boot ----------------------------------------------------------------------------------------

window.addEventListener("hashchange", route);
route();
// The shared caches load once the first view has its data (they compete for the same server,
// and a deep link to a long thread should paint first), but never later than 400 ms.
// The stream opens once REST works (a 401 asks for the token first), so EventSource never
// hammers a server that refuses it.
Promise.race([firstViewReady.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 400))])
  .then(() => store.load())
  .then(() => live.start())
  .catch((error) => {
    toast(`Could not load: ${describeError(error)}`, "error");
    live.start();
  });
