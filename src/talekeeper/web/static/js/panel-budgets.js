// The adventure's section budgets in the Plot panel (docs/context.md, "Section budgets"):
// how much of the context the Memories, Story Cards, Knowledge and Current state may take,
// each a share of the prompt (in percent here) and a ceiling in tokens; an empty field is
// the default, shown as its placeholder.
// Invariants: Save sends the whole set in one PATCH /api/adventures/{id} (what the form
// shows replaces what was stored; "Use the defaults" sends {}); what is shown afterwards is
// the server's answer; a refused change keeps the form as typed and shows the server's
// message. The floors are fixed and only shown.
import { h, fill, attempt } from "./ui.js";

const UNITS = { memory: "tokens a memory", passage: "tokens a passage" };
const percent = (share) => String(Math.round(share * 1000) / 10);

/** The budgets block; `patch(body)` stores a change and answers the adventure. */
export function budgetsBlock(ctx, patch) {
  const box = h("div", { class: "budgets" });

  function draw() {
    const rows = ctx.adventure.section_budgets || [];
    const fields = new Map();
    const tbody = h("tbody", {}, rows.map((b) => {
      const unit = UNITS[b.per] || "tokens";
      const share = h("input", {
        type: "number", value: b.share_set ? percent(b.share) : "",
        placeholder: percent(b.default_share),
        attrs: { min: "0.1", max: "75", step: "any", "aria-label": `${b.title}: share of the prompt (%)` },
      });
      const ceiling = h("input", {
        type: "number", value: b.ceiling_set ? String(b.ceiling) : "",
        placeholder: String(b.default_ceiling),
        attrs: { min: String(b.floor), max: "32768", step: "1", "aria-label": `${b.title}: ceiling (${unit})` },
      });
      fields.set(b.name, { share, ceiling });
      return h("tr", { dataset: { section: b.name } },
        h("th", { scope: "row", text: b.title }),
        h("td", {}, share),
        h("td", {}, ceiling, b.per ? h("span", { class: "muted small", text: ` a ${b.per}` }) : null),
        h("td", { class: "muted small", text: `${b.floor}` }));
    }));
    const form = h("form", {
      // novalidate: the server's message says what to fix, in words, for any bad value
      class: "editor budgets-form", attrs: { "aria-label": "Section budgets", novalidate: true },
      on: { submit: (event) => { event.preventDefault(); save(wanted(fields)); } },
    },
      h("table", { class: "budgets-table" },
        h("thead", {}, h("tr", {},
          h("th", { text: "Section" }), h("th", { text: "Share (%)" }),
          h("th", { text: "Ceiling (tokens)" }), h("th", { text: "Floor" }))),
        tbody),
      h("div", { class: "row" },
        h("button", { type: "submit", class: "primary", text: "Save budgets" }),
        h("button", { type: "button", text: "Use the defaults", on: { click: () => save({}) } })));
    fill(box,
      h("p", { class: "muted small", text: "How much of the context each section may take: a "
        + "share of the prompt, never above its ceiling nor below its floor. What a section "
        + "leaves goes to the story so far. Empty: the default." }),
      form);
  }

  async function save(body) {
    const stored = await attempt(() => patch({ section_budgets: body }));
    if (stored !== undefined) draw();
  }

  draw();
  return box;
}

/** The set the form asks for: only the fields filled in. */
function wanted(fields) {
  const body = {};
  for (const [name, { share, ceiling }] of fields) {
    const own = {};
    if (share.value.trim() !== "") own.share = Number(share.value) / 100;
    if (ceiling.value.trim() !== "") own.ceiling = Number(ceiling.value);
    if (Object.keys(own).length) body[name] = own;
  }
  return body;
}
