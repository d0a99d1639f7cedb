// The Cards panel's Proposals: cards the story suggests (the lore clerk), for the player to
// accept, edit and accept, or dismiss. Invariants:
// - The list is what GET /api/adventures/{id}/card-proposals answers: the open proposals the
//   current path supports, each with the sentences of the story it is made of; each
//   sentence's action is a link that scrolls the story to it.
// - Nothing becomes a card until the player accepts it (POST .../accept, with the fields
//   they edited); a dismissed name is not proposed again (POST .../dismiss). An update
//   (lines the story added about a card there is) shows its lines as added ("+"), and only
//   they can be edited: the card's own text is never changed. The server's refusal (a
//   proposal the path no longer supports, a bad field) is shown as it is.
// - `onCount(n)` runs after every load with the number of open proposals (the tab's count);
//   `onAccepted()` after a card was made (the card list is read again).
// - "Make them cards without asking" is the adventure's `auto_accept_cards` (PATCH
//   /api/adventures/{id}); off, as every adventure starts. Refused, the box goes back.
import { h, fill, api, notify, attempt, plural } from "./ui.js";
import { refresher, showAction, splitList } from "./panel-kit.js";

const TYPES = ["character", "location", "item", "faction", "lore", "other"];
const LIMITS = { name: 120, entry: 8000 };

export function proposalsBox(ctx, { onCount, onAccepted }) {
  const heading = h("h3", { class: "proposals-heading", text: "Proposals" });
  const note = h("p", { class: "muted small proposals-note" });
  const list = h("ul", { class: "proposals-list", attrs: { "aria-label": "Card proposals" } });
  const auto = h("input", { type: "checkbox", id: "proposals-auto" });
  // While the box's change is being saved, a list drawn meanwhile must not put the box back
  // to what the adventure said before it (the player's click would be undone on screen).
  let saving = 0;
  auto.addEventListener("change", async () => {
    const on = auto.checked;
    saving += 1;
    const saved = await attempt(() => api("PATCH", `/api/adventures/${ctx.id}`, { auto_accept_cards: on }));
    saving -= 1;
    if (saved === undefined) {
      auto.checked = !on;
      return;
    }
    ctx.setAdventure(saved);
    if (!saving) auto.checked = Boolean(saved.auto_accept_cards);
    notify(on ? "Proposals now become cards without asking." : "Proposals now wait for you.");
    ctx.watch();
  });
  const el = h("section", { class: "proposals", attrs: { "aria-label": "Card proposals" } },
    heading, note,
    h("label", { class: "inline small", attrs: { for: auto.id } }, auto,
      "Make them cards without asking (updates add their lines)"),
    list);

  const refresh = refresher(list, () => api("GET", `/api/adventures/${ctx.id}/card-proposals`),
    (proposals) => {
      if (!saving) auto.checked = Boolean(ctx.adventure && ctx.adventure.auto_accept_cards);
      onCount(proposals.length);
      heading.textContent = proposals.length ? `Proposals (${proposals.length})` : "Proposals";
      note.textContent = proposals.length
        ? `${plural(proposals.length, "name")} the story keeps using, drafted from its own sentences. `
          + "Accept one to make it a card, or dismiss it for good."
        : "None now: a name the story uses in three actions, with no card of its own, shows up here.";
      fill(list, proposals.map(item));
    });

  function item(proposal) {
    const li = h("li", { class: "proposal-item", dataset: { proposalId: proposal.id, kind: proposal.kind } });
    const update = proposal.kind === "update";
    function show() {
      delete li.dataset.editing;
      fill(li,
        h("div", { class: "row card-head" },
          update ? h("span", { class: "muted", text: "Add to" }) : null,
          h("strong", { class: "card-name", text: proposal.name }),
          h("span", { class: `badge type-${proposal.type}`, text: update ? "update" : proposal.type }),
          h("span", { class: "spacer" }),
          h("button", {
            type: "button", class: "primary", text: "Accept",
            attrs: { "aria-label": `Accept the card proposal ${proposal.name}` },
            on: { click: () => accept(proposal, undefined) },
          }),
          h("button", {
            type: "button", class: "link", text: "Edit",
            attrs: { "aria-label": `Edit the card proposal ${proposal.name}` },
            on: { click: () => { li.dataset.editing = "1"; fill(li, editor(proposal, show)); } },
          }),
          h("button", {
            type: "button", class: "link", text: "Dismiss",
            attrs: { "aria-label": `Dismiss the card proposal ${proposal.name}` },
            on: { click: () => dismiss(proposal) },
          })),
        update
          ? h("p", { class: "small muted", text: "Lines to add after the card's entry; what it says now stays as it is:" })
          : h("p", { class: "small card-keywords" },
            h("span", { class: "muted", text: "Keywords: " }), proposal.keys.join(", ")),
        update
          ? h("p", { class: "small card-entry diff-add", text: `+ ${proposal.entry}` })
          : h("p", { class: "small card-entry", text: proposal.entry }),
        h("details", { class: "small proposal-evidence" },
          h("summary", { text: `From the story (${plural(proposal.evidence.length, "sentence")})` }),
          h("ul", {}, proposal.evidence.map((line) => h("li", {},
            h("button", {
              type: "button", class: "link", text: `action #${line.action_id}`,
              title: "Show this action in the story",
              on: { click: () => showAction(line.action_id) },
            }), " ", line.text)))));
    }
    show();
    return li;
  }

  function editor(proposal, close) {
    const prefix = `proposal-${proposal.id}`;
    const field = (key, label, input) => {
      input.id = `${prefix}-${key}`;
      return [h("label", { text: label, attrs: { for: input.id } }), input];
    };
    const name = h("input", { type: "text", value: proposal.name, required: true, attrs: { maxlength: LIMITS.name } });
    const type = h("select", {}, TYPES.map((t) => h("option", { value: t, text: t, selected: t === proposal.type })));
    const keys = h("input", { type: "text", value: proposal.keys.join(", ") });
    const entry = h("textarea", { value: proposal.entry, rows: 5, attrs: { maxlength: LIMITS.entry } });
    const update = proposal.kind === "update";
    const save = h("button", { type: "submit", class: "primary", text: update ? "Add to the card" : "Accept as a card" });
    const form = h("form", {
      class: "editor card-form", dataset: { editing: "1" },
      attrs: { "aria-label": `Edit the card proposal ${proposal.name}` },
      on: {
        submit: async (event) => {
          event.preventDefault();
          save.disabled = true;
          const body = update
            ? { entry: entry.value }
            : { name: name.value, type: type.value, keys: splitList(keys.value), entry: entry.value };
          const made = await accept(proposal, body);
          save.disabled = false;
          if (made !== undefined) done();
        },
      },
    },
      update ? null : field("name", "Name", name),
      update ? null : field("type", "Type", type),
      update ? null : field("keys", "Keywords (comma-separated)", keys),
      field("entry", update ? "Lines to add after the entry" : "Entry (what the narrator reads)", entry),
      h("div", { class: "row" }, save, h("button", { type: "button", text: "Cancel", on: { click: done } })));
    function done() {
      delete form.dataset.editing;
      close();
      document.dispatchEvent(new Event("tk:panel-idle"));
    }
    queueMicrotask(() => (update ? entry : name).focus());
    return form;
  }

  async function accept(proposal, body) {
    const made = await attempt(() => api("POST", `/api/card-proposals/${proposal.id}/accept`, body));
    if (made === undefined) return undefined;
    notify(proposal.kind === "update" ? `Added to the card “${made.name}”.` : `Created the card “${made.name}”.`);
    onAccepted();
    refresh();
    return made;
  }

  async function dismiss(proposal) {
    const done = await attempt(() => api("POST", `/api/card-proposals/${proposal.id}/dismiss`));
    if (done === undefined) return;
    notify(`Dismissed “${proposal.name}”: it will not be proposed again.`);
    refresh();
  }

  return { el, refresh };
}
