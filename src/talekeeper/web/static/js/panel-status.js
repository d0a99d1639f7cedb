// One line above the panels: what the background memory work is doing for this adventure.
// Invariants:
// - While work waits or runs, GET /api/adventures/{id}/derived is read about once a second;
//   when it is idle the polling stops (a later `check()` starts it again).
// - `onProgress` runs whenever a pass finished since the last read (its last success moved),
//   `onSettled` once when the work goes from busy to idle: the panels refresh then.
// - A failure is shown with its error until a later run succeeds; it is retried on the next
//   turn, and the line says so.
import { h, fill, api, showError } from "./ui.js";

const POLL_MS = 1000;
const KINDS = ["memory", "summary", "embedding", "eviction", "world", "cards"];
const DOING = {
  memory: "writing memories…",
  summary: "updating the Story Summary…",
  embedding: "embedding memories…",
  eviction: "making room in the Memory Bank…",
  world: "reading the world from the last reply…",
  cards: "looking for names that deserve a card…",
};
const FAILED = {
  memory: "memory writing failed",
  summary: "the summary update failed",
  embedding: "embedding failed",
  eviction: "making room in the Memory Bank failed",
  world: "reading the world failed",
  cards: "proposing story cards failed",
};

function busy(derived) {
  return derived.pending || KINDS.some((k) => derived[k] && derived[k].state === "running");
}

function progressMark(derived) {
  return KINDS.map((k) => (derived[k] && derived[k].last_success_at) || "").join("|");
}

export function backgroundStatus(ctx, { onProgress, onSettled }) {
  const el = h("div", {
    class: "bg-status small", id: "background-status",
    attrs: { role: "status", "aria-live": "polite", "aria-label": "Background memory work" },
  });
  let timer = null;
  let wasBusy = false;
  let mark = null;
  let reading = false;
  let again = false;

  function render(derived) {
    const running = KINDS.find((k) => derived[k] && derived[k].state === "running");
    const failed = KINDS.filter((k) => derived[k] && derived[k].state === "failed");
    const lines = [];
    if (running) {
      lines.push(h("span", { class: "bg-line bg-running", text: DOING[running] }));
    } else if (derived.pending) {
      lines.push(h("span", { class: "bg-line bg-running", text: "memory work waiting…" }));
    }
    for (const kind of failed) {
      const error = derived[kind].last_error || "no reason given";
      lines.push(h("span", {
        class: "bg-line bg-failed",
        text: `${FAILED[kind]}: ${error} — will retry next turn`,
      }));
    }
    if (!lines.length) {
      lines.push(h("span", { class: "bg-line bg-idle", text: "Memories and summary are up to date." }));
    }
    el.classList.toggle("is-busy", Boolean(running || derived.pending));
    el.classList.toggle("has-failure", failed.length > 0);
    fill(el, ...lines);
  }

  async function check() {
    clearTimeout(timer);
    timer = null;
    if (reading) {
      again = true; // asked while a read is out: read once more when it is back
      return;
    }
    reading = true;
    let derived;
    try {
      derived = await api("GET", `/api/adventures/${ctx.id}/derived`);
    } catch (error) {
      fill(el, h("span", {
        class: "bg-line bg-failed", text: "Could not read the background work: " + error.message,
      }));
      showError(error);
      return;
    } finally {
      reading = false;
    }
    render(derived);
    const now = busy(derived);
    const newMark = progressMark(derived);
    // A pass finished since the last read (perhaps before this read even started).
    const moved = mark !== null && newMark !== mark;
    mark = newMark;
    if (wasBusy && !now) onSettled();
    else if (moved) onProgress();
    wasBusy = now;
    if (again) {
      again = false;
      check();
    } else if (now) {
      timer = setTimeout(check, POLL_MS);
    }
  }

  return { el, check };
}
