// "Start from a file…" on the adventures page: a new adventure from another tool's file
// (character cards as .json/.png/.charx, NovelAI scenarios and stories, AI Dungeon and
// KoboldAI files). Invariants:
// - Choosing a file only previews it (a dry run: nothing is made): the title, the opening
//   and a choice of greeting when the file has alternate ones, the plot components in
//   brief, the cards it makes and the report (totals first, then items by level).
// - "Create adventure" sends the same file with the same options and the chosen greeting
//   (`greeting=N`, 0 the opening), then opens the new adventure's page.
// - A refusal is the server's message, shown in the preview area; nothing is made.
// - Everything from the file is shown as text (`h`, textContent).
// - A file dropped on the adventures page starts what choosing it with "Start from a file…"
//   starts; of several files the first is read and the preview says so. Text or a link
//   dropped there does nothing (lore-preview.js).
import { h, fill } from "./ui.js";
import {
  postFile, fileUrl, readingOptions, reportView, cardsView, refusalView, readingView,
  formatLabel, cardCount, fileDropTarget,
} from "./lore-preview.js";

const ACCEPT = ".json,.png,.charx,.scenario,.story,.txt,application/json,image/png";
const BRIEF_CHARS = 280;
const URL_PATH = "/api/adventures/from-file";
const DROP_ZONE = "adventures-page";

let chosen = null; // the newest chooser's `onChosen`: where a dropped file goes
let dropNote = null; // said by the preview a drop opens: "only the first of 3 files is read"

// Files dropped on the page go where the chooser's button sends them. Listening from the
// start: a file dropped before the chooser is shown must not replace the page either.
fileDropTarget({
  zone: () => (chosen ? document.getElementById(DROP_ZONE) : null),
  hint: "Drop to preview a new adventure from this file",
  onFile: (file, note) => {
    dropNote = note;
    try {
      chosen(file);
    } finally {
      dropNote = null;
    }
  },
});

/** The chooser's card: "Start from a file…"; `onChosen(file)` when one is picked. */
export function fileCard(onChosen) {
  chosen = onChosen;
  const picker = h("input", {
    type: "file", hidden: true, id: "from-file-input",
    attrs: { accept: ACCEPT, "aria-label": "A file to start an adventure from" },
  });
  picker.addEventListener("change", () => {
    const file = picker.files && picker.files[0];
    picker.value = "";
    if (file) onChosen(file);
  });
  return h("li", { class: "scenario card blank from-file" },
    h("h3", { text: "Another tool's file" }),
    h("p", { class: "scenario-description",
      text: "A character card (.json, .png, .charx), a NovelAI scenario or story, an AI Dungeon "
        + "or KoboldAI file. You see what it holds before anything is made." }),
    h("div", { class: "row scenario-actions" },
      h("button", {
        type: "button", text: "Start from a file…", id: "start-from-file",
        on: { click: () => picker.click() },
      }), picker));
}

/** The preview of `file` in `root`; `back()` returns to the chooser. */
export function filePreview(root, file, back) {
  const note = dropNote;
  const options = readingOptions(() => read(), "from-file");
  const status = h("div", { class: "lore-status" });
  const body = h("div", { class: "lore-body" });
  const create = h("button", { type: "submit", class: "primary", text: "Create adventure", disabled: true });
  const cancel = h("button", { type: "button", text: "Cancel", on: { click: back } });
  const form = h("form", {
    class: "new-form card lore-preview", attrs: { "aria-label": `New adventure from “${file.name}”` },
    on: { submit: (event) => { event.preventDefault(); confirm(); } },
  },
  h("div", { class: "row form-head" },
    h("h3", { text: `From “${file.name}”` }),
    h("span", { class: "spacer" }),
    h("button", { type: "button", class: "link", text: "← All the ways to start", on: { click: back } })),
  note ? h("p", { class: "small muted lore-drop-note", attrs: { role: "status" }, text: note }) : null,
  status, body, options.el,
  h("div", { class: "row form-buttons" }, create, cancel));
  let serial = 0;
  let greeting = 0;

  async function read() {
    const mine = ++serial;
    create.disabled = true;
    options.disabled = true;
    fill(status, readingView(file.name));
    let answer;
    try {
      answer = await postFile(fileUrl(URL_PATH, file, { dry_run: "true", ...options.values() }), file);
    } catch (error) {
      if (mine !== serial) return;
      fill(status);
      fill(body, refusalView(file.name, error));
      return;
    } finally {
      if (mine === serial) options.disabled = false;
    }
    if (mine !== serial) return;
    const greetings = answer.alternate_greetings || [];
    if (greeting > greetings.length) greeting = 0;
    fill(status, h("p", { class: "lore-format" },
      h("span", { class: "muted", text: "Read as " }), h("strong", { text: formatLabel(answer.format) }), "."));
    fill(body,
      h("h4", { class: "lore-title", text: answer.title }),
      answer.description ? h("p", { class: "small muted lore-description", text: answer.description }) : null,
      openingChoice(answer.opening, greetings),
      components(answer),
      h("details", { class: "lore-cards-box" },
        h("summary", { text: `${cardCount(answer.cards.length)} for the Cards panel` }),
        cardsView(answer.cards, { label: "Cards the adventure starts with" })),
      reportView(answer.report));
    create.disabled = false;
  }

  function openingChoice(opening, greetings) {
    if (!greetings.length) {
      return h("div", { class: "lore-opening" },
        h("h4", { text: "Opening" }),
        opening ? h("p", { class: "opening", text: opening })
          : h("p", { class: "small muted", text: "No opening: the story begins with your first action." }));
    }
    const choices = [opening, ...greetings].map((text, index) => {
      const input = h("input", {
        type: "radio", name: "greeting", value: String(index), checked: index === greeting,
        on: { change: () => { greeting = index; } },
      });
      const label = index === 0 ? "The opening" : `Alternate greeting ${index}`;
      return h("label", { class: "lore-greeting" },
        h("span", { class: "lore-greeting-head" }, input, h("strong", { text: label })),
        h("span", { class: "opening", text: text || "(empty)" }));
    });
    return h("fieldset", { class: "lore-opening" },
      h("legend", { text: "How the story opens" }), choices);
  }

  async function confirm() {
    create.disabled = true;
    cancel.disabled = true;
    options.disabled = true;
    const label = create.textContent;
    create.textContent = "Creating…";
    let made;
    try {
      made = await postFile(fileUrl(URL_PATH, file, { greeting, ...options.values() }), file);
    } catch (error) {
      fill(status, refusalView(file.name, error));
      create.textContent = label;
      create.disabled = false;
      cancel.disabled = false;
      options.disabled = false;
      return;
    }
    window.location.assign(`/adventures/${encodeURIComponent(made.id)}`);
  }

  fill(root, form);
  root.closest("section")?.scrollIntoView({ block: "start" });
  read();
}

/** AI Instructions, Plot Essentials and Author's Note, each cut to a few lines. */
function components(answer) {
  const parts = [
    ["AI Instructions", answer.ai_instructions],
    ["Plot Essentials", answer.plot_essentials],
    ["Author's Note", answer.authors_note],
  ];
  return h("dl", { class: "lore-components" }, parts.map(([name, text]) => [
    h("dt", { text: name }),
    h("dd", { class: text ? "" : "muted", text: text ? brief(text) : "Empty.", title: text || null }),
  ]));
}

function brief(text) {
  const flat = String(text).trim();
  return flat.length > BRIEF_CHARS ? flat.slice(0, BRIEF_CHARS - 1).trimEnd() + "…" : flat;
}
