// The Memories part of Insights: each used memory with its semantic, lexical and final scores
// as bars, pinned, authority and source range; which of its keys matched (its own text, or a
// passage of its source block, shown with the action it comes from, whether it went into the
// context or was left out for the Memories budget, and the own text's final score beside the
// passage's); the Memories budget; how many were considered; the duplicates left out; and the
// query (both texts, the input terms with their weights, the score's weights); where each
// memory stood (its place by its own text and by its best passage: the order fuses the two);
// and, for a memory found by a hop, the names it was found through and the memory whose
// passage gave them; which ranking put it there (its text, a passage, the hop); and its best
// passages for the question, each with its score and whether it went into the context.
// Scales: semantic and lexical lie in 0..1; final = semantic + lexical weight x lexical, so its
// bar is out of 1 + that weight. A negative cosine draws an empty bar beside its number.
// A snapshot from before memories kept passages has no `matched`: no match line is shown.
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
  const noRoom = Array.isArray(memories.left_for_room) ? memories.left_for_room : [];
  const query = memories.query || {};
  const considered = Number(memories.considered) || 0;
  const finalMax = 1 + lexicalWeight(query);
  const byId = new Map(used.map((m) => [m.id, m]));
  const below = considered - used.length - noRoom.length - suppressed.length;
  return part("memories", "Memories",
    h("p", { class: "ins-mem-counts" },
      h("strong", { class: "ins-used-count", text: count(used.length) }), " used of ",
      h("strong", { class: "ins-considered", text: count(considered) }), " considered",
      typeof query.top_k === "number" ? h("span", { class: "muted", text: ` · top-K ${query.top_k}` }) : null,
      h("span", { class: "muted", text: ` · ${count(suppressed.length)} suppressed as duplicates` }),
      noRoom.length ? h("span", { class: "ins-no-room", text: ` · ${count(noRoom.length)} left out for room` }) : null,
      below > 0 ? h("span", { class: "muted", text: ` · ${count(below)} ranked below the top ${query.top_k ?? "K"}` }) : null,
      budgetNote(memories.budget, query.top_k)),
    memories.note ? h("p", { class: "note ins-note", text: memories.note }) : null,
    used.length
      ? h("div", { class: "ins-scale small muted" },
        `Bars: semantic and lexical out of 1, final out of ${finalMax.toFixed(2)}.`)
      : null,
    h("ol", { class: "ins-memories" }, used.map((m) => memoryItem(m, finalMax))),
    noRoom.length ? noRoomList(noRoom) : null,
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
    hopLine(memory),
    stageLine(memory),
    matchLine(memory),
    rankLine(memory),
    passageList(memory),
    h("div", { class: "ins-scores" },
      scoreRow("semantic", memory.semantic_score, 1),
      scoreRow("lexical", memory.lexical_score, 1),
      scoreRow("final", memory.final_score, finalMax),
      viaPassage(memory) && typeof memory.text_score === "number"
        ? scoreRow("own text", memory.text_score, finalMax, "text",
          "The memory's own text's final score: the passage above scored higher.")
        : null));
}

function viaPassage(memory) {
  return memory.matched === "source" && Boolean(memory.evidence);
}

// Which key won: the memory's own text, or a passage of the story it was written from.
function matchLine(memory) {
  if (memory.matched === "text") {
    return h("p", { class: "ins-match small", dataset: { matched: "text" } },
      h("span", { class: "ins-match-label", text: "matched its own text" }));
  }
  if (!viaPassage(memory)) return null;
  const won = (Array.isArray(memory.passages) ? memory.passages : []).find((p) => p.key === memory.evidence_key);
  const where = Number.isInteger(memory.evidence_depth) ? ` (action ${memory.evidence_depth})` : "";
  const badge = memory.evidence_in_context && won && won.in_history
    ? h("span", { class: "badge ins-evidence-in", text: "in the history",
      title: "The recent history holds this passage's action: it is read there, not written again under the memory." })
    : memory.evidence_in_context
    ? h("span", { class: "badge ins-evidence-in", text: "in the context",
      title: "This passage went into the Memories section, under the memory." })
    : memory.evidence_stated
    ? h("span", { class: "badge ins-evidence-stated", text: "said by the memory itself",
      title: "The memory's own text already says this: only the memory went in." })
    : h("span", { class: "badge ins-evidence-out", text: "left out: over the Memories budget",
      title: "It matched, but the Memories section had no room left for it: only the memory went in." });
  return h("div", { class: "ins-match", dataset: { matched: "source" } },
    h("p", { class: "row small" },
      h("span", { class: "ins-match-label", text: "matched a passage of the story" + where }),
      h("span", { class: "spacer" }), badge),
    h("blockquote", { class: "ins-evidence", text: memory.evidence }));
}

const STAGES = {
  text: ["its own text", "Its own text's place in the order put it here."],
  passage: ["a passage of its source", "Its best passage's place in the order put it here."],
  hop: ["a name another passage gave", "A passage of another memory named someone the question describes."],
};

// Which ranking put the memory in the section (older snapshots have no stage: no line).
function stageLine(memory) {
  const stage = STAGES[memory.stage];
  if (!stage) return null;
  return h("p", { class: "ins-stage small", dataset: { stage: memory.stage }, title: stage[1] },
    h("span", { class: "ins-stage-label", text: "ranked by " + stage[0] }),
    h("span", { class: "muted", text: ` · final ${score(memory.final_score)}` +
      (typeof memory.fused_score === "number" ? ` · order ${score(memory.fused_score)}` : "") }));
}

// Its best passages for this question, each with its score and whether it went in.
function passageList(memory) {
  const passages = Array.isArray(memory.passages) ? memory.passages : [];
  if (!passages.length) return null;
  return h("details", { class: "ins-passages small" },
    h("summary", { text: `${count(passages.filter((p) => Number.isInteger(p.order)).length)} of ` +
      `${count(passages.length)} passages for this question went in` }),
    h("ol", {}, passages.map((p) => h("li", {
      class: "ins-passage", dataset: { key: String(p.key), inContext: String(Number.isInteger(p.order)) } },
    h("span", { class: "muted", text: `action ${p.depth} · ${score(p.score)} · ` +
      (Number.isInteger(p.order) ? (p.in_history ? "in the context, in the history" : "in the context")
        : p.stated ? "said by the memory itself" : "left out") }),
    h("blockquote", { class: "ins-passage-text", text: p.text }),
    p.witness_label ? h("span", { class: "small ins-passage-witness", text: p.witness_label }) : null))));
}

function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] || "th");
  return `${count(n)}${suffix}`;
}

// Where it stood: the order fuses its place by its own text and its place by its best key.
function rankLine(memory) {
  if (!Number.isInteger(memory.text_rank)) return null;
  const parts = [`${ordinal(memory.text_rank)} by its own text`];
  if (Number.isInteger(memory.passage_rank)) parts.push(`${ordinal(memory.passage_rank)} by its best passage`);
  return h("p", { class: "ins-rank small muted", dataset: { textRank: String(memory.text_rank),
    passageRank: Number.isInteger(memory.passage_rank) ? String(memory.passage_rank) : "" },
  title: "Memories are put in order by both places together: first in either comes before middling in both.",
  text: "Ranked " + parts.join(", ") });
}

// A memory found by a hop: a passage of another memory named someone the question describes.
function hopLine(memory) {
  if (!Number.isInteger(memory.via)) return null;
  const names = Array.isArray(memory.via_names) ? memory.via_names.join(", ") : "";
  return h("p", { class: "ins-hop small", dataset: { via: String(memory.via) },
    title: "The best passage of all named these; the question did not. This memory's passage has them." },
  h("span", { class: "badge ins-hop-badge", text: "found through a name" }),
  ` ${names} — named by a passage of memory #${memory.via}`);
}

function budgetNote(budget, topK) {
  if (!(typeof budget === "number" && Number.isFinite(budget))) return null;
  const share = typeof topK === "number" && topK > 0 ? ` (${count(Math.round(budget / topK))} for each of the top ${topK})` : "";
  return h("span", { class: "muted ins-mem-budget", dataset: { budget: String(budget) },
    title: "The Memories section's token budget: passages of the story go in while it has room." + share },
  " · budget ", h("strong", { text: count(budget) }), " tokens");
}

function scoreRow(name, value, max, key = name, title = null) {
  return h("div", { class: "ins-score", dataset: { score: key }, title },
    h("span", { class: "ins-score-name", text: name }),
    bar(value, max, `${name} score`, "score-" + key),
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

// Retrieved, but the context had no room even for the memories alone: the lowest ranked
// were left out whole, never cut mid-sentence.
function noRoomList(memories) {
  return h("div", { class: "ins-suppressed ins-left-for-room" },
    h("h4", { text: "Left out for room" }),
    h("ul", {}, memories.map((m) => h("li", { dataset: { memoryId: m.id } },
      `Memory #${m.id} was retrieved but did not fit the context`,
      h("span", { class: "muted", text: ` (“${clip(m.text)}”)` }), "."))));
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
