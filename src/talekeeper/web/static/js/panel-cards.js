// The Cards panel: the adventure's story cards — search, create, edit, delete.
// Invariants: the list is what GET /api/adventures/{id}/cards?q= answers (the server
// searches name, keywords, entry and notes); a card is deleted only after the player
// confirms in the page; the form's limits are the server's (services/limits.py), and the
// server's refusal is shown as it is.
import { h, fill, api, notify, attempt, plural } from "./ui.js";
import { confirmButton, refresher, splitList } from "./panel-kit.js";

const TYPES = ["character", "location", "item", "faction", "lore", "other"];
const LIMITS = { name: 120, entry: 8000, notes: 8000, search: 200 };
const SEARCH_DELAY_MS = 250;

export function cardsPanel(ctx) {
  const search = h("input", {
    type: "search", placeholder: "Search cards…",
    attrs: { "aria-label": "Search story cards", maxlength: LIMITS.search },
  });
  const newButton = h("button", { type: "button", class: "primary", text: "New card" });
  const formBox = h("div", { class: "card-form-box" });
  const count = h("p", { class: "muted small cards-count" });
  const list = h("ul", { class: "cards-list", attrs: { "aria-label": "Story cards" } });
  const el = h("div", { class: "panel-body" },
    h("div", { class: "row cards-tools" }, search, newButton),
    formBox, count, list);

  const refresh = refresher(list, async () => {
    const q = search.value.trim();
    const query = q ? `?q=${encodeURIComponent(q)}` : "";
    const cards = await api("GET", `/api/adventures/${ctx.id}/cards${query}`);
    count.textContent = q
      ? (cards.length ? `${plural(cards.length, "card")} match “${q}”.` : `No card matches “${q}”.`)
      : (cards.length ? plural(cards.length, "card") + "." : "No story cards yet.");
    fill(list, cards.map(cardItem));
  });

  let searchTimer = null;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(refresh, SEARCH_DELAY_MS);
  });
  newButton.addEventListener("click", () => {
    newButton.disabled = true;
    fill(formBox, cardForm(null, () => {
      newButton.disabled = false;
      fill(formBox);
    }));
  });

  function cardItem(card) {
    const item = h("li", { class: "card-item", dataset: { cardId: card.id } });
    function show() {
      delete item.dataset.editing;
      fill(item,
        h("div", { class: "row card-head" },
          h("strong", { class: "card-name", text: card.name }),
          h("span", { class: `badge type-${card.type}`, text: card.type }),
          h("span", { class: "spacer" }),
          h("button", {
            type: "button", class: "link", text: "Edit",
            attrs: { "aria-label": `Edit card ${card.name}` },
            on: {
              click: () => {
                item.dataset.editing = "1";
                fill(item, cardForm(card, show));
              },
            },
          }),
          confirmButton({
            label: "Delete", question: `Delete “${card.name}”?`, confirmLabel: "Yes, delete",
            ariaLabel: `Delete card ${card.name}`,
            onConfirm: async () => {
              await api("DELETE", `/api/cards/${card.id}`);
              notify(`Deleted the card “${card.name}”.`);
              refresh();
            },
          })),
        card.keywords.length
          ? h("p", { class: "small card-keywords" },
            h("span", { class: "muted", text: "Keywords: " }), card.keywords.join(", "))
          : h("p", { class: "small muted", text: "No keywords: this card never enters the context by itself." }),
        card.entry ? h("p", { class: "small card-entry", text: card.entry }) : null);
    }
    show();
    return item;
  }

  /** The form for a new card (`card` null) or an existing one. `close()` runs after a save
   * or on Cancel. */
  function cardForm(card, close) {
    const v = card || { name: "", type: "character", keywords: [], entry: "", notes: "" };
    const prefix = card ? `card-${card.id}` : "card-new";
    const field = (key, label, input) => {
      input.id = `${prefix}-${key}`;
      return [h("label", { text: label, attrs: { for: input.id } }), input];
    };
    const name = h("input", { type: "text", value: v.name, required: true, attrs: { maxlength: LIMITS.name } });
    const type = h("select", {}, TYPES.map((t) => h("option", { value: t, text: t, selected: t === v.type })));
    const keywords = h("input", {
      type: "text", value: v.keywords.join(", "), placeholder: "e.g. maren, the keeper",
    });
    const entry = h("textarea", { value: v.entry, rows: 4, attrs: { maxlength: LIMITS.entry } });
    const notes = h("textarea", { value: v.notes, rows: 2, attrs: { maxlength: LIMITS.notes } });
    const save = h("button", { type: "submit", class: "primary", text: card ? "Save card" : "Create card" });
    const form = h("form", {
      class: "editor card-form", dataset: { editing: "1" },
      attrs: { "aria-label": card ? `Edit card ${card.name}` : "New story card" },
      on: { submit: submit },
    },
      field("name", "Name", name),
      field("type", "Type", type),
      field("keywords", "Keywords (comma-separated; the card enters the context when one appears)", keywords),
      field("entry", "Entry (what the narrator reads)", entry),
      field("notes", "Notes (for you; never sent)", notes),
      h("div", { class: "row" }, save,
        h("button", { type: "button", text: "Cancel", on: { click: done } })));

    function done() {
      delete form.dataset.editing;
      close();
      document.dispatchEvent(new Event("tk:panel-idle"));
    }
    async function submit(event) {
      event.preventDefault();
      const body = {
        name: name.value, type: type.value, keywords: splitList(keywords.value),
        entry: entry.value, notes: notes.value,
      };
      save.disabled = true;
      const stored = await attempt(() => card
        ? api("PATCH", `/api/cards/${card.id}`, body)
        : api("POST", `/api/adventures/${ctx.id}/cards`, body));
      save.disabled = false;
      if (stored === undefined) return;
      if (card) Object.assign(card, stored);
      notify(card ? `Saved the card “${stored.name}”.` : `Created the card “${stored.name}”.`);
      done();
      refresh();
    }
    setTimeout(() => name.focus(), 0);
    return form;
  }

  return { el, refresh };
}
