// The Library page (/library): the player's knowledge sources — upload (library-upload.js),
// the list with each source's state and embedding progress, Retry / Reindex / Delete, and a
// search over all of them (library-search.js). Invariants:
// - The list is what GET /api/library answers, newest first. It is asked again every
//   POLL_MS while the background work is due on a source (one indexing, or a failed one
//   whose retry time has come), and once at a failed source's next retry time; never while
//   nothing is due.
// - Each source's line is updated in place: a poll never closes a Delete question or moves
//   the focus.
// - Deleting asks first, in the page. Retry is POST .../retry: a failed source is due again
//   at once, keeping the vectors already made; Reindex is POST .../reindex: the passages are
//   indexed again and all their vectors made again in the background.
// - Every text from a file (title, file name, error) is shown as text.
import { h, fill, api, attempt, notify, plural, confirmGroup } from "./ui.js";
import {
  kindName, sizeText, stateBadge, embedProgress, failure, anyDue, nextRetry, poller, syncLines,
} from "./library-kit.js";
import { uploader, dropFiles } from "./library-upload.js";
import { searchBox } from "./library-search.js";

const POLL_MS = 1500;

const page = document.getElementById("library-page");
if (page) start(page);

function start(root) {
  const maxBytes = Number(root.dataset.fileMax) || Infinity;
  const maxMb = root.dataset.fileMaxMb || "50";
  const picker = document.getElementById("library-file");
  const listRoot = document.getElementById("library-root");
  const lines = new Map(); // source id -> its line
  let loaded = false;

  const uploads = uploader({
    list: document.getElementById("library-uploads"),
    maxBytes,
    maxMb,
    onStored: () => refresh().then((more) => { if (more) poll.kick(); }),
  });
  const poll = poller(() => refresh(), POLL_MS);

  document.getElementById("library-choose").addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    const files = Array.from(picker.files || []);
    picker.value = "";
    if (files.length) uploads.add(files);
  });
  dropFiles(root, (files) => uploads.add(files));
  searchBox(document.getElementById("library-search"), document.getElementById("library-query"),
    document.getElementById("library-hits"));

  /** Reads the list and shows it; answers whether to ask again soon. */
  async function refresh() {
    let answer;
    try {
      answer = await api("GET", "/api/library");
    } catch (error) {
      showProblem(error);
      return true;
    }
    const sources = (answer.sources || []).slice().reverse();
    loaded = true;
    render(sources);
    uploads.update(sources);
    poll.at(nextRetry(sources));
    return anyDue(sources);
  }

  function showProblem(error) {
    const text = `The library could not be read: ${error.message || error}`;
    const line = listRoot.querySelector(".lib-problem");
    if (line) line.textContent = text;
    else listRoot.prepend(h("p", { class: "lib-problem error-box", attrs: { role: "alert" }, text }));
    if (!loaded) listRoot.querySelector(".lib-loading")?.remove();
  }

  function render(sources) {
    listRoot.querySelector(".lib-problem")?.remove();
    if (!sources.length) {
      lines.clear();
      fill(listRoot, emptyState(maxMb, () => picker.click()));
      return;
    }
    let list = listRoot.querySelector("ul.lib-sources");
    let summary = listRoot.querySelector(".lib-summary");
    if (!list) {
      summary = h("p", { class: "lib-summary muted small" });
      list = h("ul", { class: "lib-sources", attrs: { "aria-label": "Library sources" } });
      fill(listRoot, summary, list);
    }
    const passages = sources.reduce((n, s) => n + (Number(s.passage_count) || 0), 0);
    summary.textContent = `${plural(sources.length, "source")} · ${plural(passages, "passage")}.`;
    syncLines(list, lines, sources, sourceLine);
  }

  function sourceLine(first) {
    let source = first;
    const title = h("h3", { class: "lib-title" });
    const badge = h("span", { class: "lib-badge" });
    const meta = h("p", { class: "lib-meta small muted" });
    const status = h("div", { class: "lib-status" });
    const retry = h("button", {
      type: "button", class: "primary", text: "Retry",
      title: "Try the failed batch again now; the vectors already made are kept",
      on: { click: () => reindex("Retrying", "retry", "its vectors are made on from where they stopped") },
    });
    const again = h("button", {
      type: "button", text: "Reindex",
      title: "Its passages indexed again: their words now, their vectors in the background",
      on: { click: () => reindex("Indexing again", "reindex", "its vectors are made again") },
    });
    const removeButton = h("button", { type: "button", class: "danger", text: "Delete", on: { click: ask } });
    const remove = h("span", { class: "confirm lib-delete" }, removeButton);
    const el = h("li", { class: "lib-source card" },
      h("div", { class: "row lib-source-head" }, title, badge, h("span", { class: "spacer" }),
        h("span", { class: "row lib-actions" }, retry, again, remove)),
      meta, status);

    function ask() {
      const attached = Number(source.attached_to) || 0;
      const lose = attached === 1
        ? " The adventure it is attached to loses its passages."
        : attached > 1 ? ` The ${attached} adventures it is attached to lose its passages.` : "";
      const question = `Delete “${source.title}” and its passages?${lose}`;
      fill(remove, confirmGroup({
        question,
        yes: "Yes, delete",
        onYes: async (yes, no) => {
          yes.disabled = no.disabled = true;
          const done = await attempt(async () => {
            await api("DELETE", `/api/library/${source.id}`);
            return true;
          });
          if (done === undefined) return rest();
          notify(`Deleted “${source.title}” from the library.`);
          await refresh(); // the line goes with the source
        },
        onNo: () => {
          rest();
          removeButton.focus();
        },
      }));
    }

    function rest() {
      fill(remove, removeButton);
    }

    async function reindex(doing, route, what) {
      retry.disabled = again.disabled = true;
      const answer = await attempt(() => api("POST", `/api/library/${source.id}/${route}`));
      retry.disabled = again.disabled = false;
      if (answer === undefined) return;
      update(answer);
      notify(`${doing} “${answer.title}”: ${what} in the background.`);
      poll.kick();
    }

    function update(now) {
      source = now;
      el.dataset.sourceId = String(now.id);
      el.dataset.state = now.state;
      title.textContent = now.title;
      fill(badge, stateBadge(now));
      const attached = Number(now.attached_to) || 0;
      fill(meta,
        h("span", { class: "lib-filename", text: now.filename }), " · ",
        h("span", { class: "lib-kind", text: kindName(now.kind) }), " · ",
        h("span", { class: "lib-size", text: sizeText(now.size_bytes) }), " · ",
        h("span", { class: "lib-passages", text: plural(now.passage_count, "passage") }), " · ",
        h("span", { class: "lib-attached", dataset: { count: String(attached) },
          text: attached ? `attached to ${plural(attached, "adventure")}` : "attached to no adventure" }),
        now.embedding_model && now.state !== "words_only"
          ? [" · ", h("span", { class: "lib-model", text: `embedded with ${now.embedding_model}` })]
          : null);
      fill(status,
        now.state === "indexing" || now.state === "failed" ? embedProgress(now) : null,
        failure(now));
      retry.hidden = now.state !== "failed";
      retry.setAttribute("aria-label", `Retry ${now.title}`);
      again.setAttribute("aria-label", `Reindex ${now.title}`);
      removeButton.setAttribute("aria-label", `Delete ${now.title}`);
    }

    update(first);
    return { el, update };
  }

  refresh().then((more) => { if (more) poll.kick(); });
}

function emptyState(maxMb, choose) {
  return h("div", { class: "lib-empty card" },
    h("p", { class: "lib-empty-lead", text: "Your library is empty." }),
    h("p", { text: "Upload the canon of your worlds — a setting bible, campaign notes, an "
      + `exported wiki, a novel — as .txt, .md, .html, .pdf or .epub files, up to ${maxMb} MB each. `
      + "Then attach a source to an adventure in its Knowledge tab." }),
    h("button", { type: "button", class: "primary", text: "Upload files…", on: { click: choose } }));
}
