// The action box (#action-box): the kind of action (do / say / story / continue), the text,
// Send. Invariants:
// - Enter sends, Shift+Enter inserts a new line (and Enter while an input method composes
//   a character does nothing special).
// - A continue carries no text: the text area is set aside (its text kept) while it is chosen.
// - Everything is disabled while a reply is being written.
import { h, fill, showError } from "./ui.js";

const KINDS = [
  { type: "do", label: "Do", hint: "What do you do? e.g. open the door" },
  { type: "say", label: "Say", hint: "What do you say? e.g. Who locked the library?" },
  { type: "story", label: "Story", hint: "Write what happens next, in your own words" },
  { type: "continue", label: "Continue", hint: "Nothing to write: the narrator goes on" },
];

export class ActionBox {
  constructor(root, play) {
    this.play = play;
    this.type = "do";
    this.kinds = KINDS.map((kind) => h("button", {
      type: "button",
      class: "kind",
      text: kind.label,
      dataset: { type: kind.type },
      on: { click: () => this.choose(kind.type) },
    }));
    this.area = h("textarea", {
      class: "action-text",
      rows: 2,
      attrs: { "aria-label": "Your action" },
      on: { keydown: (event) => this.key(event) },
    });
    this.send = h("button", { type: "submit", class: "primary send", text: "Send" });
    this.form = h("form", { class: "action-form", on: { submit: (e) => this.submit(e) } },
      h("div", { class: "row action-kinds" },
        h("div", { class: "segmented", attrs: { role: "group", "aria-label": "Kind of action" } },
          this.kinds),
        h("span", { class: "spacer" }),
        h("span", { class: "muted small", text: "Enter sends · Shift+Enter: new line" })),
      h("div", { class: "action-row" }, this.area, this.send));
    fill(root, this.form);
    this.choose("do");
  }

  choose(type) {
    this.type = type;
    const kind = KINDS.find((k) => k.type === type);
    for (const button of this.kinds) {
      button.setAttribute("aria-pressed", String(button.dataset.type === type));
    }
    this.area.placeholder = kind.hint;
    this.area.disabled = this.play.busy || type === "continue";
    this.form.classList.toggle("continuing", type === "continue");
    this.send.textContent = type === "continue" ? "Continue the story" : "Send";
    if (type !== "continue") this.area.focus();
  }

  key(event) {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    event.preventDefault();
    this.form.requestSubmit();
  }

  submit(event) {
    event.preventDefault();
    if (this.play.busy) return;
    if (this.type === "continue") {
      this.play.turns.send("continue", "");
      return;
    }
    const text = this.area.value;
    if (!text.trim()) {
      showError("Write what you do, say or tell first, or choose Continue to let the narrator go on.");
      return;
    }
    this.play.turns.send(this.type, text);
  }

  /** The kind and text a dry run should preview. */
  draft() {
    return { type: this.type, text: this.type === "continue" ? "" : this.area.value };
  }

  clear() {
    this.area.value = "";
  }

  focus() {
    if (!this.area.disabled) this.area.focus();
  }

  setBusy(busy) {
    this.form.classList.toggle("busy", busy);
    for (const button of this.kinds) button.disabled = busy;
    this.send.disabled = busy;
    this.area.disabled = busy || this.type === "continue";
  }
}
