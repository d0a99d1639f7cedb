// Debug page: every adventure's background work (GET /api/derived) and the AI call log
// (GET /api/ai-calls). Invariants:
// - Errors are shown as text and wrapped; a long one is cut short with its full text one
//   click away, never hidden. A request that fails shows its message where its part goes.
// - The filters are the API's own (kind, status, adventure), the log is newest first, and
//   "Show older calls" pages by id, so what is shown is what the server stored.
// - "Refresh" reloads both parts.
// - The log drawn is the answer to the newest read: one that answers late is dropped.
import { h, fill, api, when, plural, duration } from "./ui.js";

const PAGE = 100;
const CALL_KINDS = ["narration", "memory", "summary", "embedding", "world", "test"];  // the log's kinds
const STATUSES = ["ok", "error", "cancelled"];
const WORK_NAMES = { memory: "Memories", summary: "Story Summary", embedding: "Embeddings",
  eviction: "Forgetting (eviction)", cards: "Card proposals" };
const SHORT_ERROR = 160;  // characters of an error shown before "show all"

const root = document.getElementById("debug-root");
const state = { calls: [], titles: new Map(), full: false };
const parts = {
  work: h("div", { class: "work-list", attrs: { "aria-live": "polite" } }),
  calls: h("div", { class: "calls", attrs: { "aria-live": "polite" } }),
  refreshed: h("span", { class: "muted small" }),
  kind: h("select", { id: "filter-kind" }),
  status: h("select", { id: "filter-status" }),
  adventure: h("select", { id: "filter-adventure" }),
};

function options(select, all, values) {
  const chosen = select.value;
  fill(select, h("option", { value: "", text: all }),
    values.map(([value, text]) => h("option", { value, text })));
  select.value = values.some(([v]) => v === chosen) ? chosen : "";
}

function clock(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

/** An error as wrapped text; a long one shows its start, the rest on demand. */
function errorText(text, label = "Show the full error") {
  if (!text) return null;
  if (text.length <= SHORT_ERROR) return h("p", { class: "error-full", text });
  return h("details", { class: "error-long" },
    h("summary", { attrs: { "aria-label": label }, text: text.slice(0, SHORT_ERROR).trimEnd() + "… (show all)" }),
    h("p", { class: "error-full", text }));
}

function adventureLink(id) {
  if (id === null || id === undefined) return h("span", { class: "muted", text: "—" });
  const title = state.titles.get(id);
  return h("a", { href: `/adventures/${id}`, text: title || `Adventure ${id}` });
}

// -- background work ----------------------------------------------------------------------

function workKind(kind, row) {
  const failed = row.state === "failed";
  return h("div", { class: `work-kind state-${row.state}`, dataset: { kind } },
    h("h4", {},
      h("span", { text: WORK_NAMES[kind] || kind }),
      h("span", { class: `badge state-badge state-${row.state}`, text: row.state })),
    h("p", { class: "small", text: `Last success: ${when(row.last_success_at)}` }),
    row.last_run_at ? h("p", { class: "small muted", text: `Last run: ${when(row.last_run_at)}` }) : null,
    failed ? errorText(row.last_error, `Show the full error of ${kind}`) : null,
    failed ? h("p", { class: "small", text: `Failed ${plural(row.failures_in_a_row, "time", "times")} `
      + `in a row; last failure ${when(row.last_failure_at)}. It is tried again when the story next changes.` })
      : null,
    !failed && row.previous_error ? h("details", { class: "small" },
      h("summary", { text: `Recovered from an earlier error (${when(row.last_failure_at)})` }),
      h("p", { class: "error-full", text: row.previous_error })) : null);
}

function workAdventure(adventure, kinds) {
  const derived = adventure.derived;
  const failed = kinds.filter((k) => derived[k] && derived[k].state === "failed").length;
  return h("article", { class: "card work-adventure", dataset: { adventureId: adventure.id } },
    h("div", { class: "row" },
      h("h3", {}, adventureLink(adventure.id)),
      derived.pending ? h("span", { class: "badge", text: "work waiting" }) : null,
      failed ? h("span", { class: "badge state-badge state-failed",
        text: `${plural(failed, "pass", "passes")} failed` }) : null),
    h("div", { class: "work-kinds" }, kinds.map((k) => derived[k] ? workKind(k, derived[k]) : null)));
}

async function loadWork() {
  let body;
  try {
    body = await api("GET", "/api/derived");
  } catch (error) {
    fill(parts.work, h("p", { class: "form-error", text: `Background work could not be read: ${error.message}` }));
    return;
  }
  state.titles = new Map(body.adventures.map((a) => [a.id, a.title]));
  options(parts.adventure, "All adventures",
    body.adventures.map((a) => [String(a.id), a.title || `Adventure ${a.id}`]));
  fill(parts.work, body.adventures.length
    ? body.adventures.map((a) => workAdventure(a, body.kinds))
    : h("p", { class: "muted", text: "No adventures yet: background work starts with the first turns." }));
}

// -- AI calls -----------------------------------------------------------------------------

function tokens(call) {
  const parts = [];
  if (call.tokens_in !== null && call.tokens_in !== undefined) parts.push(`${call.tokens_in} in`);
  if (call.tokens_out !== null && call.tokens_out !== undefined) parts.push(`${call.tokens_out} out`);
  return parts.length ? parts.join(" · ") : "—";
}

function callRow(call) {
  return h("tr", { class: "status-" + call.status, dataset: { callId: call.id, kind: call.kind } },
    h("td", { class: "when", title: call.started_at, text: clock(call.started_at) }),
    h("td", { text: call.kind }),
    h("td", {}, adventureLink(call.adventure_id)),
    h("td", { class: "model", title: call.provider, text: call.model }),
    h("td", { class: "num", text: duration(call.duration_ms) ?? "—" }),
    h("td", { class: "num", text: tokens(call) }),
    h("td", {}, h("span", { class: `badge status-badge status-${call.status}`, text: call.status })),
    h("td", { class: "error-cell" }, errorText(call.error)));
}

function renderCalls() {
  if (!state.calls.length) {
    fill(parts.calls, h("p", { class: "muted", text: "No AI calls match: play a turn or test the connection in Settings." }));
    return;
  }
  const heads = ["Time", "Kind", "Adventure", "Model", "Duration", "Tokens", "Status", "Error"];
  fill(parts.calls,
    h("table", { class: "calls-table" },
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", {
        class: t === "Duration" || t === "Tokens" ? "num" : null, attrs: { scope: "col" }, text: t,
      })))),
      h("tbody", {}, state.calls.map(callRow))),
    h("div", { class: "row calls-more" },
      h("span", { class: "muted small", text: `${plural(state.calls.length, "call", "calls")} shown, newest first.` }),
      state.full ? h("button", { type: "button", text: "Show older calls", on: { click: () => loadCalls(true) } }) : null));
}

// Each read of the log is numbered: only the newest one's answer is drawn, so an older read
// answering late (the filters changed while it ran) cannot put back rows the filters left out.
let reads = 0;

async function loadCalls(older = false) {
  const read = ++reads;
  const params = new URLSearchParams({ limit: String(PAGE) });
  for (const [name, select] of [["kind", parts.kind], ["status", parts.status], ["adventure_id", parts.adventure]]) {
    if (select.value) params.set(name, select.value);
  }
  if (older && state.calls.length) params.set("before", String(state.calls[state.calls.length - 1].id));
  let rows;
  try {
    rows = await api("GET", "/api/ai-calls?" + params.toString());
  } catch (error) {
    if (read !== reads) return;
    fill(parts.calls, h("p", { class: "form-error", text: `The AI calls could not be read: ${error.message}` }));
    return;
  }
  if (read !== reads) return;
  state.calls = older ? state.calls.concat(rows) : rows;
  state.full = rows.length === PAGE;
  renderCalls();
}

// -- the page -----------------------------------------------------------------------------

async function refresh() {
  await loadWork();  // first: the adventure names the log shows
  await loadCalls();
  parts.refreshed.textContent = `Updated ${clock(new Date().toISOString())}`;
}

function filter(labelText, select) {
  select.addEventListener("change", () => loadCalls());
  return h("label", { class: "inline", htmlFor: select.id }, labelText, select);
}

function layout() {
  options(parts.kind, "All kinds", CALL_KINDS.map((k) => [k, k]));
  options(parts.status, "Any status", STATUSES.map((s) => [s, s]));
  options(parts.adventure, "All adventures", []);
  fill(root,
    h("div", { class: "row debug-head" },
      h("h1", { text: "Debug" }),
      h("span", { class: "spacer" }),
      parts.refreshed,
      h("button", { type: "button", class: "primary", text: "Refresh", on: { click: refresh } })),
    h("section", { attrs: { "aria-labelledby": "work-heading" } },
      h("h2", { id: "work-heading", text: "Background work" }),
      h("p", { class: "muted small", text: "After each turn, memories, the Story Summary, "
        + "embeddings and forgetting run in the background, per adventure. A failed pass "
        + "shows its error here and is tried again later; play goes on meanwhile." }),
      parts.work),
    h("section", { attrs: { "aria-labelledby": "calls-heading" } },
      h("h2", { id: "calls-heading", text: "AI calls" }),
      h("div", { class: "row filters" },
        filter("Kind", parts.kind), filter("Status", parts.status), filter("Adventure", parts.adventure)),
      parts.calls));
  fill(parts.work, h("p", { class: "muted", text: "Loading…" }));
  fill(parts.calls, h("p", { class: "muted", text: "Loading…" }));
}

layout();
refresh();
