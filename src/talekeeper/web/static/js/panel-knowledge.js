// The Knowledge tab: which of the player's library sources this adventure draws on. Each
// source has a checkbox (ticked = attached: GET /api/adventures/{id}/knowledge); a tick or
// untick sends the whole set with PUT, and the list shows what the server answers.
// Invariants:
// - The attached set shown is the server's: a refused change (a 4xx, e.g. too many
//   sources) puts the box back and shows the server's sentence.
// - Each source shows its state and, while it is embedded, its progress; the list is asked
//   again every POLL_MS while the background work is due on a source, and never otherwise.
// - Lines are updated in place, so a poll never takes the focus from a checkbox.
// - Titles, file names and errors come from files: shown as text.
import { h, fill, api, attempt, notify, plural } from "./ui.js";
import { refresher } from "./panel-kit.js";
import {
  stateBadge, embedProgress, failure, anyDue, nextRetry, poller, syncLines,
} from "./library-kit.js";

const POLL_MS = 2000;

export function knowledgePanel(ctx) {
  const summary = h("p", { class: "small knowledge-summary" });
  const list = h("ul", { class: "knowledge-list", attrs: { "aria-label": "Library sources" } });
  const empty = h("div", { class: "knowledge-empty", hidden: true },
    h("p", { text: "Your library is empty." }),
    h("p", { class: "small muted", text: "Upload a setting bible, campaign notes, an exported "
      + "wiki or a novel (.txt, .md, .html, .pdf or .epub) in the Library, then tick it here: "
      + "the narrator gets its passages that fit each turn." }));
  const link = h("a", { class: "knowledge-library-link small", href: "/library",
    text: "Upload more in the Library →" });
  const el = h("div", { class: "panel-body" },
    h("section", { class: "panel-block" }, h("h3", { text: "Knowledge" }), summary, empty, list, link));
  const lines = new Map(); // source id -> its line
  let sources = [];
  let attached = new Set();
  let saving = 0;

  const url = () => `/api/adventures/${ctx.id}/knowledge`;
  const poll = poller(async () => {
    await load();
    return anyDue(sources);
  }, POLL_MS);

  async function load() {
    const [library, mine] = await Promise.all([api("GET", "/api/library"), api("GET", url())]);
    if (saving) return; // a change is on its way: its own answer is drawn
    sources = library.sources || [];
    attached = new Set((mine.sources || []).map((s) => s.id));
    render();
    poll.at(nextRetry(sources));
    if (anyDue(sources)) poll.kick();
  }
  const refresh = refresher(el, load);
  // Back from the Library (another tab, or the same one later): what was uploaded shows.
  window.addEventListener("focus", () => refresh());

  function render() {
    empty.hidden = sources.length > 0;
    link.textContent = sources.length ? "Upload more in the Library →" : "Open the Library →";
    summary.hidden = !sources.length;
    const on = sources.filter((s) => attached.has(s.id)).length;
    summary.textContent = on
      ? `${on} of ${plural(sources.length, "source")} attached: the narrator gets their passages that fit each turn.`
      : `None of your ${plural(sources.length, "source")} is attached: tick one to let the narrator draw on it.`;
    syncLines(list, lines, sources, sourceLine);
  }

  function sourceLine(first) {
    let source = first;
    const box = h("input", { type: "checkbox", on: { change: () => toggle(source, box) } });
    box.id = `knowledge-source-${first.id}`;
    const title = h("span", { class: "knowledge-title" });
    const badge = h("span", { class: "knowledge-badge" });
    const meta = h("p", { class: "small muted knowledge-meta" });
    const status = h("div", { class: "knowledge-status" });
    const el = h("li", { class: "knowledge-source" },
      h("div", { class: "row knowledge-head" },
        h("label", { class: "inline knowledge-label", attrs: { for: box.id } }, box, title),
        h("span", { class: "spacer" }), badge),
      meta, status);
    function update(now) {
      source = now;
      el.dataset.sourceId = String(now.id);
      el.dataset.state = now.state;
      box.checked = attached.has(now.id);
      el.classList.toggle("is-attached", box.checked);
      title.textContent = now.title;
      fill(badge, stateBadge(now));
      meta.textContent = `${now.filename} · ${plural(now.passage_count, "passage")}`;
      fill(status,
        now.state === "indexing" || now.state === "failed" ? embedProgress(now) : null,
        failure(now));
    }
    return { el, update };
  }

  async function toggle(source, box) {
    const wanted = new Set(attached);
    if (box.checked) wanted.add(source.id);
    else wanted.delete(source.id);
    saving += 1;
    const boxes = list.querySelectorAll("input[type=checkbox]");
    boxes.forEach((b) => { b.disabled = true; });
    let answer;
    try {
      answer = await attempt(() => api("PUT", url(), { source_ids: [...wanted] }));
    } finally {
      saving -= 1;
      boxes.forEach((b) => { b.disabled = false; });
    }
    if (answer === undefined) {
      box.checked = attached.has(source.id);
      return;
    }
    attached = new Set((answer.sources || []).map((s) => s.id));
    // The answer carries the attached sources' newest figures (state, progress).
    const fresh = new Map((answer.sources || []).map((s) => [s.id, s]));
    sources = sources.map((s) => fresh.get(s.id) || s);
    render();
    notify(attached.has(source.id)
      ? `“${source.title}” is attached: the narrator draws on it from the next turn.`
      : `“${source.title}” is no longer attached.`);
    box.focus();
  }

  return { el, refresh };
}
