// The Plot panel: the plot components the narrator reads on every turn (AI Instructions,
// Plot Essentials, Author's Note), edited in place; the adventure's toggles and section
// budgets (panel-budgets.js); the persona.
// Invariants: every change is one PATCH /api/adventures/{id}; what is shown afterwards is
// what the server stored (its answer), and a refused change leaves the editor open.
import { h, fill, api, notify, attempt } from "./ui.js";
import { block, editable, refresher } from "./panel-kit.js";
import { budgetsBlock } from "./panel-budgets.js";

const COMPONENT_MAX = 20000;
const COMPONENTS = [
  {
    key: "ai_instructions", label: "AI Instructions",
    hint: "How the narrator should write: voice, tense, length, what it must never do.",
  },
  {
    key: "plot_essentials", label: "Plot Essentials",
    hint: "What must never be forgotten: the premise, the stakes, the hero's goal.",
  },
  {
    key: "authors_note", label: "Author's Note",
    hint: "A short steer placed close to the newest action: tone, pace, focus.",
  },
];
const TOGGLES = [
  { key: "auto_summarize", label: "Keep a Story Summary automatically" },
  { key: "memory_bank", label: "Use the Memory Bank (retrieve memories each turn)" },
];
const PERSONA = [
  { key: "name", label: "Name", max: 120 },
  { key: "pronouns", label: "Pronouns", max: 40 },
  { key: "description", label: "Description", max: 2000, long: true },
];

export function plotPanel(ctx) {
  const el = h("div", { class: "panel-body" });
  const url = () => `/api/adventures/${ctx.id}`;

  async function patch(body) {
    const adventure = await api("PATCH", url(), body);
    ctx.setAdventure(adventure);
    notify("Saved.");
    return adventure;
  }

  function component({ key, label, hint }) {
    return h("div", { class: "plot-component", dataset: { component: key } },
      editable({
        label,
        text: ctx.adventure[key],
        placeholder: "Empty. " + hint,
        rows: 6,
        maxLength: COMPONENT_MAX,
        onSave: async (text) => (await patch({ [key]: text }))[key],
      }));
  }

  function toggle({ key, label }) {
    const box = h("input", {
      type: "checkbox", checked: Boolean(ctx.adventure[key]),
      on: {
        change: async () => {
          box.disabled = true;
          const done = await attempt(() => patch({ [key]: box.checked }));
          if (done === undefined) box.checked = !box.checked; // refused: show what is stored
          box.disabled = false;
        },
      },
    });
    return h("label", { class: "inline toggle" }, box, label);
  }

  const refresh = refresher(el, async () => null, () => {
    fill(el,
      block("Plot components",
        h("p", { class: "muted small", text: "The narrator reads these on every turn." }),
        COMPONENTS.map(component)),
      block("Settings for this adventure", h("div", { class: "toggles" }, TOGGLES.map(toggle))),
      block("Section budgets", budgetsBlock(ctx, patch)),
      block("You", personaView()));
  });

  function personaView() {
    const box = h("div", { class: "persona" });
    function show() {
      const p = ctx.adventure.persona || {};
      fill(box,
        h("div", { class: "row" },
          h("strong", { class: "persona-name", text: p.name || "No name yet" }),
          p.pronouns ? h("span", { class: "muted small", text: `(${p.pronouns})` }) : null,
          h("span", { class: "spacer" }),
          h("button", { type: "button", class: "link", text: "Edit persona", on: { click: edit } })),
        p.description ? h("p", { class: "small", text: p.description }) : null);
    }
    function edit() {
      box.dataset.editing = "1";
      const p = ctx.adventure.persona || {};
      const inputs = {};
      const fields = PERSONA.map(({ key, label, max, long }) => {
        inputs[key] = long
          ? h("textarea", { value: p[key] || "", rows: 3, attrs: { maxlength: max } })
          : h("input", { type: "text", value: p[key] || "", attrs: { maxlength: max } });
        const fieldId = `persona-${key}`;
        inputs[key].id = fieldId;
        return [h("label", { text: label, attrs: { for: fieldId } }), inputs[key]];
      });
      const done = () => {
        delete box.dataset.editing;
        show();
        document.dispatchEvent(new Event("tk:panel-idle"));
      };
      fill(box, h("form", {
        class: "editor",
        on: {
          submit: async (event) => {
            event.preventDefault();
            const body = {};
            for (const { key } of PERSONA) body[key] = inputs[key].value;
            if ((await attempt(() => patch({ persona: body }))) !== undefined) done();
          },
        },
      }, fields, h("div", { class: "row" },
        h("button", { type: "submit", class: "primary", text: "Save persona" }),
        h("button", { type: "button", text: "Cancel", on: { click: done } }))));
      inputs.name.focus();
    }
    show();
    return box;
  }

  return { el, refresh };
}
