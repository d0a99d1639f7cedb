// The Cards panel's lore controls: "Import lore…" (another tool's lorebook, world info or
// story cards) and "Export cards…" (the adventure's cards as another tool's file).
// Invariants:
// - Choosing a file only previews it (a dry run that writes nothing): the detected format,
//   the report (totals first, then items by level) and the cards as they would be made.
//   Changing a reading option reads the same file again. Only "Import N cards" keeps
//   anything: it sends the same file with the same options, then the card list is read
//   again from the server. "Cancel" keeps nothing.
// - A refusal is shown in the preview area as the server's message; nothing is kept.
// - A file dropped on the Cards panel starts exactly what choosing it with "Import lore…"
//   starts (the dry-run preview, then the confirm); of several files the first is read and
//   the preview says so. Text or a link dropped there does nothing (lore-preview.js).
// - Export is a plain link to GET …/lore/export?format=…; the server names the file.
import { h, fill, notify } from "./ui.js";
import {
  postFile, fileUrl, readingOptions, reportView, cardsView, refusalView, readingView,
  formatLabel, cardCount, fileDropTarget,
} from "./lore-preview.js";

const EXPORTS = [
  ["aidungeon", "AI Dungeon story cards"],
  ["sillytavern", "SillyTavern World Info"],
  ["ccv3", "Character Card V3 lorebook"],
  ["novelai", "NovelAI lorebook"],
];

/** `ctx.id`: the adventure; `refreshCards()`: read the card list again. Returns
 * `{ tools, box }`: the controls' row and the area the preview opens in. Files dropped on
 * the panel that holds them open the same preview. */
export function loreTools(ctx, refreshCards) {
  const picker = h("input", {
    type: "file", hidden: true, attrs: { "aria-label": "Lore file to import" },
  });
  const importButton = h("button", {
    type: "button", text: "Import lore…",
    title: "Lorebooks, world info and story cards from AI Dungeon, NovelAI, SillyTavern, "
      + "KoboldAI, Agnai, RisuAI and character cards: you see what they hold before anything is kept",
    on: { click: () => picker.click() },
  });
  const box = h("div", { class: "lore-preview-box" });
  const openPreview = (file, note = null) =>
    preview(ctx, file, box, refreshCards, () => importButton.focus(), note);
  picker.addEventListener("change", () => {
    const file = picker.files && picker.files[0];
    picker.value = ""; // the same file can be chosen again
    if (file) openPreview(file);
  });
  const exportUrl = (format) => `/api/adventures/${ctx.id}/lore/export?format=${format}`;
  const exporter = h("details", { class: "lore-export" },
    h("summary", { text: "Export cards…" }),
    h("ul", { class: "lore-export-list", attrs: { "aria-label": "Export the cards as" } },
      EXPORTS.map(([format, label]) => h("li", {},
        h("a", { href: exportUrl(format), text: label, attrs: { download: "" } })))));
  const tools = h("div", { class: "row lore-tools" }, importButton, picker, exporter);
  fileDropTarget({
    // The whole Cards panel (the tab's box), known once the panel is on the page.
    zone: () => tools.closest('[role="tabpanel"]') || tools.parentElement,
    hint: "Drop to preview the import",
    onFile: openPreview,
  });
  return { tools, box };
}

/** Open the preview of `file` in `box` (see the invariants); `note`: a line above it. */
function preview(ctx, file, box, refreshCards, done, note = null) {
  const url = (params) => fileUrl(`/api/adventures/${ctx.id}/lore/import`, file, params);
  const options = readingOptions(() => read(), `lore-${ctx.id}`);
  const status = h("div", { class: "lore-status" });
  const body = h("div", { class: "lore-body" });
  const confirm = h("button", { type: "button", class: "primary", text: "Import", disabled: true });
  const cancel = h("button", { type: "button", text: "Cancel", on: { click: close } });
  const section = h("section", {
    class: "lore-preview", dataset: { editing: "1" },
    attrs: { "aria-label": `Import preview: ${file.name}` },
    on: { keydown: (event) => { if (event.key === "Escape" && !confirm.disabled) close(); } },
  },
  h("h3", { text: `Import “${file.name}”` }),
  note ? h("p", { class: "small muted lore-drop-note", attrs: { role: "status" }, text: note }) : null,
  status, options.el, body,
  h("div", { class: "row lore-buttons" }, confirm, cancel));
  let serial = 0;
  let shown = null;

  async function read() {
    const mine = ++serial;
    confirm.disabled = true;
    options.disabled = true;
    fill(status, readingView(file.name));
    let answer;
    try {
      answer = await postFile(url({ dry_run: "true", ...options.values() }), file);
    } catch (error) {
      if (mine !== serial) return;
      shown = null;
      fill(status);
      fill(body, refusalView(file.name, error));
      confirm.textContent = "Import";
      return;
    } finally {
      if (mine === serial) options.disabled = false;
    }
    if (mine !== serial) return;
    shown = answer;
    fill(status, h("p", { class: "lore-format" },
      h("span", { class: "muted", text: "Read as " }), h("strong", { text: formatLabel(answer.format) }), "."));
    fill(body, reportView(answer.report),
      h("h4", { text: "The cards it makes" }), cardsView(answer.cards));
    confirm.textContent = `Import ${cardCount(answer.cards.length)}`;
    confirm.disabled = answer.cards.length === 0 && !options.values().move_instructions;
  }

  confirm.addEventListener("click", async () => {
    if (!shown) return;
    confirm.disabled = true;
    cancel.disabled = true;
    options.disabled = true;
    let made;
    try {
      made = await postFile(url(options.values()), file);
    } catch (error) {
      fill(status, refusalView(file.name, error));
      cancel.disabled = false;
      options.disabled = false;
      return;
    }
    notify(`Imported ${cardCount(made.cards.length)} from “${file.name}”.`);
    close();
    refreshCards();
    // Moved entries are now in the AI Instructions: the shared adventure is read again.
    // The Plot panel shows them at once.
    if (options.values().move_instructions) {
      ctx.reloadAdventure().then(() => ctx.redraw("plot")).catch(() => {});
    }
  });

  function close() {
    serial += 1; // an answer still on its way is dropped
    fill(box);
    document.dispatchEvent(new Event("tk:panel-idle"));
    done();
  }

  fill(box, section);
  read();
}
