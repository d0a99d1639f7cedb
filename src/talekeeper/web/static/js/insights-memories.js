// The Memories part of Insights: each used memory with its semantic, lexical and final scores
// as bars, pinned, authority and source range; how many were considered; the duplicates left
// out; and the query (both texts, the input terms with their weights, the score's weights).
// Scales: semantic and lexical lie in 0..1; final = semantic + lexical weight x lexical, so its
// bar is out of 1 + that weight. A negative cosine draws an empty bar beside its number.
import { h } from "./ui.js";
import { bar, count, part } from "./insights-parts.js";

const AUTHORITY = {
  accepted_story: ["established", "from the accepted story"],
  heuristic: ["inference", "a heuristic inference, not established"],
};

function score(value) {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(4) : "—";
}

function lexicalWeight(query) {
  const w = query.weights && query.weights.lexical;
  return typeof w === "number" && w >= 0 ? w : 0;
}

export function memoriesPart(memories) {
  const used = Array.isArray(memories.used) ? memories.used : [];
  const suppressed = Array.isArray(memories.suppressed) ? memories.suppressed : [];
  const query = memories.query || {};
  const considered = Number(memories.considered) || 0;
  const finalMax = 1 + lexicalWeight(query);
  const byId = new Map(used.map((m) => [m.id, m]));
  const below = considered - used.length - suppressed.length;
  return part("memories", "Memories",
    h("p", { class: "ins-mem-counts" },
      h("strong", { class: "ins-used-count", text: count(used.length) }), " used of ",
      h("strong", { class: "ins-considered", text: count(considered) }), " considered",
      typeof query.top_k === "number" ? h("span", { class: "muted", text: ` · top-K ${query.top_k}` }) : null,
      h("span", { class: "muted", text: ` · ${count(suppressed.length)} suppressed as duplicates` }),
      below > 0 ? h("span", { class: "muted", text: ` · ${count(below)} ranked below the top ${query.top_k ?? "K"}` }) : null),
    memories.note ? h("p", { class: "note ins-note", text: memories.note }) : null,
    used.length
      ? h("div", { class: "ins-scale small muted" },
        `Bars: semantic and lexical out of 1, final out of ${finalMax.toFixed(2)}.`)
      : null,
    h("ol", { class: "ins-memories" }, used.map((m) => memoryItem(m, finalMax))),
    suppressed.length ? suppressedList(suppressed, byId) : null,
    queryPart(query));
}

function memoryItem(memory, finalMax) {
  const [label, explanation] = AUTHORITY[memory.authority] || [memory.authority, memory.authority];
  return h("li", { class: "ins-memory card", dataset: { memoryId: memory.id } },
    h("div", { class: "row small" },
      h("span", { class: "muted", text: "#" + memory.id }),
      h("span", { class: "badge ins-authority", dataset: { authority: memory.authority },
        title: explanation, text: label }),
      memory.pinned ? h("span", { class: "badge ins-pinned", text: "pinned" }) : null,
      h("span", { class: "spacer" }),
      h("span", { class: "ins-source muted", text: sourceLine(memory.source) })),
    h("p", { class: "ins-mem-text", text: memory.text }),
    h("div", { class: "ins-scores" },
      scoreRow("semantic", memory.semantic_score, 1),
      scoreRow("lexical", memory.lexical_score, 1),
      scoreRow("final", memory.final_score, finalMax)));
}

function scoreRow(name, value, max) {
  return h("div", { class: "ins-score", dataset: { score: name } },
    h("span", { class: "ins-score-name", text: name }),
    bar(value, max, `${name} score`, "score-" + name),
    h("span", { class: "ins-score-value", text: score(value) }));
}

function sourceLine(source) {
  if (!source) return "written by hand";
  // A memory with no source range was written by hand; its depth is only where it attaches.
  const { source_start: start, source_end: end, branch_id: branch } = source;
  const where = branch ? ` · branch #${branch}` : "";
  if (start === null || start === undefined) return "written by hand" + where;
  return (start === end ? `from depth ${start}` : `from depths ${start}–${end}`) + where;
}

function suppressedList(suppressed, byId) {
  return h("div", { class: "ins-suppressed" },
    h("h4", { text: "Suppressed duplicates" }),
    h("ul", {}, suppressed.map((s) => {
      const kept = byId.get(s.duplicate_of);
      return h("li", { dataset: { memoryId: s.id } },
        `Memory #${s.id} was left out as a duplicate of #${s.duplicate_of}`,
        kept ? h("span", { class: "muted", text: ` (“${clip(kept.text)}”)` }) : null, ".");
    })));
}

function clip(text) {
  const t = String(text || "");
  return t.length > 80 ? t.slice(0, 79) + "…" : t;
}

function queryPart(query) {
  const weights = query.weights || {};
  const terms = Array.isArray(query.input_terms) ? query.input_terms : [];
  const termWeights = query.term_weights || {};
  const rows = [
    ["Player's input", query.input ? h("span", { class: "ins-query-input", text: query.input })
      : h("span", { class: "muted", text: "none (a continue, or no text)" })],
    ["Scene context", query.context ? h("span", { class: "ins-query-context", text: query.context })
      : h("span", { class: "muted", text: "none" })],
    ["Input terms", terms.length
      ? h("span", { class: "ins-terms" }, terms.map((t) => h("span", { class: "badge ins-term", dataset: { term: t } },
        h("span", { text: t }), " ", h("span", { class: "ins-term-weight",
          text: typeof termWeights[t] === "number" ? termWeights[t].toFixed(2) : "—" }))))
      : h("span", { class: "muted", text: "none" })],
    ["Weights", h("span", { class: "ins-weights", text: weightsLine(weights) })],
  ];
  return h("div", { class: "ins-query" },
    h("h4", { text: "The query" }),
    h("dl", { class: "ins-dl small" }, rows.map(([label, value]) => [h("dt", { text: label }), h("dd", {}, value)])));
}

function weightsLine(w) {
  const n = (x) => (typeof x === "number" ? String(x) : "?");
  return `semantic = ${n(w.input)} × cos(input) + ${n(w.context)} × cos(context); `
    + `final = semantic + ${n(w.lexical)} × lexical; `
    + `a duplicate when cosine ≥ ${n(w.duplicate_cosine)}`;
}
