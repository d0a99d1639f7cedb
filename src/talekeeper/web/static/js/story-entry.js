// One action of the story as an element, with its tools: Insights, takes, edit, fork, delete.
// Invariants:
// - An action's text reaches the page as text only (`h`/textContent): the engine's rendering
//   ("rendered": "> You open the door.", '> You say "Hi."', prose verbatim) is shown as is,
//   so a reply holding "<script>" or "onerror=" shows those characters and runs nothing.
// - Every change goes through `play.change(reason, request)`, which refuses while a reply is
//   being written, reloads the story on success, emits "story-changed" and shows failures.
// - Inline editors (edit, fork, delete) are one at a time per entry; Escape closes them and
//   leaves the story untouched.
import { h, api, emit, showError, confirmGroup } from "./ui.js";

const KIND_NAMES = {
  do: "Player action", say: "Player speech", story: "Player prose", narration: "Narration",
};

/** The element for one action. `head`: it is the newest action of the story. */
export function entryFor(action, play, head) {
  const editor = { close: null };
  const open = (build) => {
    if (editor.close) editor.close();
    editor.close = build(el, action, play, () => { editor.close = null; });
  };
  const tools = h("div", { class: "entry-tools" },
    head && action.type === "narration" && action.takes > 1 ? takeSwitcher(action, play) : null,
    action.has_insights ? insightsButton(action) : null,
    action.edited_at ? h("span", { class: "badge", text: "edited", title: "Edited by hand" }) : null,
    h("span", { class: "spacer" }),
    tool("Edit", () => open(startEdit)),
    tool("Fork", () => open(startFork), "Start a new branch of the story that ends here"),
    tool("Delete", () => open(startDelete)));
  const el = h("article", {
    class: `entry entry-${action.type}`,
    dataset: { id: String(action.id), depth: String(action.depth), type: action.type },
    attrs: { "aria-label": KIND_NAMES[action.type] || action.type },
  }, h("div", { class: "entry-text", text: action.rendered }), tools);
  return el;
}

function tool(label, onClick, title) {
  return h("button", { type: "button", class: "link tool", text: label, title, on: { click: onClick } });
}

// The 🔍 is drawn in CSS (.glass): an emoji font is not everywhere, and a missing glyph
// would show as an empty box.
function insightsButton(action) {
  return h("button", {
    type: "button",
    class: "icon insights-button",
    title: "🔍 Insights: what the narrator was given for this reply",
    attrs: { "aria-label": "Insights for this reply" },
    on: { click: () => emit("open-insights", { actionId: action.id, depth: action.depth }) },
  }, h("span", { class: "glass", attrs: { "aria-hidden": "true" } }), "Insights");
}

/** ‹ 2/3 › on the newest reply: the positions come from GET /takes (take numbers may skip). */
function takeSwitcher(action, play) {
  const count = h("span", { class: "take-count", text: `${action.take}/${action.takes}` });
  const prev = h("button", {
    type: "button", class: "icon", text: "‹", disabled: true, attrs: { "aria-label": "Previous take" },
  });
  const next = h("button", {
    type: "button", class: "icon", text: "›", disabled: true, attrs: { "aria-label": "Next take" },
  });
  const box = h("span", { class: "takes", attrs: { role: "group", "aria-label": "Takes" } },
    prev, count, next);
  api("GET", `${play.base}/takes`).then(({ takes }) => {
    const numbers = takes.map((t) => t.take).sort((a, b) => a - b);
    const at = numbers.indexOf(action.take);
    if (at < 0) return;
    count.textContent = `${at + 1}/${numbers.length}`;
    count.setAttribute("aria-label", `Take ${at + 1} of ${numbers.length}`);
    const go = (take) => play.change("take", () => api("POST", `${play.base}/switch-take`, { take }));
    prev.disabled = at === 0;
    next.disabled = at === numbers.length - 1;
    prev.addEventListener("click", () => go(numbers[at - 1]));
    next.addEventListener("click", () => go(numbers[at + 1]));
  }).catch(showError);
  return box;
}

/** Show `panel` in place of the entry's tools (and of its text when `hideText`). Returns
 * the function that closes it again. */
function mount(el, panel, done, hideText) {
  const text = el.querySelector(".entry-text");
  const tools = el.querySelector(".entry-tools");
  tools.hidden = true;
  if (hideText) text.hidden = true;
  el.classList.add("editing");
  el.insertBefore(panel, tools);
  return () => {
    panel.remove();
    tools.hidden = false;
    text.hidden = false;
    el.classList.remove("editing");
    done();
  };
}

function onEscape(close) {
  return (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault();
    event.stopPropagation();
    close();
  };
}

function startEdit(el, action, play, done) {
  const area = h("textarea", {
    class: "entry-edit-text",
    value: action.text,
    rows: Math.min(16, Math.max(3, Math.ceil(action.text.length / 80) + 1)),
    attrs: { "aria-label": "Text of this action" },
  });
  const save = h("button", { type: "submit", class: "primary", text: "Save" });
  const form = h("form", { class: "entry-panel entry-edit" },
    area,
    h("div", { class: "row" },
      save,
      h("button", { type: "button", text: "Cancel", on: { click: () => close() } }),
      h("span", { class: "muted small", text: "Escape cancels · Ctrl+Enter saves" })));
  const close = mount(el, form, done, true);
  area.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("keydown", onEscape(close));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save.disabled = true;
    const saved = await play.change("edit", () =>
      api("PATCH", `/api/actions/${action.id}`, { text: area.value }), { scroll: "keep" });
    if (!saved) save.disabled = false; // the form stays open with the text, the banner says why
  });
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
  return close;
}

function startFork(el, action, play, done) {
  const name = h("input", {
    type: "text",
    class: "fork-name",
    maxLength: 120,
    placeholder: "e.g. The road not taken",
    attrs: { "aria-label": "Name of the new branch" },
  });
  const form = h("form", { class: "entry-panel entry-fork" },
    h("p", {
      class: "small",
      text: "Start a new branch whose story ends with this action. This branch stays as it is.",
    }),
    h("div", { class: "row" },
      name,
      h("button", { type: "submit", class: "primary", text: "Create branch" }),
      h("button", { type: "button", text: "Cancel", on: { click: () => close() } })));
  const close = mount(el, form, done, false);
  form.addEventListener("keydown", onEscape(close));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const created = await play.change("fork", () =>
      api("POST", `/api/actions/${action.id}/fork`, { name: name.value.trim() }));
    if (created && created.branch) play.say(`Now on the new branch “${created.branch.name}”.`);
  });
  name.focus();
  return close;
}

function startDelete(el, action, play, done) {
  const question = action.type === "narration" && action.takes > 1
    ? "Delete this reply and its other takes from the story?"
    : "Delete this action from the story?";
  const panel = confirmGroup({
    question,
    yes: "Yes, delete",
    no: "Keep it",
    className: "entry-panel entry-confirm",
    onYes: () => play.change("delete", () => api("DELETE", `/api/actions/${action.id}`),
      { scroll: "keep" }),
    onNo: () => close(),
  });
  const close = mount(el, panel, done, false);
  return close;
}
