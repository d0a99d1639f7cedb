// Starting a new adventure on the adventures page. Invariants:
// - A shipped scenario starts in one click ("Start": the scenario's own title, persona and plot
//   components), or in two after "Choose your character…", where the scenario's persona is
//   filled in for the player to keep or change.
// - A blank adventure sends what the player wrote: title, opening, persona, the plot
//   components (AI Instructions, Plot Essentials, Author's Note) and the two toggles. Empty
//   optional fields are left out, so the server's defaults apply.
// - The server checks every value; its refusal is shown as its own sentence and the form
//   keeps what was typed. Success goes straight to the play page.
// - Another tool's file (a character card, a scenario) is previewed before anything is made
//   (adventures-file.js).
import { h, fill, api, showError } from "./ui.js";
import {
  textInput, textArea, field, personaFields, personaOf, toggles, togglesOf, value, LIMITS,
} from "./adventures-fields.js";
import { fileCard, filePreview } from "./adventures-file.js";

/** Show the scenario chooser in `root`. scenarios: the list, or null when it could not be
 * read (then ctx.retry() reads it again). */
export function renderNew(root, scenarios, ctx) {
  const view = { root, scenarios, ctx };
  chooser(view);
}

function chooser(view, focusId = null) {
  const { root, scenarios } = view;
  const items = (scenarios || []).map((scenario) => scenarioCard(view, scenario));
  const failed = scenarios === null
    ? h("div", { class: "card adv-empty" },
      h("p", { text: "The shipped scenarios could not be read. You can still start from a blank page." }),
      h("button", { type: "button", text: "Try again", on: { click: () => view.ctx.retry() } }))
    : null;
  fill(root,
    failed,
    items.length
      ? h("p", { class: "muted",
        text: "Pick a story and press Start to play at once, or choose your character first." })
      : null,
    h("ul", { class: "scenario-grid", attrs: { "aria-label": "Ways to start" } }, items, blankCard(view),
      fileCard((file) => filePreview(root, file, () => chooser(view, "start-from-file")))));
  if (focusId) document.getElementById(focusId)?.focus();
}

function scenarioCard(view, scenario) {
  const persona = scenario.persona || {};
  const start = h("button", {
    type: "button", class: "primary", text: "Start", id: `start-${scenario.id}`,
    attrs: { "aria-label": `Start “${scenario.title}”` },
  });
  start.addEventListener("click", () => create({ scenario: scenario.id }, start));
  return h("li", { class: "scenario card" },
    h("div", { class: "row" },
      h("h3", { text: scenario.title }),
      scenario.genre ? h("span", { class: "badge", text: scenario.genre }) : null),
    h("p", { class: "scenario-description", text: scenario.description }),
    persona.name ? h("p", { class: "small muted" }, "You play ", personaLine(persona), ".") : null,
    h("div", { class: "row scenario-actions" },
      start,
      h("button", {
        type: "button", text: "Choose your character…", id: `custom-${scenario.id}`,
        attrs: { "aria-label": `Choose your character for “${scenario.title}”` },
        on: { click: () => scenarioForm(view, scenario) },
      })));
}

function personaLine(persona) {
  return h("strong", { text: persona.pronouns ? `${persona.name} (${persona.pronouns})` : persona.name });
}

function blankCard(view) {
  return h("li", { class: "scenario card blank" },
    h("h3", { text: "A blank page" }),
    h("p", { class: "scenario-description",
      text: "Write your own opening, your character and the rules the narrator follows." }),
    h("div", { class: "row scenario-actions" },
      h("button", {
        type: "button", text: "Start from a blank page…", id: "start-blank",
        on: { click: () => blankForm(view) },
      })));
}

async function scenarioForm(view, summary) {
  fill(view.root,
    h("p", { class: "muted", attrs: { role: "status" }, text: `Reading “${summary.title}”…` }));
  let scenario;
  try {
    scenario = await api("GET", `/api/scenarios/${encodeURIComponent(summary.id)}`);
  } catch (error) {
    showError(`“${summary.title}” could not be read: ${error.message}`);
    chooser(view, `custom-${summary.id}`);
    return;
  }
  const persona = scenario.persona || {};
  const back = () => chooser(view, `custom-${scenario.id}`);
  const submit = h("button", { type: "submit", class: "primary", text: "Start the adventure" });
  const label = `New adventure: ${scenario.title}`;
  const form = h("form", { class: "new-form card", attrs: { "aria-label": label } },
    formHead(scenario.title, scenario.genre, back),
    h("p", { text: scenario.description }),
    scenario.opening ? h("details", { class: "opening-preview" },
      h("summary", { text: "Read the opening" }),
      h("p", { class: "opening", text: scenario.opening })) : null,
    persona.name ? h("p", { class: "small muted" },
      "The scenario suggests ", personaLine(persona),
      persona.description ? `: ${persona.description}` : ".",
      " Keep it, or make the character your own.") : null,
    personaFields(persona),
    field("Title", textInput("title", { max: LIMITS.title, placeholder: scenario.title }),
      `Leave it empty to call it “${scenario.title}”.`),
    h("details", { class: "more-options" }, h("summary", { text: "Memory options" }), toggles()),
    formButtons(submit, back));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const body = { scenario: scenario.id, persona: personaOf(form), ...togglesOf(form) };
    const title = value(form, "title");
    if (title) body.title = title;
    create(body, submit);
  });
  show(view, form);
}

function blankForm(view) {
  const back = () => chooser(view, "start-blank");
  const submit = h("button", { type: "submit", class: "primary", text: "Start the adventure" });
  const form = h("form", { class: "new-form card", attrs: { "aria-label": "New adventure: a blank page" } },
    formHead("A blank page", null, back),
    field("Title", textInput("title", { max: LIMITS.title, required: true })),
    field("Opening", textArea("opening", { max: LIMITS.narration, rows: 5 }),
      "The first passage of the story. Leave it empty to begin with your own first action."),
    personaFields({}),
    h("fieldset", { class: "plot" }, h("legend", { text: "Plot components" }),
      field("AI Instructions", textArea("ai_instructions", { max: LIMITS.component, rows: 3 }),
        "How the narrator writes: voice, tone, rules to follow. It comes first in every context."),
      field("Plot Essentials", textArea("plot_essentials", { max: LIMITS.component, rows: 3 }),
        "What must always hold: the setting, the stakes, the facts that never change."),
      field("Author's Note", textArea("authors_note", { max: LIMITS.component, rows: 2 }),
        "A short steer for the next replies (mood, pace), placed near the end of the context.")),
    h("fieldset", {}, h("legend", { text: "Memory" }), toggles()),
    formButtons(submit, back));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    create(blankBody(form), submit);
  });
  show(view, form);
}

function blankBody(form) {
  const body = { title: value(form, "title"), persona: personaOf(form), ...togglesOf(form) };
  for (const name of ["opening", "ai_instructions", "plot_essentials", "authors_note"]) {
    const text = value(form, name);
    if (text) body[name] = text;
  }
  return body;
}

function formHead(title, genre, back) {
  return h("div", { class: "row form-head" },
    h("h3", { text: title }),
    genre ? h("span", { class: "badge", text: genre }) : null,
    h("span", { class: "spacer" }),
    h("button", { type: "button", class: "link", text: "← All the ways to start", on: { click: back } }));
}

function formButtons(submit, back) {
  return h("div", { class: "row form-buttons" },
    submit, h("button", { type: "button", text: "Cancel", on: { click: back } }));
}

function show(view, form) {
  fill(view.root, form);
  view.root.closest("section")?.scrollIntoView({ block: "start" });
  form.querySelector("input, textarea")?.focus({ preventScroll: true });
}

/** Create the adventure and go to its play page; on a refusal, say why and let the player fix it. */
async function create(body, button) {
  const label = button.textContent;
  button.disabled = true;
  button.textContent = "Starting…";
  let created;
  try {
    created = await api("POST", "/api/adventures", body);
  } catch (error) {
    showError(`The adventure was not started: ${error.message}`);
    button.disabled = false;
    button.textContent = label;
    return;
  }
  window.location.assign(`/adventures/${encodeURIComponent(created.id)}`);
}
