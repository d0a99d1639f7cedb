// The Knowledge part of Insights: the library passages the turn's search chose, each with its
// source, its place in the file (heading path, page), its final, semantic and lexical scores
// as bars and its ranks by meaning and by words, and whether it went into the context or was
// left out for the Knowledge section's budget; how many passages of how many sources were
// considered, the note, the sources searched, the runners-up (collapsed) and the query.
// Pure rendering from `snapshot.knowledge` (services/library/search.py `insights()`).
// Scales: every score lies in 0..1 (final = semantic weight x max(semantic, 0) + lexical
// weight x lexical, the weights adding to 1); a negative cosine draws an empty bar beside its
// number, a passage with no vector yet shows "—" (ranked by its words).
// A snapshot from before the library has no `knowledge`: no part is drawn.
import { h } from "./ui.js";
import { bar, count, part } from "./insights-parts.js";
import { STATE_WORDS, score } from "./library-kit.js";

export function knowledgePart(knowledge) {
  if (!knowledge || typeof knowledge !== "object") return null;
  const used = Array.isArray(knowledge.used) ? knowledge.used : [];
  const runners = Array.isArray(knowledge.runners_up) ? knowledge.runners_up : [];
  const sources = Array.isArray(knowledge.sources) ? knowledge.sources : [];
  const considered = Number(knowledge.considered) || 0;
  const went = used.filter((hit) => hit.in_context).length;
  if (!sources.length && !used.length) {
    return part("knowledge", "Knowledge",
      h("p", { class: "muted ins-know-none", text: capital(knowledge.note || "no library attached") + ". "
        + "Attach library sources in the Knowledge tab to give the narrator their passages." }));
  }
  return part("knowledge", "Knowledge",
    h("p", { class: "ins-know-counts" },
      h("strong", { class: "ins-know-used", text: count(went) }),
      ` passage${went === 1 ? "" : "s"} went in, of `,
      h("strong", { class: "ins-know-considered", text: count(considered) }),
      ` considered in ${count(sources.length)} source${sources.length === 1 ? "" : "s"}`,
      typeof knowledge.top_k === "number" ? h("span", { class: "muted", text: ` · top-K ${knowledge.top_k}` }) : null,
      typeof knowledge.min_score === "number"
        ? h("span", { class: "muted", text: ` · passages under ${knowledge.min_score.toFixed(2)} left out` }) : null),
    knowledge.note ? h("p", { class: "note small ins-know-note", text: capital(knowledge.note) + "." }) : null,
    sourcesLine(sources),
    used.length
      ? h("div", { class: "ins-scale small muted", text: "Bars: every score out of 1." })
      : h("p", { class: "muted ins-know-nothing", text: "No passage was chosen." }),
    h("ol", { class: "ins-passages" }, used.map((hit, i) => passageItem(hit, i + 1, true))),
    runners.length
      ? h("details", { class: "ins-runners" },
        h("summary", { text: `${runners.length} runner${runners.length === 1 ? "" : "s"}-up: the next best, not used` }),
        h("ol", { class: "ins-passages", attrs: { start: used.length + 1 } },
          runners.map((hit, i) => passageItem(hit, used.length + i + 1, false))))
      : null,
    queryPart(knowledge));
}

function capital(text) {
  const t = String(text || "");
  return t ? t[0].toUpperCase() + t.slice(1) : t;
}

function sourcesLine(sources) {
  if (!sources.length) return null;
  return h("p", { class: "small ins-know-sources" },
    h("span", { class: "muted", text: "Searched: " }),
    sources.map((s, i) => [i ? ", " : null,
      h("span", { class: "ins-know-source", dataset: { sourceId: String(s.id), state: s.state } },
        h("span", { class: "ins-know-source-title", text: s.title }),
        h("span", { class: "muted", text: ` (${sourceState(s)})` }))]));
}

function sourceState(source) {
  const words = (STATE_WORDS[source.state] || String(source.state)).toLowerCase();
  if (source.state === "indexing" || source.state === "failed") {
    return `${words}, ${count(source.embedded)} of ${count(source.passage_count)} embedded`;
  }
  return words;
}

function passageItem(hit, place, chosen) {
  const badge = !chosen ? null : hit.in_context
    ? h("span", { class: "badge ins-know-in", text: "in the context" })
    : h("span", { class: "badge ins-know-out", text: "left out: over the Knowledge budget",
      title: "It was chosen, but the Knowledge section had no room left for it." });
  return h("li", { class: "ins-passage card", dataset: { passageId: String(hit.passage_id),
    sourceId: String(hit.source_id), inContext: chosen && hit.in_context ? "true" : "false" } },
  h("div", { class: "row small" },
    h("span", { class: "muted ins-passage-place", text: `#${place}` }),
    h("strong", { class: "ins-passage-source", text: hit.source_title }),
    h("span", { class: "muted ins-passage-location", text: hit.location || "the start of the file" }),
    h("span", { class: "spacer" }), badge),
  h("blockquote", { class: "ins-passage-text", text: hit.text }),
  rankLine(hit),
  h("div", { class: "ins-scores" },
    scoreRow("final", hit.final_score),
    scoreRow("semantic", hit.semantic_score),
    scoreRow("lexical", hit.lexical_score)));
}

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th");
  return `${count(n)}${suffix}`;
}

function rankLine(hit) {
  const parts = [
    Number.isInteger(hit.semantic_rank) ? `${ordinal(hit.semantic_rank)} by meaning` : "no vector yet",
    Number.isInteger(hit.lexical_rank) ? `${ordinal(hit.lexical_rank)} by words` : "none of the words",
  ];
  return h("p", { class: "ins-rank small muted", dataset: {
    semanticRank: Number.isInteger(hit.semantic_rank) ? String(hit.semantic_rank) : "",
    lexicalRank: Number.isInteger(hit.lexical_rank) ? String(hit.lexical_rank) : "",
  }, text: "Ranked " + parts.join(", ") });
}

function scoreRow(name, value) {
  const missing = typeof value !== "number";
  return h("div", { class: "ins-score", dataset: { score: name },
    title: missing ? "No vector of this passage yet: it was ranked by its words." : null },
  h("span", { class: "ins-score-name", text: name }),
  bar(missing ? 0 : value, 1, `${name} score`, "score-" + name),
  h("span", { class: "ins-score-value", text: score(value) }));
}

function queryPart(knowledge) {
  const query = knowledge.query || {};
  const w = knowledge.weights || {};
  const terms = Array.isArray(query.input_terms) ? query.input_terms : [];
  const termWeights = query.term_weights || {};
  const n = (x) => (typeof x === "number" ? String(x) : "?");
  const rows = [
    ["Input terms", terms.length
      ? h("span", { class: "ins-terms" }, terms.map((t) => h("span", { class: "badge ins-term", dataset: { term: t } },
        h("span", { text: t }), " ", h("span", { class: "ins-term-weight",
          text: typeof termWeights[t] === "number" ? termWeights[t].toFixed(2) : "—" }))))
      : h("span", { class: "muted", text: "none" })],
    ["Embedding model", h("span", { text: query.embedding_model || "none: ranked by words only" })],
    ["Weights", h("span", { class: "ins-know-weights",
      text: `final = ${n(w.semantic)} × max(semantic, 0) + ${n(w.lexical)} × lexical; `
        + `semantic = the cosine with ${n(w.input)} × input + ${n(w.context)} × context` })],
  ];
  return h("div", { class: "ins-query" },
    h("h4", { text: "The library query" }),
    h("p", { class: "small muted", text: "The same player's input and scene context as the Memories query above." }),
    h("dl", { class: "ins-dl small" }, rows.map(([label, value]) => [h("dt", { text: label }), h("dd", {}, value)])));
}
