// Form fields of the new-adventure forms. Invariants:
// - Every control has a visible <label> bound to it (and its hint through aria-describedby),
//   so people and tests find it by its name.
// - The length limits are the server's (services/limits.py); the browser stops typing at
//   them, and the server still checks every value.
import { h } from "./ui.js";

export const LIMITS = {
  title: 200,
  narration: 20_000,
  component: 20_000,
  personaName: 120,
  personaPronouns: 40,
  personaDescription: 2_000,
};

let serial = 0;

export function textInput(name, { value = "", max, required = false, placeholder } = {}) {
  return h("input", {
    type: "text", name, value: value ?? "", required, placeholder,
    attrs: { maxlength: max, autocomplete: "off" },
  });
}

export function textArea(name, { value = "", max, rows = 3, placeholder } = {}) {
  return h("textarea", { name, value: value ?? "", rows, placeholder, attrs: { maxlength: max } });
}

/** A labelled control with an optional hint under it. */
export function field(label, control, hint = null) {
  const id = control.id || (control.id = `new-field-${++serial}`);
  let note = null;
  if (hint) {
    note = h("p", { class: "hint small muted", id: `${id}-hint`, text: hint });
    control.setAttribute("aria-describedby", note.id);
  }
  return h("div", { class: "field" }, h("label", { attrs: { for: id }, text: label }), control, note);
}

export function personaFields(persona) {
  return h("fieldset", { class: "persona" }, h("legend", { text: "Your character" }),
    h("div", { class: "persona-row" },
      field("Name", textInput("persona_name", { value: persona.name, max: LIMITS.personaName })),
      field("Pronouns", textInput("persona_pronouns", {
        value: persona.pronouns, max: LIMITS.personaPronouns, placeholder: "e.g. she/her",
      }))),
    field("Description", textArea("persona_description", {
      value: persona.description, max: LIMITS.personaDescription, rows: 3,
    }), "Who you are, in a sentence or two. The narrator reads it every turn."));
}

export function personaOf(form) {
  return {
    name: value(form, "persona_name"),
    pronouns: value(form, "persona_pronouns"),
    description: value(form, "persona_description"),
  };
}

export function toggles() {
  return h("div", { class: "toggles" },
    toggle("auto_summarize", "Write memories and a Story Summary as the story grows"),
    toggle("memory_bank", "Use the Memory Bank: bring back the memories that matter each turn"));
}

function toggle(name, text) {
  return h("label", { class: "inline" }, h("input", { type: "checkbox", name, checked: true }), text);
}

export function togglesOf(form) {
  return {
    auto_summarize: form.elements.namedItem("auto_summarize").checked,
    memory_bank: form.elements.namedItem("memory_bank").checked,
  };
}

/** The trimmed text of the form's control `name`. */
export function value(form, name) {
  const control = form.elements.namedItem(name);
  return control ? String(control.value).trim() : "";
}
