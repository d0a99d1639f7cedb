// Parts of the Insights dialog: the budget, the context sections, the cards, what was dropped
// for budget, and the model with its timings. Pure rendering from a snapshot: no requests.
// Bars are elements whose width is set through CSSOM (allowed by the page's CSP); each is a
// role="meter" with its number, so the figure is readable without the picture.
import { h, duration } from "./ui.js";

const TIMINGS = {
  read_ms: "Reading the story",
  retrieve_ms: "Memory retrieval",
  knowledge_ms: "Library search",
  build_ms: "Building the context",
  first_token_ms: "First token",
  generate_ms: "Generating the reply",
};
const WHERE = { input: "the player's input", story: "the recent story" };

/** 1234 -> "1,234"; a missing figure -> "—". */
export function count(n) {
  return typeof n === "number" && Number.isFinite(n) ? n.toLocaleString("en") : "—";
}

/** A horizontal bar of value/max (clamped to 0..100%, rounded to 0.01%). */
export function bar(value, max, label, extra = "") {
  const v = typeof value === "number" && Number.isFinite(value) ? value : 0;
  const ratio = max > 0 ? Math.max(0, Math.min(1, v / max)) : 0;
  const pct = Math.round(ratio * 10000) / 100;
  const fillEl = h("span", { class: ("ins-bar-fill " + extra).trim() });
  fillEl.style.width = pct + "%";
  return h("span", {
    class: "ins-bar",
    attrs: {
      role: "meter", "aria-label": label, "aria-valuemin": 0, "aria-valuemax": max,
      "aria-valuenow": Math.max(0, Math.min(max, v)), "aria-valuetext": String(value),
    },
  }, fillEl);
}

/** A titled part of the dialog. */
export function part(name, title, ...children) {
  return h("section", { class: "ins-part", dataset: { part: name }, attrs: { "aria-label": title } },
    h("h3", { text: title }), ...children);
}

function sectionsOf(snapshot) {
  return Array.isArray(snapshot.sections) ? snapshot.sections : [];
}

/** The budget at a glance: one bar over the whole context window, split into the sections,
 * the room left, the reserve and the reply. */
export function overview(snapshot) {
  const budget = snapshot.budget || {};
  const total = budget.context_tokens || 0;
  const strip = h("div", { class: "ins-strip", attrs: { role: "img",
    "aria-label": `${count(budget.used)} of ${count(budget.available)} available tokens used` } });
  const segment = (tokens, cls, title) => {
    if (!total || !(tokens > 0)) return;
    const el = h("span", { class: "ins-seg " + cls, title });
    el.style.width = Math.round(Math.min(1, tokens / total) * 10000) / 100 + "%";
    strip.append(el);
  };
  sectionsOf(snapshot).forEach((s, i) => segment(s.tokens, "hue-" + (i % 9), `${s.title}: ${count(s.tokens)} tokens`));
  const free = (budget.available || 0) - (budget.used || 0);
  segment(free, "ins-seg-free", `room left: ${count(free)} tokens`);
  segment(budget.reserved, "ins-seg-reserved", `reserved: ${count(budget.reserved)} tokens`);
  segment(budget.reply_tokens, "ins-seg-reply", `the reply: ${count(budget.reply_tokens)} tokens`);
  const fact = (label, value, name) => h("span", { class: "ins-fact", dataset: { fact: name } },
    h("span", { class: "muted", text: label + " " }), h("strong", { text: count(value) }));
  return part("budget", "Budget",
    strip,
    h("p", { class: "row small ins-facts" },
      fact("Used", budget.used, "used"), fact("of available", budget.available, "available"),
      fact("Context window", budget.context_tokens, "context"),
      fact("Reply", budget.reply_tokens, "reply"), fact("Reserved", budget.reserved, "reserved")));
}

/** Every section, in the order the narrator read them, each openable to its exact text. The
 * Memories section also shows its own budget beside its tokens. */
export function sectionsPart(snapshot) {
  const available = (snapshot.budget || {}).available || 0;
  // A section's own budget (a share of the prompt); a snapshot from before sections carried
  // one has the Memories' alone.
  const own = { memories: (snapshot.memories || {}).budget };
  const items = sectionsOf(snapshot).map((s, i) =>
    sectionItem(s, i, available, typeof s.budget === "number" ? s.budget : own[s.name]));
  return part("sections", "Context, top to bottom",
    h("p", { class: "small muted", text: "What the narrator was shown, in order. Open a section "
      + "to read its exact text; each bar is its share of the available budget." }),
    h("div", { class: "ins-sections" }, items));
}

function sectionItem(section, index, available, budget) {
  const tokens = Number(section.tokens) || 0;
  const empty = !section.text;
  const title = section.title || section.name;
  return h("details", { class: "ins-section" + (empty ? " is-empty" : ""), dataset: { name: section.name } },
    h("summary", {},
      h("span", { class: "ins-sec-title", text: title }),
      h("span", { class: "ins-sec-tokens" },
        h("span", { class: "ins-tokens", text: count(tokens) }), h("span", { class: "muted", text: " tokens" })),
      bar(tokens, available, `${title}: ${count(tokens)} of ${count(available)} tokens`, "hue-" + (index % 9)),
      h("span", { class: "ins-sec-badges" },
        typeof budget === "number" ? h("span", { class: "badge ins-sec-budget",
          text: `budget ${count(budget)}`,
          title: `${title}: ${count(tokens)} of its ${count(budget)}-token budget` }) : null,
        section.cut ? h("span", { class: "badge ins-cut", text: "cut to fit" }) : null,
        empty ? h("span", { class: "badge", text: "empty" }) : null)),
    h("p", { class: "ins-why small" }, h("span", { class: "muted", text: "Why: " }),
      h("span", { text: section.reason || "—" })),
    empty ? null : h("pre", { class: "ins-text", text: section.text }));
}

/** The cards in the context, in its order: an always-on card says so; a fired one names the
 * keyword that fired it, where it was found and, with secondary keywords, those that held. */
export function cardsPart(snapshot) {
  const cards = Array.isArray(snapshot.cards) ? snapshot.cards : [];
  const section = sectionsOf(snapshot).find((s) => s.name === "story_cards");
  if (!cards.length) {
    return part("cards", "Story Cards",
      h("p", { class: "muted", text: "No card fired" + (section && section.reason ? ": " + section.reason : ".") }));
  }
  return part("cards", "Story Cards",
    h("ul", { class: "ins-cards" }, cards.map((card) =>
      h("li", { class: "ins-card", dataset: { cardId: card.id } },
        h("strong", { class: "ins-card-name", text: card.name }), " ",
        h("span", { class: "badge", text: card.type }), " ",
        card.always_on
          ? h("span", { class: "badge ins-always", text: "always on",
            title: "In the context every turn, whether or not a keyword appears" })
          : card.where === "earlier"
          ? h("span", { class: "muted ins-earlier",
            text: "fired earlier in the scene, kept while the history holds" })
          : [
            h("span", { class: "muted", text: "fired by " }),
            h("span", { class: "ins-keyword", text: card.keyword }),
            h("span", { class: "muted", text: " in " + (WHERE[card.where] || card.where) }),
            secondaryHeld(card),
          ]))));
}

/** ", with storm, gale" / ", and none of war, plague": a card's secondary keywords that held. */
function secondaryHeld(card) {
  if (!card.secondary_rule) return null;
  const none = card.secondary_rule === "none";
  const words = (none ? card.secondary_keywords : card.secondary) || [];
  return h("span", { class: "ins-secondary" },
    h("span", { class: "muted", text: none ? ", and none of " : ", with " }),
    words.map((word, i) => [i ? ", " : null, h("span", { class: "ins-held", text: word })]));
}

/** What the budget left out: older history, a cut action, sections cut from their end. */
export function droppedPart(snapshot) {
  const history = snapshot.history || {};
  const lines = [];
  const kept = `${count(history.kept)} action${history.kept === 1 ? "" : "s"} of the recent history kept`;
  if (history.dropped > 0) {
    lines.push(`${count(history.dropped)} older action${history.dropped === 1 ? "" : "s"} of the `
      + `history dropped for budget (${kept}).`);
  } else {
    lines.push(`No action of the history was dropped for budget (${kept}).`);
  }
  if (history.cut_action_id) {
    lines.push(`Action #${history.cut_action_id} did not fit whole: its opening was cut to fit.`);
  }
  if (history.unread_older) lines.push("Older actions exist that were not read for this context at all.");
  for (const s of sectionsOf(snapshot)) {
    if (s.cut) lines.push(`${s.title || s.name} was cut from its end to fit the budget.`);
  }
  return part("dropped", "Dropped for budget",
    h("ul", { class: "ins-dropped" }, lines.map((line) => h("li", { text: line }))));
}

/** What the model had to read of the prompt after the prefix its cache kept. */
function evaluatedText(tokens, dryRun) {
  const cached = Number(tokens.prompt_cached) || 0;
  const who = tokens.prompt_evaluated_by === "provider" ? "as the server reported it" : "counted here";
  const verb = dryRun ? "would evaluate" : "evaluated";
  return `${count(tokens.prompt_evaluated)} (${count(cached)} kept from the previous prompt; ${verb}, ${who})`;
}

const FLOATING_NAMES = {
  authors_note: "Author's Note", story_cards: "Story Cards", memories: "Memories", knowledge: "Knowledge",
};

/** The layout in use and, for "cache", how far back each floating section went. */
function layoutText(layout) {
  const spots = Object.entries(layout.floating || {}).map(([name, spot]) => {
    const back = spot.actions_before_end;
    return `${FLOATING_NAMES[name] || name} ${back === 0 ? "at the end" : `${back} back`}`;
  });
  const why = layout.name === "cache"
    ? "changes at its end, so the model's cache keeps the rest"
    : "every section above the history";
  return `${layout.name} (${why})` + (spots.length ? `: ${spots.join(", ")}` : "");
}

/** The model, the mode, the tokens in and out, and how long each step took. */
export function modelPart(snapshot) {
  const tokens = snapshot.tokens || {};
  const query = (snapshot.memories || {}).query || {};
  const rows = [
    ["Model", snapshot.model || "—"],
    ["Mode", snapshot.mode || "—"],
    ["Tokenizer", snapshot.tokenizer || "—"],
    ["Embedding model", query.embedding_model || "—"],
    ["Prompt tokens", count(tokens.prompt)],
    ["Reply tokens", snapshot.dry_run ? "— (nothing generated)" : count(tokens.reply)],
  ];
  // Older snapshots predate the figure: they simply have no such row.
  if (tokens.prompt_evaluated !== undefined && tokens.prompt_evaluated !== null) {
    rows.splice(5, 0, ["Prompt evaluated", evaluatedText(tokens, snapshot.dry_run)]);
  }
  if (snapshot.layout) rows.splice(1, 0, ["Context layout", layoutText(snapshot.layout)]);
  if (snapshot.repairs && snapshot.repairs.length) {
    rows.push(["Placeholder's reply repaired",
      snapshot.repairs.map((r) => r.meaning).join("; ")]);
  }
  if (snapshot.retry_of) rows.push(["Retry", `a new take of reply #${snapshot.retry_of}`]);
  if (snapshot.author) rows.push(["Answering", `${snapshot.author.persona_name}'s action`]);
  if (snapshot.branch_id) rows.push(["Branch", "#" + snapshot.branch_id]);
  for (const [key, value] of Object.entries(snapshot.timings || {})) {
    rows.push([TIMINGS[key] || key.replace(/_ms$/, "").replace(/_/g, " "), duration(value) ?? "—"]);
  }
  return part("model", "Model, timings and tokens",
    h("table", { class: "ins-table small" }, h("tbody", {}, rows.map(([label, value]) =>
      h("tr", {}, h("th", { attrs: { scope: "row" }, text: label }), h("td", { text: value }))))));
}
