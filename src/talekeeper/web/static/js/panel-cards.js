// The Cards panel: the adventure's story cards — search, create, edit, delete.
// Invariants: the list is what GET /api/adventures/{id}/cards?q= answers (the server
// searches name, keywords, entry and notes); a card is deleted only after the player
// confirms in the page; the form's limits are the server's (services/limits.py), and the
// server's refusal is shown as it is. A card's rules are edited with it: "Always on" (in
// the context every turn, marked in the list), its secondary keywords and their rule
// (any / all / none, the server's SecondaryRule), shown in the list when it has some.
// A card may be a secret ("Secret" in the list: who knows it, as a memory's): the list
// marks it, and a turn addressing someone not in on it marks or leaves out the card.
// Other tools' lore comes in through a preview and goes out as their files
// (panel-cards-lore.js); the cards the story suggests are listed above the cards, to accept
// or dismiss (panel-cards-proposals.js), their number on the panel's tab.
import { h, fill, api, notify, attempt, plural } from "./ui.js";
import { confirmButton, refresher, secretBadge, secretForm, splitList } from "./panel-kit.js";
import { loreTools } from "./panel-cards-lore.js";
import { proposalsBox } from "./panel-cards-proposals.js";

const TYPES = ["character", "location", "item", "faction", "lore", "other"];
const LIMITS = { name: 120, entry: 8000, notes: 8000, search: 200 };
const SEARCH_DELAY_MS = 250;
const RULES = [
  ["any", "any: one of them appears too"],
  ["all", "all: every one of them appears too"],
  ["none", "none: not one of them appears"],
];
const RULE_WORDS = { any: "With any of", all: "With all of", none: "With none of" };
const SECRET_TITLE = "A character you address who is not named here is not told what this card says: "
  + "the narrator is told so, or the card is left out (the adventure's witness mode).";

export function cardsPanel(ctx) {
  const search = h("input", {
    type: "search", placeholder: "Search cards…",
    attrs: { "aria-label": "Search story cards", maxlength: LIMITS.search },
  });
  const newButton = h("button", { type: "button", class: "primary", text: "New card" });
  const formBox = h("div", { class: "card-form-box" });
  const count = h("p", { class: "muted small cards-count" });
  const list = h("ul", { class: "cards-list", attrs: { "aria-label": "Story cards" } });
  const lore = loreTools(ctx, () => refresh());
  const proposals = proposalsBox(ctx, {
    onCount: (n) => ctx.badge("cards", n),
    onAccepted: () => refreshCards(),
  });
  const el = h("div", { class: "panel-body" },
    h("div", { class: "row cards-tools" }, search, newButton),
    lore.tools, lore.box, formBox, proposals.el, count, list);

  const refreshCards = refresher(list, async () => {
    const q = search.value.trim();
    const query = q ? `?q=${encodeURIComponent(q)}` : "";
    return { q, cards: await api("GET", `/api/adventures/${ctx.id}/cards${query}`) };
  }, ({ q, cards }) => {
    count.textContent = q
      ? (cards.length ? `${plural(cards.length, "card")} match “${q}”.` : `No card matches “${q}”.`)
      : (cards.length ? plural(cards.length, "card") + "." : "No story cards yet.");
    fill(list, cards.map(cardItem));
  });

  /** The cards and the proposals (a card made or deleted changes what is proposed). */
  function refresh() {
    return Promise.all([refreshCards(), proposals.refresh()]);
  }

  let searchTimer = null;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(refreshCards, SEARCH_DELAY_MS);
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
          card.always_on
            ? h("span", { class: "badge card-always", text: "always on",
              title: "In the context every turn, before the cards a keyword fired" })
            : null,
          secretBadge(card.known_by, "card-secret", SECRET_TITLE),
          h("span", { class: "spacer" }),
          h("button", {
            type: "button", class: "link", text: "Secret",
            attrs: { "aria-label": `Say who knows card ${card.name}` },
            on: { click: () => secret(card, item) },
          }),
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
          : h("p", { class: "small muted", text: card.always_on
            ? "No keywords: it is always on."
            : "No keywords: this card never enters the context by itself." }),
        secondary(card).length
          ? h("p", { class: "small card-secondary" },
            h("span", { class: "muted", text: `${RULE_WORDS[card.secondary_rule] || RULE_WORDS.any}: ` }),
            secondary(card).join(", "))
          : null,
        card.entry ? h("p", { class: "small card-entry", text: card.entry }) : null);
    }
    show();
    return item;
  }

  // Who knows the card, set on its own (the editor's Save leaves `known_by` as it is).
  function secret(card, item) {
    const open = item.querySelector(".secret-form");
    if (open) return open.querySelector("input").focus();
    item.querySelector(".card-head").after(secretForm({
      knownBy: card.known_by,
      onSave: async (known) => {
        const stored = await api("PATCH", `/api/cards/${card.id}`, { known_by: known });
        notify(known ? `The card “${card.name}” is a secret.` : `The card “${card.name}” is no longer a secret.`);
        refresh();
        return stored;
      },
    }));
  }

  /** The form for a new card (`card` null) or an existing one. `close()` runs after a save
   * or on Cancel. */
  function cardForm(card, close) {
    const v = card || {
      name: "", type: "character", keywords: [], entry: "", notes: "",
      always_on: false, secondary_keywords: [], secondary_rule: "any",
    };
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
    const alwaysOn = h("input", { type: "checkbox", checked: Boolean(v.always_on) });
    alwaysOn.id = `${prefix}-always-on`;
    const secondaryKeywords = h("input", {
      type: "text", value: secondary(v).join(", "), placeholder: "e.g. storm, night",
    });
    const rule = h("select", {}, RULES.map(([value, text]) =>
      h("option", { value, text, selected: value === (v.secondary_rule || "any") })));
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
      // No label but the first says "keywords": a label is found by its words.
      field("secondary", "Secondary keys (optional, comma-separated; checked once a keyword appears)", secondaryKeywords),
      field("rule", "Secondary rule (the card enters when a keyword appears and, of the secondary ones…)", rule),
      h("label", { class: "inline card-always-on", attrs: { for: alwaysOn.id } }, alwaysOn,
        "Always on (in the context every turn, first, keyword or not)"),
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
        entry: entry.value, notes: notes.value, always_on: alwaysOn.checked,
        secondary_keywords: splitList(secondaryKeywords.value), secondary_rule: rule.value,
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
    // Once the caller has inserted it, before any further input (panel-kit's secretForm says why).
    queueMicrotask(() => name.focus());
    return form;
  }

  return { el, refresh, refreshProposals: () => proposals.refresh() };
}

/** A card's secondary keywords (none for a card from before they existed). */
function secondary(card) {
  return Array.isArray(card.secondary_keywords) ? card.secondary_keywords : [];
}
