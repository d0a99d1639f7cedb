// Settings page helpers: which values the form changes, the model pickers, and the
// connection test's report. Invariants:
// - `changedValues` is the one reading of the form: the save, the model list and the
//   connection test all send what it returns (null = the server default, as the API reads it).
// - The API key is only ever sent when typed; it is never read back or shown.
// - Test results are shown as sentences (works / does not work, the time, the error), never
//   as raw JSON; model text is set as text.
import { h, fill, api, duration } from "./ui.js";

export const ENDPOINT_KEYS = ["endpoint_url", "api_key", "timeout"];

function read(field) {
  const { input, setting } = field;
  if (setting.type === "int" || setting.type === "float") {
    if (input.validity && input.validity.badInput) return "";  // not a number: the server says so
    return input.value.trim() === "" ? undefined : Number(input.value);
  }
  return input.value.trim();
}

function same(a, b) {
  if (typeof a === "number" || typeof b === "number") return Number(a) === Number(b);
  return (a ?? "") === (b ?? "");
}

/** What the form would change: {key: value}, null for "back to the server default".
 * `only`: one key; `endpointOnly`: what reaching the endpoint depends on. */
export function changedValues(state, { only, endpointOnly } = {}) {
  const out = {};
  for (const [key, field] of state.fields) {
    if ((only && key !== only) || (endpointOnly && !ENDPOINT_KEYS.includes(key))) continue;
    const value = read(field);
    if (field.setting.secret) {
      if (value) out[key] = value;
      else if (state.clearKey) out[key] = null;
    } else if (state.resets.has(key)) {
      if (state.overridden.has(key)) out[key] = null;
    } else if (value === undefined) {
      if (state.overridden.has(key)) out[key] = null;  // an emptied number: the server default
    } else if (!same(value, state.values[key])) {
      out[key] = value;
    }
  }
  return out;
}

// -- the model pickers ------------------------------------------------------------------

/** A list beside a model field: choosing an entry writes it into the field. */
export function modelPicker(name, input) {
  const select = h("select", {
    class: "model-picker",
    attrs: { "aria-label": `Choose the ${name.toLowerCase()} from the list` },
    on: {
      change: () => {
        if (select.selectedIndex > 0) {
          input.value = select.value;
          input.dispatchEvent(new Event("input", { bubbles: true }));
        }
        select.selectedIndex = 0;
      },
    },
  });
  return select;
}

/** Fill a picker: the endpoint's models (when listed), then the values that need none. */
export function fillPicker(select, setting, list) {
  const offered = list && !list.error ? list.models : [];
  const heading = list === null ? "Loading the list…" : "Choose from the list…";
  fill(select,
    h("option", { value: "", text: heading }),
    offered.length
      ? h("optgroup", { label: "Offered by the endpoint" },
        offered.map((m) => h("option", { value: m, text: m })))
      : null,
    setting.special.length
      ? h("optgroup", { label: "Without the endpoint" },
        setting.special.map((s) => h("option", {
          value: s.value, text: `${s.value || "(empty)"}: ${s.means}`,
        })))
      : null);
}

// -- the connection test ----------------------------------------------------------------

function check(title, part, details) {
  const ok = Boolean(part && part.ok);
  const model = part && part.model ? part.model : "no model";
  return h("li", { class: "check " + (ok ? "check-ok" : "check-bad"), dataset: { check: title } },
    h("div", { class: "check-head" },
      h("span", { class: "check-mark", attrs: { "aria-hidden": "true" }, text: ok ? "✓" : "✗" }),
      h("strong", { text: title }),
      h("span", { class: "muted", text: ` (${model}) ` }),
      h("span", { class: "check-verdict", text: ok ? "works" : "does not work" })),
    details.filter(Boolean).map((d) => h("p", { class: "check-detail", text: d })));
}

function narratorCheck(part) {
  const took = duration(part.latency_ms) ?? "";
  if (part.ok) {
    return check("Narrator", part, [
      `Answered in ${took}${part.tokens_out ? `, ${part.tokens_out} tokens` : ""}:`,
      `“${part.text.trim()}”`,
    ]);
  }
  return check("Narrator", part, [part.error || "It did not answer.", took && `(after ${took})`]);
}

function embeddingCheck(part) {
  if (part.note) return check("Embeddings", part, [part.note]);
  const took = duration(part.latency_ms) ?? "";
  if (part.ok) return check("Embeddings", part, [`${part.dimensions} dimensions in ${took}.`]);
  return check("Embeddings", part, [part.error || "No embedding came back.", took && `(after ${took})`]);
}

export function connectionReport(result) {
  return [
    h("p", {
      class: "check-summary " + (result.ok ? "check-ok" : "check-bad"),
      text: result.ok ? "Everything works." : "Something does not work: see below.",
    }),
    h("ul", { class: "checks" }, narratorCheck(result.narrator), embeddingCheck(result.embedding)),
  ];
}

/** Run the test with the form's values (saved or not) and show what works. */
export async function runConnectionTest(state, button, report) {
  button.disabled = true;
  const label = button.textContent;
  button.textContent = "Testing…";
  fill(report, h("p", { class: "muted", text: "Testing the connection…" }));
  try {
    const result = await api("POST", "/api/settings/test-connection", changedValues(state));
    fill(report, connectionReport(result));
  } catch (error) {
    fill(report, h("p", { class: "form-error", text: `The test could not run: ${error.message}` }));
  } finally {
    button.disabled = false;
    button.textContent = label;
  }
}
