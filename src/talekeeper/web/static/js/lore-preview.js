// Other tools' files, previewed before anything is kept: the parts the Cards panel's
// "Import lore…" and the adventures page's "Start from a file…" share. Invariants:
// - The file goes to the server as it is (the raw request body, `postFile`); nothing in it
//   is read or run here. Every text from it (names, keywords, entries, report messages and
//   paths) reaches the page as text through `h`, never as HTML.
// - The report is shown as the server answers it: the totals first (cards, refused,
//   changed, lost, info), then the items grouped by level in that order.
// - A refusal (a 4xx) is the server's own sentence, shown where the preview would be.
// - The reading options are the same three for the preview and the confirm, so what the
//   confirm makes is what the preview showed.
// - A file dropped on a drop target (`fileDropTarget`) starts the same flow as its button;
//   the browser never opens a dropped file itself, on the target or anywhere on the page.
//   Only files count: dropped text or a link does nothing there (and never navigates).
import { h, ApiError, plural } from "./ui.js";

const FILENAME_MAX = 255; // the server's limit on ?filename=
export const LEVELS = ["refused", "changed", "lost", "info"];
const LEVEL_TITLES = {
  refused: "Refused: not imported",
  changed: "Changed to fit Talekeeper",
  lost: "Lost: no equivalent here",
  info: "Good to know",
};
const FORMATS = {
  aidungeon_cards: "AI Dungeon story cards",
  aidungeon_world_info: "AI Dungeon World Info",
  aidungeon_scenario: "AI Dungeon scenario",
  aidungeon_adventure: "AI Dungeon adventure",
  novelai_lorebook: "NovelAI lorebook",
  novelai_scenario: "NovelAI scenario",
  novelai_story: "NovelAI story",
  sillytavern_world_info: "SillyTavern World Info",
  character_book: "character book (Character Card V2)",
  lorebook_v3: "Character Card V3 lorebook",
  character_card_v1: "Character Card V1",
  character_card_v2: "Character Card V2",
  character_card_v3: "Character Card V3",
  agnai_memory_book: "Agnai memory book",
  risu_lorebook: "RisuAI lorebook",
  koboldai_story: "KoboldAI story",
  koboldai_united_story: "KoboldAI United story",
  kobold_lite_scenario: "KoboldAI Lite scenario",
  kobold_world_info: "KoboldAI World Info",
};
const OPTIONS = [
  ["include_disabled", "Include disabled entries"],
  ["split_long", "Split long entries into parts (not refuse them)"],
  ["move_instructions", "Move instruction-like entries to AI Instructions"],
];
const RULE_WORDS = { any: "With any of", all: "With all of", none: "With none of" };

/** The format as a player knows it ("SillyTavern World Info"). */
export function formatLabel(format) {
  return FORMATS[format] || String(format || "unknown format");
}

/** `path?filename=…&…params` with the file's name (cut to the server's limit). */
export function fileUrl(path, file, params = {}) {
  let name = (file && file.name) || "file";
  if (name.length > FILENAME_MAX) name = name.slice(-FILENAME_MAX); // keep the extension
  const query = new URLSearchParams({ filename: name });
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== false) query.set(key, String(value));
  }
  return `${path}?${query}`;
}

/** POST the file as the raw body; resolves to the JSON answer, rejects with ApiError
 * carrying the server's message. */
export async function postFile(url, file) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/octet-stream" },
      body: file,
    });
  } catch (e) {
    throw new ApiError("The file could not be sent: is Talekeeper still running, and can the "
      + "file still be read?", 0, "offline");
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (response.ok && body) return body;
  const error = body && body.error ? body.error : null;
  const message = error && error.message
    ? error.message
    : `The server answered ${response.status} ${response.statusText || ""}`.trim() + ".";
  throw new ApiError(message, response.status, error ? error.code : "http_" + response.status, body);
}

/** The three reading options as checkboxes; `onChange()` runs after any is ticked.
 * `.values()` gives them as query parameters, `.disabled` greys them while a read runs. */
export function readingOptions(onChange, idPrefix) {
  const boxes = OPTIONS.map(([key, label]) => {
    const input = h("input", {
      type: "checkbox", name: key, id: `${idPrefix}-${key}`, on: { change: () => onChange() },
    });
    return { key, input, label: h("label", { class: "inline", attrs: { for: input.id } }, input, label) };
  });
  const el = h("fieldset", { class: "lore-options" },
    h("legend", { text: "How to read it" }), boxes.map((b) => b.label));
  return {
    el,
    values: () => Object.fromEntries(boxes.filter((b) => b.input.checked).map((b) => [b.key, "true"])),
    set disabled(value) {
      for (const b of boxes) b.input.disabled = value;
    },
  };
}

/** The report: totals first, then the items by level (refused, changed, lost, info). */
export function reportView(report) {
  const totals = (report && report.totals) || {};
  const items = (report && report.items) || [];
  const counts = [["cards", "card", "cards"], ...LEVELS.map((l) => [l, l, l])];
  return h("section", { class: "lore-report", attrs: { "aria-label": "What the file holds" } },
    h("ul", { class: "lore-totals", attrs: { "aria-label": "Totals" } },
      counts.map(([key, one, many]) => h("li", {
        class: `lore-total lore-${key}`, dataset: { level: key },
      }, h("strong", { text: String(totals[key] ?? 0) }), ` ${Number(totals[key]) === 1 ? one : many}`))),
    LEVELS.map((level) => {
      const mine = items.filter((item) => item.level === level);
      if (!mine.length) return null;
      return h("section", { class: `lore-level lore-${level}`, dataset: { level } },
        h("h4", { text: `${LEVEL_TITLES[level]} (${totals[level] ?? mine.length})` }),
        h("ul", { class: "lore-items" }, mine.map((item) => h("li", { class: "lore-item" },
          h("span", { class: "lore-message", text: item.message }),
          item.path ? h("code", { class: "lore-path", text: item.path, title: "Where in the file" }) : null))));
    }),
    items.length ? null : h("p", { class: "small muted", text: "Nothing was changed, lost or refused." }));
}

/** The cards as they would be made: name, type, keywords, "always on", secondary keywords
 * with their rule, and a mark on instruction-like and disabled ones. */
export function cardsView(cards, { label = "Cards to import" } = {}) {
  if (!cards.length) return h("p", { class: "small muted lore-no-cards", text: "No cards would be made." });
  return h("ul", { class: "lore-cards", attrs: { "aria-label": label } }, cards.map((card) => {
    const secondary = Array.isArray(card.secondary_keywords) ? card.secondary_keywords : [];
    return h("li", { class: "lore-card" },
      h("div", { class: "row lore-card-head" },
        h("strong", { class: "lore-card-name", text: card.name }),
        h("span", { class: `badge type-${card.type}`, text: card.type }),
        card.always_on ? h("span", { class: "badge lore-always", text: "always on" }) : null,
        card.instruction_like ? h("span", {
          class: "badge lore-instruction", text: "reads as an instruction",
          title: "Always-on text that tells the narrator what to do: it can go to AI Instructions instead",
        }) : null,
        card.disabled ? h("span", { class: "badge lore-disabled", text: "disabled in the file" }) : null),
      card.keywords && card.keywords.length
        ? h("p", { class: "small lore-card-keywords" },
          h("span", { class: "muted", text: "Keywords: " }), card.keywords.join(", "))
        : h("p", { class: "small muted", text: "No keywords." }),
      secondary.length
        ? h("p", { class: "small lore-card-secondary" },
          h("span", { class: "muted", text: `${RULE_WORDS[card.secondary_rule] || RULE_WORDS.any}: ` }),
          secondary.join(", "))
        : null,
      card.entry ? h("p", { class: "small lore-card-entry", text: card.entry }) : null);
  }));
}

/** The server's refusal, where the preview would be. */
export function refusalView(fileName, error) {
  return h("div", { class: "lore-refusal", attrs: { role: "alert" } },
    h("p", { class: "lore-refusal-lead", text: `“${fileName}” was not read; nothing was kept.` }),
    h("p", { class: "lore-refusal-message", text: error && error.message ? error.message : String(error) }));
}

/** "Reading “x.json”…" while a request runs. */
export function readingView(fileName) {
  return h("p", { class: "muted lore-reading", attrs: { role: "status" }, text: `Reading “${fileName}”…` });
}

/** While files are dragged over `zone()` (the element, looked up at each event, or null) it is
 * highlighted with the line `hint`; a drop there calls `onFile(first, note)`, `note` saying
 * that only the first of several files is read (else null). Listens on the document, once per
 * page: a file dropped anywhere else is refused (it would replace the page), and text or a
 * link dropped on the target does nothing (a text field inside it still takes text). */
export function fileDropTarget({ zone, hint, onFile }) {
  const line = h("div", { class: "drop-hint" }, h("span", { class: "drop-hint-text", text: hint }));
  let shown = null; // the highlighted zone
  let depth = 0; // dragenter minus dragleave inside it (children fire their own)

  const target = (event) => {
    const el = zone();
    return el && el.isConnected && event.target instanceof Node && el.contains(event.target) ? el : null;
  };
  const show = (el) => {
    if (shown === el) return;
    hide();
    shown = el;
    el.classList.add("drop-target");
    el.appendChild(line);
  };
  function hide() {
    depth = 0;
    if (!shown) return;
    shown.classList.remove("drop-target");
    line.remove();
    shown = null;
  }
  /** Not files: a text field in the target keeps its own drop; elsewhere in it, refused. */
  const refuseOther = (event) => {
    if (!target(event) || typesOf(event).length === 0 || editable(event.target)) return;
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = "none";
  };

  document.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event)) return refuseOther(event);
    event.preventDefault();
    const el = target(event);
    if (!el) return;
    show(el);
    depth += 1;
  });
  document.addEventListener("dragover", (event) => {
    if (!carriesFiles(event)) return refuseOther(event);
    event.preventDefault(); // never the browser's own "open the file"
    const el = target(event);
    event.dataTransfer.dropEffect = el ? "copy" : "none";
    if (el) show(el);
    else hide();
  });
  document.addEventListener("dragleave", (event) => {
    if (!shown || !target(event)) return;
    depth -= 1;
    const box = shown.getBoundingClientRect();
    const out = event.clientX <= box.left || event.clientX >= box.right
      || event.clientY <= box.top || event.clientY >= box.bottom;
    if (depth <= 0 || out) hide();
  });
  document.addEventListener("dragend", hide);
  document.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) {
      hide();
      return refuseOther(event);
    }
    event.preventDefault();
    const el = target(event);
    hide();
    const files = Array.from(event.dataTransfer.files || []);
    if (!el || !files.length) return;
    const note = files.length > 1
      ? `${files.length} files were dropped: only the first, “${files[0].name}”, is read.`
      : null;
    onFile(files[0], note);
  });
}

function typesOf(event) {
  return event.dataTransfer ? Array.from(event.dataTransfer.types || []) : [];
}

function carriesFiles(event) {
  return typesOf(event).includes("Files");
}

function editable(node) {
  const el = node instanceof Element ? node : node && node.parentElement;
  return !!el && (el.isContentEditable || !!el.closest("input, textarea, select"));
}

/** "3 cards" for buttons and messages. */
export function cardCount(n) {
  return plural(n, "card");
}
