// The live connection: one EventSource on /api/v1/events, reconnecting with ?since=<last id>
// so no durable event is lost across a network blip or a server restart. Views subscribe with
// live.on(type, fn) and get back an unsubscribe function.
//
// Besides the server's event types the bus emits:
//   "status"      {state: "connecting" | "live" | "offline"}
//   "resync"      on every (re)connect and after a `reset`: views re-read what they show over
//                 REST, incrementally where they can (token deltas are live-only, the first
//                 connect races the views' initial loads, and `reset` means replay was impossible)
//   "unauthorized" the server ended the stream because the token it was opened with was revoked;
//                 the stream stays closed until restart()

import { eventsUrl } from "/web/api.js";

const EVENT_TYPES = [
  "message.created",
  "run.updated",
  "run.event",
  "inbox.updated",
  "thread.updated",
  "bot.updated",
  "activity.created",
  "automation.updated",
  "automation.fired",
  "webhook.updated",
  "draft.updated",
  "text.delta",
  "reset",
  "unauthorized",
];

class Live {
  constructor() {
    this.handlers = new Map();
    this.lastId = null;
    this.source = null;
    this.state = "connecting";
    this.retryMs = 500;
    this.retryTimer = null;
    this.everOpened = false;
  }

  on(type, fn) {
    if (!this.handlers.has(type)) this.handlers.set(type, new Set());
    this.handlers.get(type).add(fn);
    return () => this.handlers.get(type)?.delete(fn);
  }

  emit(type, data, meta) {
    for (const fn of [...(this.handlers.get(type) || [])]) {
      try {
        fn(data, meta);
      } catch (error) {
        console.warn(`handler for ${type} failed`, error);
      }
    }
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.emit("status", { state });
  }

  start() {
    if (this.source) return;
    this.connect();
    window.addEventListener("online", () => this.reconnectSoon(0));
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const source = new EventSource(eventsUrl(this.lastId ?? undefined));
    this.source = source;
    source.onopen = () => {
      if (source !== this.source) return;
      this.retryMs = 500;
      this.setState("live");
      // Also on the first open: whatever happened between a view's REST load and this moment
      // is caught up by the views' (incremental) resync.
      this.emit("resync", { reason: this.everOpened ? "reconnected" : "connected" });
      this.everOpened = true;
    };
    source.onerror = () => {
      if (source !== this.source) return;
      // Take reconnection into our own hands so the URL always carries the latest id.
      source.close();
      this.source = null;
      this.setState(this.everOpened ? "offline" : "connecting");
      this.reconnectSoon(this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 5000);
    };
    for (const type of EVENT_TYPES) {
      source.addEventListener(type, (event) => this.dispatch(source, type, event));
    }
  }

  reconnectSoon(ms) {
    if (this.retryTimer) {
      if (ms !== 0) return;
      clearTimeout(this.retryTimer);
    }
    if (this.source && ms === 0) return;
    this.retryTimer = setTimeout(() => this.connect(), ms);
  }

  dispatch(source, type, event) {
    if (source !== this.source) return;
    // EventSource keeps the last `id:` for events that carry none (live-only ones such as
    // text.delta), so only a changed lastEventId marks a durable event.
    let id = null;
    if (event.lastEventId && event.lastEventId !== source.lastRawId) {
      source.lastRawId = event.lastEventId;
      const n = Number(event.lastEventId);
      if (Number.isFinite(n)) {
        if (this.lastId !== null && n <= this.lastId && type !== "reset") return; // already seen
        this.lastId = n;
        id = n;
      }
    }
    let data = null;
    try {
      data = event.data ? JSON.parse(event.data) : null;
    } catch {
      data = event.data;
    }
    if (type === "unauthorized") {
      // Reconnecting with this token would only be refused: stop here and let the app ask.
      source.close();
      this.source = null;
      this.setState("offline");
      this.emit("unauthorized", data);
      return;
    }
    if (type === "reset") {
      this.emit("reset", data);
      this.emit("resync", { reason: "reset" });
      return;
    }
    this.emit(type, data, { id });
  }

  /** Reopen with the current token (after the user typed one). */
  restart() {
    if (this.source) this.source.close();
    this.source = null;
    this.connect();
  }
}

export const live = new Live();
