// Small building blocks the side panels share. Invariants:
// - Everything is built with `h` (text only, never HTML).
// - An open editor marks itself with `data-editing`; a panel that is asked to refresh while
//   one is open waits (`refresher`), so a background update never throws away what the
//   player is typing. Closing an editor fires "tk:panel-idle" so the waiting refresh runs.
// - A destructive button asks first, in the page (`confirmButton`), never with a browser
//   dialog that a stray Enter would accept.
// - A secret (a memory's, a card's or a world event's `known_by`: names, [] for one only the
//   player's character keeps, null for none) is shown and set the same way in every panel:
//   `secretBadge` and `secretForm`.
import { h, fill, attempt, confirmGroup, notify } from "./ui.js";

/** A refresh for one panel: `load()` fetches, `draw(data)` redraws. Calls never overlap (a
 * call during a run asks for one more run after it). While an editor is open inside `root`
 * nothing is drawn: a run that finds one open before it starts, or one that the player opened
 * while the fetch was on its way, waits until it closes and runs again then. `draw` may be
 * left out by a panel with no editor, whose `load` draws as it likes. */
export function refresher(root, load, draw = null) {
  let running = false;
  let again = false;
  let waiting = false;
  const editing = () => root.querySelector("[data-editing]") !== null;
  async function refresh() {
    if (editing()) {
      waiting = true;
      return;
    }
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await attempt(async () => {
        const data = await load();
        if (!draw) return;
        if (editing()) waiting = true; // drawing now would throw away what is being typed
        else draw(data);
      });
    } finally {
      running = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }
  document.addEventListener("tk:panel-idle", () => {
    if (waiting && !root.querySelector("[data-editing]")) {
      waiting = false;
      refresh();
    }
  });
  return refresh;
}

function closed(el) {
  delete el.dataset.editing;
  // Bubbles to the document from a connected element; a detached one tells the document.
  (el.isConnected ? el : document).dispatchEvent(new Event("tk:panel-idle", { bubbles: true }));
}

/** Text shown as a paragraph; "Edit" turns it into a textarea with Save and Cancel.
 * `onSave(text)` returns a promise of the stored text (shown afterwards); a failure keeps the
 * editor open with its text and shows the error. */
export function editable({ label, text, placeholder, rows = 4, maxLength, onSave, editLabel }) {
  const box = h("div", { class: "editable" });
  let current = text || "";

  function show() {
    fill(box,
      h("div", { class: "editable-head row" },
        h("span", { class: "editable-label", text: label }),
        h("span", { class: "spacer" }),
        h("button", {
          type: "button", class: "link", text: "Edit",
          attrs: { "aria-label": editLabel || `Edit ${label}` },
          on: { click: edit },
        })),
      current
        ? h("p", { class: "editable-text", text: current })
        : h("p", { class: "editable-text muted", text: placeholder || "Empty." }));
  }

  function edit() {
    box.dataset.editing = "1";
    const area = h("textarea", {
      value: current, rows, attrs: { "aria-label": label, maxlength: maxLength || null },
    });
    const save = h("button", { type: "submit", class: "primary", text: "Save" });
    const form = h("form", { class: "editor", on: { submit: submit } },
      h("label", { class: "editable-label", text: label }),
      area,
      h("div", { class: "row" }, save,
        h("button", { type: "button", text: "Cancel", on: { click: cancel } })));
    async function submit(event) {
      event.preventDefault();
      save.disabled = true;
      const stored = await attempt(() => onSave(area.value));
      save.disabled = false;
      if (stored === undefined) return;
      current = stored ?? area.value;
      show();
      closed(box);
    }
    function cancel() {
      show();
      closed(box);
    }
    area.addEventListener("keydown", (event) => {
      if (event.key === "Escape") cancel();
    });
    fill(box, form);
    area.focus();
  }

  show();
  return box;
}

/** A button that asks before it acts: "Delete" → "Delete this card? [Yes, delete] [Cancel]". */
export function confirmButton({ label, question, confirmLabel, ariaLabel, onConfirm }) {
  const box = h("span", { class: "confirm" });
  function ask() {
    box.dataset.editing = "1";
    fill(box, confirmGroup({
      question,
      yes: confirmLabel || `Yes, ${label.toLowerCase()}`,
      onYes: async (yes) => {
        yes.disabled = true;
        await attempt(onConfirm);
        yes.disabled = false;
        rest();
      },
      onNo: rest,
    }));
  }
  function rest() {
    fill(box, h("button", {
      type: "button", class: "danger", text: label,
      attrs: { "aria-label": ariaLabel || label }, on: { click: ask },
    }));
    if (box.dataset.editing) closed(box);
  }
  rest();
  return box;
}

/** A titled block inside a panel. */
export function block(title, ...children) {
  return h("section", { class: "panel-block" }, h("h3", { text: title }), ...children);
}

/** "a, b ,c" -> ["a", "b", "c"] (empty parts dropped). */
export function splitList(text) {
  return String(text || "").split(",").map((part) => part.trim()).filter(Boolean);
}

/** The badge of a secret ("secret: known only to Mara and you"), or nothing where
 * `knownBy` is not a list (no secret). `className` names what it marks; `title` says what
 * the secret does to a turn. */
export function secretBadge(knownBy, className, title) {
  if (!Array.isArray(knownBy)) return null;
  const who = knownBy.length ? `${knownBy.join(", ")} and you` : "you";
  return h("span", { class: `badge secret ${className}`, text: `secret: known only to ${who}`, title });
}

/** The form that says who knows a secret: names separated by commas (none: only the
 * player's character), "Keep secret", "No longer a secret" where it is one, and Cancel.
 * `onSave(list | null)` stores it and returns a promise of what was stored; a failure keeps
 * the form open with what was typed and shows the server's message. The caller places it
 * and refreshes its panel from `onSave`: the refresh waits until the form is gone.
 * `className`, where given, is added to the form's own classes ("editor secret-form"). */
export function secretForm({ knownBy, onSave, className = "" }) {
  const names = h("input", {
    type: "text", value: (knownBy || []).join(", "),
    attrs: { "aria-label": "Known only by (names, separated by commas)", maxlength: 2000 },
  });
  async function keep(known) {
    const done = await attempt(() => onSave(known));
    if (done !== undefined) close();
  }
  const form = h("form", {
    class: `editor secret-form ${className}`.trim(), dataset: { editing: "1" },
    on: {
      submit: (event) => {
        event.preventDefault();
        keep(splitList(names.value));
      },
    },
  }, names, h("div", { class: "row" },
    h("button", { type: "submit", class: "primary", text: "Keep secret" }),
    Array.isArray(knownBy)
      ? h("button", { type: "button", text: "No longer a secret", on: { click: () => keep(null) } })
      : null,
    h("button", { type: "button", text: "Cancel", on: { click: close } })));
  function close() {
    form.remove();
    closed(form);
  }
  // A microtask, not a timer: the caller inserts the form in the same handler, and focus
  // must land before the next input event (a timer could move it after the player, or a
  // test, has started typing in another field).
  queueMicrotask(() => names.focus());
  return form;
}

/** Scroll the story to one of its actions (a world event's, a card proposal's evidence). */
export function showAction(actionId) {
  const entry = document.querySelector(`article.entry[data-id="${Number(actionId)}"]`);
  if (entry) entry.scrollIntoView({ block: "center" });
  else notify(`Action #${actionId} is further back in the story than the page shows.`);
}
