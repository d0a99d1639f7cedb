// The Library page's search box: GET /api/library/search?q= over all the player's sources,
// each hit with its source, its place in the file (heading path, page), its final, semantic
// and lexical scores with their ranks, and the passage itself. Invariants:
// - Passages, titles and places come from uploaded files: shown as text only (`h`).
// - The newest search wins: a slower answer to an older one is dropped when it arrives.
// - A refusal (a 4xx) is the server's sentence, shown where the hits would be.
import { h, fill, api } from "./ui.js";
import { score } from "./library-kit.js";

const LIMIT = 10;

export function searchBox(form, input, out) {
  let serial = 0;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = input.value.trim();
    if (!q) {
      fill(out, h("p", { class: "muted small", text: "Type some words to search for." }));
      return;
    }
    const mine = ++serial;
    fill(out, h("p", { class: "muted small", attrs: { role: "status" }, text: "Searching…" }));
    let answer;
    try {
      answer = await api("GET", `/api/library/search?${new URLSearchParams({ q, limit: String(LIMIT) })}`);
    } catch (error) {
      if (mine !== serial) return;
      fill(out, h("div", { class: "lib-refusal", attrs: { role: "alert" } },
        h("p", { class: "lib-refusal-lead", text: "The search could not run." }),
        h("p", { class: "lib-refusal-message", text: error.message || String(error) })));
      return;
    }
    if (mine === serial) fill(out, results(answer));
  });
}

function results(answer) {
  const hits = Array.isArray(answer.hits) ? answer.hits : [];
  const considered = Number(answer.considered) || 0;
  const terms = Array.isArray(answer.input_terms) ? answer.input_terms : [];
  return [
    h("p", { class: "small lib-hits-summary" },
      hits.length
        ? `The ${hits.length === 1 ? "best passage" : `best ${hits.length} passages`} of `
        : "No passage matched, of ",
      h("strong", { class: "lib-considered", text: considered.toLocaleString("en") }),
      ` passage${considered === 1 ? "" : "s"} considered.`,
      terms.length
        ? h("span", { class: "muted" }, " Words looked for: ",
          terms.map((t, i) => [i ? ", " : null, h("span", { class: "lib-term", text: t })]), ".")
        : h("span", { class: "muted",
          text: " None of its words is looked up (too common or too short): ranked by meaning alone." })),
    answer.note ? h("p", { class: "note small lib-hits-note", text: answer.note }) : null,
    hits.length
      ? h("ol", { class: "lib-hit-list", attrs: { "aria-label": "Passages found" } }, hits.map(hitItem))
      : null,
  ];
}

function hitItem(hit, index) {
  const ids = { passageId: String(hit.passage_id), sourceId: String(hit.source_id) };
  return h("li", { class: "lib-hit card", dataset: ids },
    h("div", { class: "row lib-hit-head" },
      h("span", { class: "lib-hit-rank muted", text: `#${index + 1}` }),
      h("strong", { class: "lib-hit-source", text: hit.source_title }),
      h("span", { class: "lib-hit-location muted", text: hit.location || "the start of the file" })),
    h("p", { class: "row small lib-hit-scores" },
      scoreFact("final", hit.final_score, null),
      scoreFact("semantic", hit.semantic_score, hit.semantic_rank),
      scoreFact("lexical", hit.lexical_score, hit.lexical_rank)),
    h("p", { class: "lib-hit-text", text: hit.text }));
}

function scoreFact(name, value, rank) {
  const missing = typeof value !== "number";
  return h("span", { class: "lib-score", dataset: { score: name },
    title: missing ? "No vector yet: this passage was ranked by its words only." : null },
  h("span", { class: "muted", text: `${name} ` }),
  h("strong", { class: "lib-score-value", text: missing ? "—" : score(value) }),
  Number.isInteger(rank) ? h("span", { class: "muted lib-score-rank", text: ` (rank ${rank})` }) : null);
}
