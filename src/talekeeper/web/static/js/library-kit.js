// What the Library page and the play page's Knowledge tab both show of a library source: its
// state in words, its embedding progress, its size and kind. Invariants:
// - Pure rendering from a source as GET /api/library answers it (services/library/store.py
//   `source_view`); every text from a file (title, file name, error) goes in through `h`, as
//   text.
// - A progress figure is a native <progress> with a label and its numbers beside it, so it
//   reads without the picture and needs no style from the script (the page's CSP).
// - `poller` asks again only while the background work is due on a source (`anyDue`): a
//   finished library costs nothing.
import { h, when, plural } from "./ui.js";

export const STATE_WORDS = {
  indexing: "Indexing",
  ready: "Ready",
  failed: "Failed",
  words_only: "Words only",
};
const STATE_TITLES = {
  indexing: "Its passages are being embedded in the background; until then they are found by their words.",
  ready: "Every passage is embedded: found by meaning and by words.",
  failed: "The last embedding batch failed; it is tried again automatically, or now with Retry.",
  words_only: "No embedding model is set: its passages are found by their words only.",
};
const KIND_NAMES = { txt: "Text", md: "Markdown", html: "HTML", pdf: "PDF", epub: "EPUB" };

/** "Markdown" for "md"; an unknown kind as it is. */
export function kindName(kind) {
  return KIND_NAMES[kind] || String(kind || "unknown");
}

/** 1536 -> "1.5 KB". */
export function sizeText(bytes) {
  const n = Number(bytes) || 0;
  if (n < 1024) return plural(n, "byte");
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** The state as a badge ("Ready", "Words only"), explained on hover. */
export function stateBadge(source) {
  const state = source.state;
  return h("span", {
    class: `badge lib-state state-${state}`, dataset: { state },
    title: STATE_TITLES[state] || "", text: STATE_WORDS[state] || String(state),
  });
}

/** "12 of 40 passages embedded" with a bar; null when there is nothing to embed. */
export function embedProgress(source, label) {
  const total = Number(source.passage_count) || 0;
  if (!total || source.state === "words_only") return null;
  const done = Math.min(Number(source.embedded) || 0, total);
  const pct = Math.round((Number(source.progress) || done / total) * 100);
  return h("div", { class: "lib-progress row small", dataset: { embedded: String(done), total: String(total) } },
    h("progress", {
      class: "lib-embed-bar", max: total, value: done,
      attrs: { "aria-label": label || `Embedding of ${source.title}` },
    }),
    h("span", { class: "lib-embed-text",
      text: `${done.toLocaleString("en")} of ${plural(total, "passage")} embedded (${pct}%)` }));
}

/** A failed source's error and when it is tried again; null for any other state. */
export function failure(source) {
  if (source.state !== "failed") return null;
  return h("div", { class: "lib-failure small", attrs: { role: "note" } },
    h("p", { class: "lib-error" },
      h("strong", { text: "The embedding failed: " }),
      h("span", { class: "lib-error-text", text: source.error || "no reason was given." })),
    h("p", { class: "lib-retry-at muted", text: retryLine(source.retry_at) }));
}

function retryLine(retryAt) {
  const at = retryAt ? new Date(retryAt).getTime() : NaN;
  if (Number.isFinite(at) && at > Date.now()) {
    return `Next automatic try: ${when(retryAt)}. Retry tries again now.`;
  }
  return "An automatic try is due. Retry tries again now.";
}

/** Whether the background work is due on some source: one indexing, or a failed one whose
 * automatic retry time has come (the indexer takes it up on its next poll). */
export function anyDue(sources, now = Date.now()) {
  return sources.some((s) => s.state === "indexing"
    || (s.state === "failed" && s.retry_at && new Date(s.retry_at).getTime() <= now));
}

/** The soonest automatic retry still to come among failed sources, or null. */
export function nextRetry(sources, now = Date.now()) {
  const times = sources
    .filter((s) => s.state === "failed" && s.retry_at)
    .map((s) => new Date(s.retry_at).getTime())
    .filter((t) => Number.isFinite(t) && t > now);
  return times.length ? Math.min(...times) : null;
}

/** Calls `run()` every `ms` while it answers true (`run` shows its own errors). `kick()`
 * starts it; a kick while it runs does not start a second loop. `at(time)` kicks it at
 * `time` (a failed source's automatic retry), replacing an earlier `at`. */
export function poller(run, ms) {
  let timer = null;
  let later = null;
  let active = false;
  async function tick() {
    timer = null;
    let more = false;
    try {
      more = await run();
    } catch {
      more = true; // no answer this time: ask again at the next tick
    }
    if (more && active) timer = setTimeout(tick, ms);
    else active = false;
  }
  const poll = {
    kick() {
      if (active) return;
      active = true;
      timer = setTimeout(tick, ms);
    },
    at(time) {
      clearTimeout(later);
      later = null;
      if (time === null || !Number.isFinite(time)) return;
      later = setTimeout(() => { later = null; poll.kick(); }, Math.max(time - Date.now(), 0));
    },
  };
  return poll;
}

/** A score as the API gives it (four decimals); "—" for none (no vector yet). */
export function score(value) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(4) : "—";
}

/** Show ``sources`` in ``list`` in their order, one line each, kept in ``lines`` (id → line
 * made by ``make(source)``, with ``el`` and ``update(source)``): a known line is updated in
 * place and moved only when out of place (moving it would take the focus from its
 * buttons); lines of sources gone are removed. */
export function syncLines(list, lines, sources, make) {
  const seen = new Set();
  sources.forEach((source, index) => {
    seen.add(source.id);
    let line = lines.get(source.id);
    if (!line) {
      line = make(source);
      lines.set(source.id, line);
    }
    line.update(source);
    if (list.children[index] !== line.el) list.insertBefore(line.el, list.children[index] || null);
  });
  for (const [id, line] of lines) {
    if (!seen.has(id)) {
      line.el.remove();
      lines.delete(id);
    }
  }
}
