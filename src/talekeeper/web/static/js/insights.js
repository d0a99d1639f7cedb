// Insights dialog on the play page: the exact context a reply was generated from, or the
// context the next turn would get (a dry run). Invariants:
// - It opens on "tk:open-insights" only: {actionId} reads the stored snapshot of that reply
//   (GET /api/actions/{id}/insights); {dryRun: {type, text}} asks the server for the next
//   turn's context without generating or saving anything.
// - Every text in a snapshot (sections, memories, library passages, the query) comes from
//   players, models and uploaded files and is shown as text only (`h`/textContent, <pre>
//   for the exact context).
// - A failed request is shown inside the dialog as a readable message; the dialog never
//   stays blank or half-filled with an older snapshot: a newer open supersedes a slower one.
// - Escape closes (the <dialog>'s own cancel); so does the Close button.
import { h, fill, api, adventureId, on, showError } from "./ui.js";
import { overview, sectionsPart, cardsPart, droppedPart, modelPart } from "./insights-parts.js";
import { memoriesPart } from "./insights-memories.js";
import { knowledgePart } from "./insights-knowledge.js";
import { witnessPart, worldPart } from "./insights-world.js";

const DRY_RUN_TITLE = "Dry run: the context of the next turn";
const TYPE_NAMES = { do: "Do", say: "Say", story: "Story", continue: "Continue" };

let dialog = null;
let opened = 0; // the latest open: a slower, older answer is dropped when it arrives

function setup() {
  dialog = document.getElementById("insights-dialog");
  if (!dialog) return;
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close(); // a click on the backdrop
  });
  // Closed while loading: the answer, when it comes, must not open the dialog again. The
  // close event comes a moment after the close; by then an open that followed at once has
  // shown the dialog again, and its answer is still wanted.
  dialog.addEventListener("close", () => {
    if (!dialog.open) opened += 1;
  });
  on("open-insights", (detail) => {
    open(detail).catch((error) => showError(error));
  });
}

async function open(detail) {
  const token = ++opened;
  const dry = detail.dryRun || null;
  const actionId = Number(detail.actionId);
  if (!dry && !(Number.isInteger(actionId) && actionId > 0)) {
    show(token, "Insights", null, problem("There is no reply to show Insights for."));
    return;
  }
  const title = dry ? DRY_RUN_TITLE : replyTitle(actionId, depthOf(actionId, detail));
  const sub = dry ? dryRunLine(dry) : null;
  show(token, title, sub, h("p", { class: "ins-loading muted", attrs: { role: "status" },
    text: dry ? "Building the next turn's context…" : "Reading the snapshot…" }));
  dialog.scrollTop = 0;
  let snapshot;
  try {
    snapshot = dry ? await dryRun(dry) : await api("GET", `/api/actions/${actionId}/insights`);
  } catch (error) {
    show(token, title, dry ? dryRunLine(dry) : null, problem(error.message || String(error)));
    return;
  }
  // The story may have rendered meanwhile: its depth is read again before asking the server.
  const depth = dry ? null : depthOf(actionId, detail);
  show(token, dry ? title : replyTitle(actionId, depth), dry ? dryRunLine(dry) : null, render(snapshot));
  if (!dry && depth === null) findDepth(token, actionId);
}

function dryRun(dry) {
  const id = adventureId();
  const type = String(dry.type || "continue");
  const text = type === "continue" ? "" : String(dry.text ?? "");
  return api("POST", `/api/adventures/${id}/insights/dry-run`, { type, text });
}

function replyTitle(actionId, depth) {
  return depth === null ? `Insights for reply #${actionId}` : `Insights for reply at depth ${depth}`;
}

// The depth is cheap when the caller or the story column knows it; otherwise it is read
// from the story (below), after the snapshot is already on screen.
function depthOf(actionId, detail) {
  if (Number.isInteger(detail.depth)) return detail.depth;
  const node = document.querySelector(
    `#story [data-id="${actionId}"][data-depth], [data-action-id="${actionId}"][data-depth]`);
  const depth = node ? Number(node.dataset.depth) : NaN;
  return Number.isInteger(depth) ? depth : null;
}

async function findDepth(token, actionId) {
  const id = adventureId();
  let found = null;
  try {
    const page = await api("GET", `/api/adventures/${id}/actions?limit=500`);
    found = (page.actions || []).find((a) => a.id === actionId) || null;
  } catch (error) {
    if (token === opened) {
      dialog.querySelector(".ins-head")?.append(h("p", { class: "ins-error small",
        text: "The reply's depth could not be read: " + (error.message || String(error)) }));
    }
    return;
  }
  const heading = dialog.querySelector("#insights-title");
  if (found && token === opened && heading) heading.textContent = replyTitle(actionId, found.depth);
}

function dryRunLine(dry) {
  const type = String(dry.type || "continue");
  const text = type === "continue" ? "" : String(dry.text ?? "").trim();
  const said = text ? `${TYPE_NAMES[type] || type}: “${text}”` : (TYPE_NAMES[type] || type) + " (no text)";
  return h("p", { class: "ins-sub small muted" },
    "As if you sent ", h("span", { class: "ins-quote", text: said }),
    ". Nothing is generated and nothing is saved.");
}

function problem(message) {
  return h("div", { class: "ins-error", attrs: { role: "alert" } },
    h("strong", { text: "Insights could not be shown. " }), h("span", { text: message }));
}

function show(token, title, sub, body) {
  if (token !== opened || !dialog) return;
  const close = h("button", { type: "button", class: "ins-close", text: "Close",
    attrs: { "aria-label": "Close Insights" }, on: { click: () => dialog.close() } });
  fill(dialog,
    h("header", { class: "ins-head" },
      h("div", { class: "row" },
        h("h2", { id: "insights-title", text: title }), h("span", { class: "spacer" }), close),
      sub),
    h("div", { class: "ins-body" }, body));
  dialog.setAttribute("aria-labelledby", "insights-title");
  if (!dialog.open) dialog.showModal();
  close.focus();
}

function render(snapshot) {
  return [
    overview(snapshot),
    sectionsPart(snapshot),
    memoriesPart(snapshot.memories || {}),
    knowledgePart(snapshot.knowledge),
    worldPart(snapshot.state),
    witnessPart(snapshot.witness),
    cardsPart(snapshot),
    droppedPart(snapshot),
    modelPart(snapshot),
  ];
}

setup();
