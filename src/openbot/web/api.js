// The HTTP contract (/api/v1) as a handful of functions. A 401 asks for the token once,
// keeps it in localStorage and retries the request.

const TOKEN_KEY = "openbot.token";
export const BASE = "/api/v1";

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* private mode: the token lives for this page only */
  }
  memoryToken = token;
}

let memoryToken = "";
let pendingPrompt = null;

function currentToken() {
  return getToken() || memoryToken;
}

/** Show the token dialog (once, however many requests got a 401). Resolves to the token. */
function askToken(rejected) {
  if (pendingPrompt) return pendingPrompt;
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  const hint = document.getElementById("token-hint");
  pendingPrompt = new Promise((resolve) => {
    hint.textContent = rejected
      ? "That token was not accepted: it is wrong, or it was revoked. Check OPENBOT_API_TOKEN on the server, or ask its admin for a new token."
      : "This server requires an API token (OPENBOT_API_TOKEN).";
    input.value = "";
    const form = dialog.querySelector("form");
    const done = (token) => {
      form.removeEventListener("submit", onSubmit);
      dialog.removeEventListener("cancel", onCancel);
      if (dialog.open) dialog.close();
      pendingPrompt = null;
      resolve(token);
    };
    const onSubmit = (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (token) {
        setToken(token);
        done(token);
      }
    };
    const onCancel = (event) => {
      event.preventDefault(); // the page is useless without the token
    };
    form.addEventListener("submit", onSubmit);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
    input.focus();
  });
  return pendingPrompt;
}

export async function request(method, path, body, { signal } = {}) {
  let rejected = false;
  for (;;) {
    const headers = { Accept: "application/json" };
    const token = currentToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(BASE + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw new ApiError(0, "network", "The server cannot be reached.", null);
    }
    if (response.status === 401) {
      if (token) setToken("");
      await askToken(rejected || Boolean(token));
      rejected = true;
      continue;
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      const err = (data && data.error) || {};
      throw new ApiError(response.status, err.code || "http_error", err.message || response.statusText, err.details);
    }
    return data;
  }
}

function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") p.set(k, v);
  }
  const s = p.toString();
  return s ? `?${s}` : "";
}

const enc = encodeURIComponent;

export const api = {
  info: () => request("GET", ""),
  status: () => request("GET", "/status"),
  whoami: () => request("GET", "/whoami"),

  bots: () => request("GET", "/bots").then((r) => r.items),
  bot: (handle) => request("GET", `/bots/${enc(handle)}`),
  createBot: (body) => request("POST", "/bots", body),
  updateBot: (handle, patch) => request("PATCH", `/bots/${enc(handle)}`, patch),
  tools: () => request("GET", "/tools").then((r) => r.items),
  mcpServers: () => request("GET", "/mcp").then((r) => r.items),
  deleteBot: (handle) => request("DELETE", `/bots/${enc(handle)}`),
  actors: () => request("GET", "/actors").then((r) => r.items),

  inbox: (actor, params) => request("GET", `/actors/${enc(actor)}/inbox${qs(params)}`).then((r) => r.items),
  ackThread: (actor, threadId) => request("POST", "/inbox/ack", { actor, thread_id: threadId }),
  ackItem: (id) => request("POST", `/inbox/${enc(id)}/ack`),

  threads: (params) => request("GET", `/threads${qs(params)}`).then((r) => r.items),
  thread: (id, params) => request("GET", `/threads/${enc(id)}${qs(params)}`),
  createThread: (body) => request("POST", "/threads", body),
  deleteThread: (id) => request("DELETE", `/threads/${enc(id)}`),

  /** Every message after `after`, following pages (oldest first). */
  async messages(threadId, { after, limit = 5000, signal } = {}) {
    const all = [];
    for (;;) {
      const page = await request("GET", `/threads/${enc(threadId)}/messages${qs({ after, limit })}`, undefined, {
        signal,
      });
      const items = page.items || [];
      all.push(...items);
      if (!items.length || (!page.next && items.length < limit)) return all;
      after = items[items.length - 1].id;
    }
  },
  postMessage: (threadId, body) => request("POST", `/threads/${enc(threadId)}/messages`, body),

  runs: (params) => request("GET", `/runs${qs(params)}`).then((r) => r.items),
  run: (id) => request("GET", `/runs/${enc(id)}`),
  resume: (id, body) => request("POST", `/runs/${enc(id)}/resume`, body),
  cancel: (id) => request("POST", `/runs/${enc(id)}/cancel`),

  activity: (params) => request("GET", `/activity${qs(params)}`).then((r) => r.items),

  automations: (params) => request("GET", `/automations${qs(params)}`).then((r) => r.items),
  createAutomation: (body) => request("POST", "/automations", body),
  updateAutomation: (id, patch) => request("PATCH", `/automations/${enc(id)}`, patch),
  deleteAutomation: (id) => request("DELETE", `/automations/${enc(id)}`),
  runAutomation: (id) => request("POST", `/automations/${enc(id)}/run`),
  occurrences: (id) => request("GET", `/automations/${enc(id)}/occurrences`).then((r) => r.items),

  drafts: (params) => request("GET", `/drafts${qs(params)}`).then((r) => r.items),
  approveDraft: (id, body) => request("POST", `/drafts/${enc(id)}/approve`, body || {}),
  rejectDraft: (id, body) => request("POST", `/drafts/${enc(id)}/reject`, body || {}),
};

export function eventsUrl(since) {
  return `${BASE}/events${qs({ since, token: currentToken() })}`;
}

export function describeError(error) {
  if (error instanceof ApiError) {
    // The message is written to be read; structured details are for programs, not for people.
    const details = typeof error.details === "string" ? ` ${error.details}` : "";
    return `${error.message || error.code}${details}`;
  }
  return String(error && error.message ? error.message : error);
}
