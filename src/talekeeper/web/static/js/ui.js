// Shared helpers for every page. Invariants:
// - Text from players and models only ever reaches the page as text: `h` sets
//   `textContent`, never `innerHTML`, and refuses event-handler attributes, so a
//   reply holding "<script>" or "onerror=" is shown, not run. The server also
//   sends a Content-Security-Policy that allows scripts from /static only.
// - Every failed request or uncaught error becomes a readable message in the
//   page's #errors banner; nothing fails silently into a blank screen.
// - Pages talk to each other through DOM events named "tk:<name>" (`emit`/`on`):
//   "tk:story-changed" {reason} after anything that changes the story;
//   "tk:open-insights" {actionId} / {dryRun: {type, text}} to open Insights.

/** Build an element. props: class, text, attrs{}, dataset{}, on{event: fn}, and plain
 * properties (value, type, disabled, checked, title, placeholder, ...). Children are nodes,
 * strings (made into text nodes), or null/false (skipped); arrays are flattened. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "attrs") {
      for (const [name, v] of Object.entries(value)) {
        if (/^on/i.test(name)) throw new Error(`refusing event attribute ${name}`);
        if (v !== null && v !== undefined && v !== false) el.setAttribute(name, String(v));
      }
    } else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "on") {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (key === "innerHTML" || key === "outerHTML") {
      throw new Error("h() never sets HTML");
    } else el[key] = value;
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

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** An error from the API: `message` is the server's sentence, meant for the player. */
export class ApiError extends Error {
  constructor(message, status, code, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

// Accounts mode: the session ended (signed out elsewhere, password changed, account
// disabled). The page goes to the sign-in page, which brings the player back here.
function signInAgain() {
  if (location.pathname === "/login") return;
  const back = location.pathname + location.search;
  location.assign("/login?next=" + encodeURIComponent(back).replace(/%2F/g, "/"));
}

async function errorFrom(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const error = body && body.error ? body.error : null;
  if (response.status === 401 && error && error.code === "not_signed_in") signInAgain();
  const message = error && error.message
    ? error.message
    : `The server answered ${response.status} ${response.statusText || ""}`.trim() + ".";
  return new ApiError(message, response.status, error ? error.code : "http_" + response.status, body);
}

/** JSON request. Resolves to the parsed body (null for 204); rejects with ApiError. */
export async function api(method, url, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (e) {
    throw new ApiError("The server did not answer: is Talekeeper still running?", 0, "offline");
  }
  if (!response.ok) throw await errorFrom(response);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

/** POST that answers with server-sent events; calls onEvent(kind, data) for each event.
 * A refusal before the stream starts (a JSON 4xx) rejects with ApiError. */
export async function streamPost(url, body, onEvent) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(body ?? {}),
    });
  } catch (e) {
    throw new ApiError("The server did not answer: is Talekeeper still running?", 0, "offline");
  }
  if (!response.ok) throw await errorFrom(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let kind = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(kind, JSON.parse(data.join("\n")));
    }
  }
}

/** Show a readable error in the page banner (dismissible). Accepts an Error or a string. */
export function showError(error) {
  const box = document.getElementById("errors");
  const message = typeof error === "string" ? error : (error && error.message) || String(error);
  if (!box) {
    window.alert(message);
    return;
  }
  const item = h("div", { class: "error-item" },
    h("span", { class: "error-text", text: message }),
    h("button", {
      type: "button", class: "link", text: "Dismiss", attrs: { "aria-label": "Dismiss this message" },
      on: { click: () => item.remove() },
    }));
  box.appendChild(item);
  while (box.children.length > 4) box.firstChild.remove();
}

/** A short passing message in the status line (cleared after a few seconds). */
export function notify(message) {
  const box = document.getElementById("status");
  if (!box) return;
  box.textContent = message;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { box.textContent = ""; }, 4000);
}

/** Run an async action; show its error in the banner instead of throwing. Returns its result
 * or undefined when it failed. */
export async function attempt(fn) {
  try {
    return await fn();
  } catch (error) {
    showError(error);
    return undefined;
  }
}

export function emit(name, detail = {}) {
  document.dispatchEvent(new CustomEvent("tk:" + name, { detail }));
}

export function on(name, fn) {
  document.addEventListener("tk:" + name, (event) => fn(event.detail || {}));
}

/** "2026-12-02T20:58:00+00:00" -> a short local date and time. */
export function when(iso) {
  if (!iso) return "never";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

let confirmSerial = 0;

/** An in-page confirmation (never a native dialog): the question, a danger button `yes` and
 * a safe button `no`. Escape or `no` calls onNo; `yes` calls onYes(yesButton, noButton).
 * The safe button takes the focus once the group is in the page, so Enter right away keeps
 * things as they are. */
export function confirmGroup({ question, yes, no = "Cancel", onYes, onNo, className = "" }) {
  const id = `confirm-${++confirmSerial}`;
  const yesButton = h("button", { type: "button", class: "danger", text: yes });
  const noButton = h("button", { type: "button", text: no, on: { click: () => onNo() } });
  yesButton.addEventListener("click", () => onYes(yesButton, noButton));
  const group = h("div", {
    class: `confirm ${className}`.trim(),
    attrs: { role: "group", "aria-labelledby": id },
    on: {
      keydown: (event) => {
        if (event.key !== "Escape" || yesButton.disabled) return;
        event.preventDefault();
        event.stopPropagation();
        onNo();
      },
    },
  }, h("span", { class: "confirm-question", id, text: question }), yesButton, noButton);
  queueMicrotask(() => { if (noButton.isConnected) noButton.focus(); });
  return group;
}

/** "3 cards", "1 memory"; `many` defaults to `one` + "s". */
export function plural(count, one, many) {
  return `${count} ${count === 1 ? one : many || one + "s"}`;
}

/** A duration in milliseconds as people read it ("0.4 ms", "42 ms", "1.25 s"); null when
 * there is none, so a caller chooses what a missing one shows. */
export function duration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return null;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  return ms < 1 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
}

/** The adventure the play page shows (from the server-rendered page), or null. */
export function adventureId() {
  const root = document.getElementById("play");
  return root ? Number(root.dataset.adventureId) : null;
}

window.addEventListener("error", (event) => {
  showError("Something went wrong in this page: " + (event.message || "unknown error") + ". Reload to continue.");
});
window.addEventListener("unhandledrejection", (event) => {
  const reason = event.reason;
  showError(reason && reason.message ? reason.message : String(reason));
});
