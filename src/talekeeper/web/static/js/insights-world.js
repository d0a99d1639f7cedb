// The Insights dialog's World part: the state the turn read (its Current state section) and
// the events that changed it since the previous turn, each with its action, who said it,
// its evidence, and what the fold did with it; and who the input addressed, with what they
// did not know (memories, secret cards, Current state entries). Pure rendering from a
// snapshot's `state` and `witness` parts; every name and sentence is the story's or the
// player's and is shown as text only.
import { h } from "./ui.js";
import { part } from "./insights-parts.js";

const ORIGINS = { rules: "read from the story", model: "read by the model", player: "set by you" };
const KEPT = {
  held: "not applied: you set this, and it does not say otherwise outright",
  backward: "not applied: it would take the time backward",
};

function listed(values) {
  return values && values.length ? values.join(", ") : "—";
}

function change(event) {
  const roles = [event.subject, event.object, event.value].filter((v) => v !== null && v !== undefined);
  return h("li", { class: "ins-world-change", dataset: { id: String(event.id), origin: event.origin } },
    h("span", { class: "world-kind", text: event.kind }), " ",
    h("span", { text: roles.length ? roles.join(" · ") : "(you)" }), " ",
    h("span", { class: "badge", text: ORIGINS[event.origin] || event.origin }), " ",
    h("span", { class: "muted small", text: `action #${event.action_id}` }),
    Number.isInteger(event.overrides)
      ? h("div", { class: "ins-world-override small",
        text: `Changed what you set (your event #${event.overrides}): its evidence says so.` })
      : null,
    event.kept ? h("div", { class: "ins-world-kept small muted", text: KEPT[event.kept] || event.kept }) : null,
    event.evidence ? h("div", { class: "muted small world-evidence", text: event.evidence }) : null);
}

/** The part, or nothing for a snapshot written before the world was kept. */
export function worldPart(state) {
  if (!state) return null;
  const quests = (state.quests || []).map((q) => `${q.name} (${q.state})`);
  const changed = state.changed || [];
  return part("state", "The world this turn read",
    h("dl", { class: "scene-view ins-world" },
      h("dt", { text: "Location" }), h("dd", { text: state.location || "—" }),
      h("dt", { text: "Present" }), h("dd", { text: listed(state.present) }),
      h("dt", { text: "Carrying" }), h("dd", { text: listed(state.inventory) }),
      h("dt", { text: "Time" }), h("dd", { text: state.time || "—" }),
      h("dt", { text: "Quests" }), h("dd", { text: listed(quests) })),
    h("h4", { text: "Changed since the previous turn" }),
    changed.length
      ? h("ol", { class: "ins-world-changes" }, ...changed.map(change))
      : h("p", { class: "muted small", text: "Nothing." }));
}

const HOW = {
  vocative: "spoken to by name",
  spoken_to: "spoken to",
  about_knowledge: "asked about what they know",
  acting: "playing this turn (the input addressed no one; others play this story too)",
};
const MODES = {
  label: "kept, marked as unknown to them",
  strict: "left out of this turn's context",
  off: "kept as they are (witness mode off)",
};

// The secret cards and the Current state entries the addressed character did not know
// (`cards`, `state`: absent from a snapshot written before they were kept).
function marks(witness) {
  const rows = [
    ...(witness.cards || []).map((m) => ["card", `Card “${m.name}”`, m]),
    ...(witness.state || []).map((m) => ["state", `Current state: ${m.name}`, m]),
  ];
  if (!rows.length) return null;
  return [
    h("p", { class: "muted small", text: "Secret cards and entries of the Current state they did not know:" }),
    h("ol", { class: "ins-witness-list ins-witness-marks" }, ...rows.map(([kind, label, m]) =>
      h("li", { class: "ins-witness-mark", dataset: { kind, id: String(m.id), what: m.handling } },
        h("span", { class: "badge", text: m.handling }), " ",
        h("span", { class: "ins-witness-name", text: label }), " ",
        h("span", { class: "muted small", text: m.why ? `— ${m.why}` : "" })))),
  ];
}

/** Who the player's input addressed, the memories that character did not witness, and the
 * secret cards and Current state entries they did not know: labelled or withheld, each
 * with why. Nothing for a snapshot from before there was one. */
export function witnessPart(witness) {
  if (!witness) return null;
  if (!witness.addressed) {
    return part("witness", "Who knows what",
      h("p", { class: "muted small", text: "Your input addressed no one: the narrator knows everything it retrieved." }));
  }
  const reasons = new Map((witness.reasons || []).map((r) => [r.memory_id, r.why]));
  const listed = [
    ...(witness.labelled || []).map((id) => [id, "labelled"]),
    ...(witness.withheld || []).map((id) => [id, "withheld"]),
    ...(witness.told || []).map((id) => [id, "told"]),
  ];
  return part("witness", "Who knows what",
    h("p", { class: "ins-witness-who" },
      h("strong", { text: witness.addressed }), ` — ${HOW[witness.how] || witness.how || "addressed"}`,
      witness.words ? h("span", { class: "muted small", text: ` (“${witness.words}”)` }) : null),
    h("p", { class: "muted small", text: `Memories they did not witness: ${MODES[witness.mode] || witness.mode}.` }),
    witness.summary ? h("p", { class: "muted small ins-witness-summary", dataset: { summary: witness.summary },
      text: witness.summary === "withheld"
        ? "The Story Summary was left out of this turn: it tells what they may not know."
        : "The Story Summary is marked as the narrator's knowledge, not theirs." }) : null,
    listed.length
      ? h("ol", { class: "ins-witness-list" }, ...listed.map(([id, what]) =>
        h("li", { class: "ins-witness-memory", dataset: { id: String(id), what } },
          h("span", { class: "badge", text: what }), " ",
          h("span", { text: `memory #${id}` }), " ",
          h("span", { class: "muted small",
            text: what === "told" ? "not there, but told of it since" : reasons.get(id) || "" }))))
      : h("p", { class: "muted small", text: "None: they witnessed every memory retrieved." }),
    marks(witness));
}
