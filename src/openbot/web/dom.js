// Small DOM toolkit: element builder, text rendering, time formatting. No framework.

/** h("button.primary", {onclick, "aria-label": "Send"}, "Send") → HTMLElement */
export function h(spec, attrs, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (value === false && !(key in el)) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      el.className = [el.className, value].filter(Boolean).join(" ");
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "style" && typeof value === "object") {
      for (const [prop, v] of Object.entries(value)) el.style.setProperty(prop, String(v));
    } else if (key in el && !key.includes("-") && key !== "list" && key !== "form") {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replace el's children (arrays flattened; null, undefined and false skipped). */
export function fill(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

let uid = 0;
export function nextId(prefix = "el") {
  uid += 1;
  return `${prefix}-${uid}`;
}

// ---- text ------------------------------------------------------------------------------------

const INLINE = /(`[^`\n]+`)|(@[a-z0-9_-]{2,32})|(https?:\/\/[^\s<>"')\]]+)/g;

function renderInline(text, into, handles) {
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) into.appendChild(document.createTextNode(text.slice(last, match.index)));
    const [token, code, mention, url] = match;
    if (code) {
      into.appendChild(h("code", code.slice(1, -1)));
    } else if (mention) {
      const known = !handles || handles.has(mention.slice(1));
      into.appendChild(h("span.mention", { class: known ? "" : "unknown" }, mention));
    } else if (url) {
      into.appendChild(h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url));
    } else {
      into.appendChild(document.createTextNode(token));
    }
    last = match.index + token.length;
  }
  if (last < text.length) into.appendChild(document.createTextNode(text.slice(last)));
}

/** Message text → fragment: fenced code blocks, inline code, @mentions and links. Never HTML. */
export function renderText(text, handles) {
  const frag = document.createDocumentFragment();
  const parts = String(text ?? "").split(/```/);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      const body = part.replace(/^[a-zA-Z0-9_+-]*\n/, "");
      frag.appendChild(h("pre", h("code", body.replace(/\n$/, ""))));
    } else if (part) {
      const p = h("span.text");
      renderInline(part, p, handles);
      frag.appendChild(p);
    }
  });
  return frag;
}

export function json(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

// ---- time ------------------------------------------------------------------------------------

const absFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const clockFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dayFormat = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });

export function parseTime(iso) {
  if (!iso) return null;
  // A timestamp without an offset is UTC (the server's convention), not browser-local time.
  const text = /T\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(iso) ? `${iso}Z` : iso;
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? null : d;
}

export function absTime(iso) {
  const d = parseTime(iso);
  return d ? absFormat.format(d) : "";
}

/** Short human time: "14:05" today, "Mar 3" before. */
export function shortTime(iso) {
  const d = parseTime(iso);
  if (!d) return "";
  const now = new Date();
  return d.toDateString() === now.toDateString() ? clockFormat.format(d) : dayFormat.format(d);
}

export function relTime(iso) {
  const d = parseTime(iso);
  if (!d) return "never";
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  if (s < 7 * 86400) return `${Math.round(s / 86400)} d ago`;
  return dayFormat.format(d);
}

export function timeEl(iso, format = shortTime) {
  return h("time", { dateTime: iso || "", title: absTime(iso) }, format(iso));
}

export function duration(startIso, endIso) {
  const a = parseTime(startIso);
  if (!a) return "";
  const b = parseTime(endIso) || new Date();
  const ms = Math.max(0, b - a);
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

/** A polite toast in the shared live region. */
export function toast(message, kind = "info") {
  const host = document.getElementById("toasts");
  if (!host) return;
  const el = h("div.toast", { class: `toast-${kind}`, role: kind === "error" ? "alert" : "status" }, message);
  host.appendChild(el);
  setTimeout(() => el.remove(), kind === "error" ? 8000 : 4000);
}

export function initials(handle) {
  return (handle || "?").replace(/[^a-z0-9]/gi, "").slice(0, 2).toUpperCase() || "?";
}

/** Stable hue per handle so avatars are recognisable at a glance. */
export function hue(handle) {
  let n = 0;
  for (const c of handle || "") n = (n * 31 + c.charCodeAt(0)) % 360;
  return n;
}

export function avatar(handle, kind) {
  return h(
    "span.avatar",
    { class: `avatar-${kind || "bot"}`, style: { "--hue": hue(handle) }, "aria-hidden": "true" },
    initials(handle),
  );
}
