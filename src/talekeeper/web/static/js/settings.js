// Settings page: the player's own settings as a form, saved with PATCH /api/settings.
// Invariants:
// - The API key field is a password field that is never filled from the server: the page
//   only learns whether a key is set (api_key_set), so no saved key can reach the page.
// - Only changed values are sent; "Use the server default" sends null for that setting.
//   Nothing is checked here that the server checks: its message is shown beside the form
//   (and beside the field it names), and a refused save changes nothing.
// - Every setting the server describes gets a field with its help text, known or not.
// - The model pickers list the endpoint's own models (GET/POST /api/settings/models) and
//   the values that need no endpoint; any name can still be typed.
import { h, fill, api, notify } from "./ui.js";
import {
  ENDPOINT_KEYS, changedValues, fillPicker, modelPicker, runConnectionTest,
} from "./settings-check.js";
import { localServers } from "./local-servers.js";

const GROUPS = [
  ["Endpoint", "Where the models live and how to reach them.", ["endpoint_url", "api_key", "timeout"]],
  ["Models", "Which model does what. Pick from the endpoint's list or type a name.",
    ["model", "summary_model", "embedding_model", "api_mode"]],
  ["Generation", "How the narrator writes.", ["temperature", "top_p", "context_tokens", "reply_tokens", "context_layout"]],
  ["Memory", "How much the story remembers, and how much of the knowledge library comes in.",
    ["memory_top_k", "bank_capacity", "knowledge_top_k"]],
];
const LABELS = {
  endpoint_url: "Endpoint URL", api_key: "API key", timeout: "Timeout (seconds)",
  model: "Narrator model", summary_model: "Memories and summary model",
  embedding_model: "Embedding model", api_mode: "API mode", temperature: "Temperature",
  top_p: "Top-p", context_tokens: "Context length (tokens)", reply_tokens: "Reply length (tokens)",
  memory_top_k: "Memories per turn (top-K)", bank_capacity: "Memory Bank capacity",
  knowledge_top_k: "Library passages per turn (top-K)",
  context_layout: "Context layout",
};

const root = document.getElementById("settings-root");
const state = {
  settings: [],            // descriptions from the server, in its order
  values: {},              // saved values (public: never the key)
  overridden: new Set(),   // keys the player has set (the rest are the server's)
  resets: new Set(),       // keys to send as null on save
  clearKey: false,         // remove the player's API key on save
  models: null,            // {models, error, endpoint} from the model list, or null while loading
  fields: new Map(),       // key -> {setting, input, error, picker}
};

function label(key) {
  return LABELS[key] || key.replace(/_/g, " ");
}

function described(key) {
  return state.settings.find((s) => s.key === key);
}

function shown(setting, value) {
  if (value === "" || value === null || value === undefined) {
    return setting.key === "summary_model" ? "(empty: the narrator's model)" : "(empty)";
  }
  return String(value);
}

// -- the form ---------------------------------------------------------------------------

function control(setting, id) {
  const common = { id, name: setting.key, attrs: { "aria-describedby": id + "-help" } };
  if (setting.secret) {
    return h("input", { ...common, type: "password", value: "", autocomplete: "new-password",
      spellcheck: false, placeholder: "Type a key to set it" });
  }
  if (setting.choices.length) {
    return h("select", common, setting.choices.map((c) => h("option", { value: c, text: c })));
  }
  if (setting.type === "int" || setting.type === "float") {
    return h("input", { ...common, type: "number", step: setting.type === "int" ? "1" : "any",
      inputMode: setting.type === "int" ? "numeric" : "decimal",
      attrs: { ...common.attrs, min: setting.minimum, max: setting.maximum } });
  }
  return h("input", { ...common, type: "text", spellcheck: false, autocomplete: "off" });
}

function keyStatus() {
  const own = state.overridden.has("api_key");
  if (state.clearKey) return "Your key will be removed when you save.";
  if (state.values.api_key_set) return own ? "A key is set." : "A key is set by the server.";
  return "No key is set.";
}

function keyControls(field) {
  const status = h("span", { class: "key-status", text: keyStatus() });
  const clear = h("button", {
    type: "button", class: "link", text: state.clearKey ? "Keep the key" : "Remove the key",
    hidden: !state.overridden.has("api_key"),
    on: { click: () => { state.clearKey = !state.clearKey; replaceField("api_key"); } },
  });
  field.input.addEventListener("input", () => {
    if (!field.input.value || !state.clearKey) return;
    state.clearKey = false;  // a new key replaces the old one instead
    status.textContent = keyStatus();
    clear.textContent = "Remove the key";
  });
  return h("div", { class: "row key-row" }, status, clear);
}

function fieldFor(setting) {
  const id = "setting-" + setting.key;
  const input = control(setting, id);
  const error = h("p", { class: "field-error", id: id + "-error", hidden: true });
  const picker = setting.names_model ? modelPicker(label(setting.key), input) : null;
  const field = { setting, input, error, picker };
  state.fields.set(setting.key, field);
  if (!setting.secret) input.value = state.resets.has(setting.key)
    ? valueText(setting.default) : valueText(state.values[setting.key]);
  input.addEventListener("input", () => { state.resets.delete(setting.key); markChanged(field); });
  input.addEventListener("change", () => markChanged(field));
  const own = state.overridden.has(setting.key) && !state.resets.has(setting.key);
  const reset = own && !setting.secret ? h("button", {
    type: "button", class: "link small", text: "Use the server default",
    attrs: { "aria-label": `Use the server default for ${label(setting.key)}` },
    on: { click: () => { state.resets.add(setting.key); replaceField(setting.key); } },
  }) : null;
  const origin = setting.secret ? null : h("span", {
    class: "badge " + (own ? "badge-own" : ""), text: own ? "yours" : "server default",
    title: own ? "You set this value" : "The server's value: set one to override it",
  });
  const box = h("div", { class: "setting", dataset: { key: setting.key } },
    h("div", { class: "row setting-head" }, h("label", { class: "setting-label", htmlFor: id, text: label(setting.key) }),
      origin, h("span", { class: "spacer" }), reset),
    picker ? h("div", { class: "row picker-row" }, input, picker) : input,
    setting.secret ? keyControls(field) : null,
    error,
    h("p", { class: "help muted small", id: id + "-help" },
      setting.help, " ",
      h("span", { class: "accepts", text: `Accepts ${setting.accepts}.` }),
      setting.secret ? null : ` Server default: ${shown(setting, setting.default)}.`,
      setting.key === "summary_model" && state.values.summary_model_resolved
        ? ` In use now: ${state.values.summary_model_resolved}.` : null,
      setting.key === "endpoint_url" && state.values.endpoint_credentials_set
        ? h("span", { class: "credentials-status",
          text: " A user name and password are set in this URL (never shown): they stay "
            + "while the URL is unchanged; type the whole URL again to change them." })
        : null));
  markChanged(field);
  return box;
}

/** Rebuild one field (after a reset or a key removal), leaving the others' edits alone. */
function replaceField(key) {
  const old = state.fields.get(key).input.closest(".setting");
  const box = fieldFor(described(key));
  old.replaceWith(box);
  const field = state.fields.get(key);
  if (field.picker) fillPicker(field.picker, field.setting, state.models);
  box.querySelector("input, select")?.focus();
}

function valueText(value) {
  return value === null || value === undefined ? "" : String(value);
}

function markChanged(field) {
  const key = field.setting.key;
  const changed = key in changedValues(state, { only: key });
  field.input.closest(".setting")?.classList.toggle("changed", changed);
}

function renderForm() {
  state.fields.clear();
  const placed = new Set();
  const sets = GROUPS.map(([title, blurb, keys]) => {
    const settings = keys.map(described).filter(Boolean);
    settings.forEach((s) => placed.add(s.key));
    const extra = title === "Models" ? form.modelStatus : null;
    return settings.length ? group(title, blurb, settings, extra) : null;
  });
  const rest = state.settings.filter((s) => !placed.has(s.key));
  if (rest.length) sets.push(group("Other", "More settings this server offers.", rest));
  fill(form.fields, sets);
  renderPickers();
}

function group(title, blurb, settings, extra = null) {
  return h("fieldset", { class: "settings-group" },
    h("legend", { text: title }),
    h("p", { class: "muted small", text: blurb }),
    extra,
    settings.map(fieldFor));
}

// -- saving -----------------------------------------------------------------------------

function say(text, kind) {
  fill(form.message, text ? h("p", { class: "form-" + kind, text }) : null);
  form.message.setAttribute("role", kind === "error" ? "alert" : "status");
}

function clearErrors() {
  for (const field of state.fields.values()) {
    field.error.hidden = true;
    field.error.textContent = "";
    field.input.removeAttribute("aria-invalid");
  }
}

/** Mark the field the server's message names (by its variable or its key). */
function markError(message) {
  for (const field of state.fields.values()) {
    const { env, key } = field.setting;
    if (message.includes(env + "=") || message.includes(env + " ") || message.includes(`'${key}'`)) {
      field.error.textContent = message;
      field.error.hidden = false;
      field.input.setAttribute("aria-invalid", "true");
      return field;
    }
  }
  return null;
}

async function save(event) {
  event.preventDefault();
  clearErrors();
  const changes = changedValues(state);
  const count = Object.keys(changes).length;
  if (!count) {
    say("Nothing to save: no setting was changed.", "info");
    return;
  }
  form.save.disabled = true;
  say("Saving…", "info");
  try {
    const saved = await api("PATCH", "/api/settings", changes);
    const endpointMoved = ENDPOINT_KEYS.some((k) => k in changes);
    applySaved(saved);
    say(`Saved ${count} ${count === 1 ? "setting" : "settings"}.`, "ok");
    notify("Settings saved.");
    if (endpointMoved) loadModels(false);
  } catch (error) {
    const field = markError(error.message);
    say(`Nothing was saved: ${error.message}`, "error");
    field?.input.focus();
  } finally {
    form.save.disabled = false;
  }
}

function applySaved(saved) {
  state.values = saved.values;
  state.overridden = new Set(saved.overridden || []);
  state.resets.clear();
  state.clearKey = false;
  renderForm();
  const models = document.querySelector(".topbar .models");
  if (models) {
    const v = saved.values;
    models.textContent = `${v.model} · ${v.summary_model_resolved} · ${v.embedding_model}`;
  }
}

// -- the model list ---------------------------------------------------------------------

let modelsAsked = 0;

/** Read the endpoint's models: the saved endpoint, or the form's unsaved one. Only the
 * newest request's answer is shown: an older, slower one (the saved endpoint read at load)
 * must not replace the list for the URL the player has just typed. */
async function loadModels(unsaved) {
  const asked = ++modelsAsked;
  state.models = null;
  renderPickers();
  let body;
  try {
    body = unsaved
      ? await api("POST", "/api/settings/models", changedValues(state, { endpointOnly: true }))
      : await api("GET", "/api/settings/models");
  } catch (error) {
    body = { models: [], error: error.message, endpoint: "" };
  }
  if (asked !== modelsAsked) return;
  state.models = body;
  renderPickers();
}

function renderPickers() {
  for (const field of state.fields.values()) {
    if (field.picker) fillPicker(field.picker, field.setting, state.models);
  }
  const list = state.models;
  let text;
  let kind = "info";
  if (list === null) text = "Reading the endpoint's model list…";
  else if (list.error) {
    text = `The model list could not be read: ${list.error}`;
    kind = "warn";
  } else {
    const n = list.models.length;
    text = `${list.endpoint} offers ${n} ${n === 1 ? "model" : "models"}.`;
  }
  fill(form.modelStatus, h("span", { class: "models-" + kind, text }),
    " ", h("button", { type: "button", class: "link", text: "Reload the list",
      disabled: list === null, on: { click: () => loadModels(true) } }));
}

// -- the page ---------------------------------------------------------------------------

const form = {
  fields: h("div", { class: "settings-fields" }),
  message: h("div", { class: "form-message", attrs: { "aria-live": "polite" } }),
  modelStatus: h("p", { class: "models-status small", attrs: { "aria-live": "polite" } }),
  save: h("button", { type: "submit", class: "primary", text: "Save settings" }),
  report: h("div", { class: "connection-report", attrs: { "aria-live": "polite" } }),
};

function layout() {
  const test = h("button", { type: "button", text: "Test connection",
    on: { click: () => runConnectionTest(state, test, form.report) } });
  const element = h("form", { class: "settings-form", noValidate: true, on: { submit: save } },
    h("h1", { text: "Settings" }),
    h("p", { class: "muted", text: "These are your settings: each one overrides the server's "
      + "default for you. Change what you need and save; test the connection first if you like." }),
    form.fields,
    h("div", { class: "settings-actions" },
      form.message,
      h("div", { class: "row" }, form.save,
        h("button", { type: "button", text: "Undo changes",
          on: { click: () => { state.resets.clear(); state.clearKey = false; clearErrors();
            say("", "info"); renderForm(); } } }))));
  const local = h("div");
  const side = h("aside", { class: "settings-side", attrs: { "aria-label": "Connection" } },
    h("section", { class: "card", attrs: { "aria-labelledby": "local-heading" } },
      h("h2", { id: "local-heading", text: "On this machine" }),
      h("p", { class: "muted small", text: "Model servers running here (Ollama, LM Studio, "
        + "llama.cpp, KoboldCpp, vLLM). One click saves the server as your endpoint and the "
        + "model as your narrator." }),
      local),
    h("div", { class: "card" },
      h("h2", { text: "Connection" }),
      h("p", { class: "muted small", text: "Tries a short reply from the narrator and one "
        + "embedding with the values in the form, saved or not." }),
      test,
      form.report));
  fill(root, element, side);
  localServers(local, {
    current: () => state.values,
    otherwise: "enter an endpoint in the form",
    onUsed: (saved) => { applySaved(saved); loadModels(false); },
  });
  form.endpointInputs = () => ENDPOINT_KEYS
    .map((k) => state.fields.get(k)?.input).filter(Boolean);
}

async function start() {
  layout();
  fill(form.fields, h("p", { class: "muted", text: "Loading your settings…" }));
  let body;
  try {
    body = await api("GET", "/api/settings");
  } catch (error) {
    fill(form.fields, h("p", { class: "form-error", text: `The settings could not be read: ${error.message}` }));
    return;
  }
  state.settings = body.settings;
  state.values = body.values;
  state.overridden = new Set(body.overridden || []);
  renderForm();
  root.addEventListener("change", (event) => {
    if (form.endpointInputs().includes(event.target)) loadModels(true);
  });
  await loadModels(false);
}

start();
