// The World panel: the world as the story leaves it (where you are, who is here, what you
// carry, the time, quests), the events of this path newest first with who said each and the
// action it belongs to, and the player's own word: add an event, remove one. Invariants:
// - Everything shown comes from GET /api/adventures/{id}/world and …/world/events, drawn as
//   text only (names are the story's, and the story is the player's or a model's).
// - Removing a player's event deletes it; removing a derived one dismisses it (the API
//   decides); either way the panel is read again, never patched by hand.
// - The state can be shown at an earlier action of the path (an event's "State here");
//   when that action is no longer on the path (an undo, another branch), it shows now.
// - Any event may be made a secret ("Secret": who knows it, as a memory's), which changes
//   no state shown here: only what a turn addressing someone not in on it is told.
import { h, fill, api, notify, attempt } from "./ui.js";
import { block, refresher, secretBadge, secretForm, showAction } from "./panel-kit.js";

const KINDS = ["moved", "arrived", "left", "took", "dropped", "gave", "equipped", "used_up",
  "status", "relation", "time", "quest", "learned"];
const ORIGINS = { rules: "read from the story", model: "read by the model", player: "set by you" };
const SHOWN = 30; // events listed, newest first
const SECRET_TITLE = "A character you address who is not named here is not told what this "
  + "event made true: the narrator is told so, or it is left out (the adventure's witness mode).";

export function worldPanel(ctx) {
  const el = h("div", { class: "panel-body" });
  const base = () => `/api/adventures/${ctx.id}/world`;

  let at = null; // the action whose state is shown; null: the head

  const refresh = refresher(el, async () => ({
    state: await stateAt(),
    events: await api("GET", `${base()}/events`),
  }), draw);

  async function stateAt() {
    if (at === null) return api("GET", base());
    try {
      return await api("GET", `${base()}?at=${at}`);
    } catch {
      at = null; // no longer on this path: show the world as it is now
      return api("GET", base());
    }
  }

  function showAt(actionId) {
    at = actionId;
    refresh();
  }

  function names(list) {
    return list.length ? list.map((r) => r.name).join(", ") : "—";
  }

  // Another player character of a shared adventure: with the host's, or where they stand,
  // and what they carry.
  function playerLine(p) {
    const where = p.here ? "here" : p.location ? `at ${p.location.name}` : "whereabouts unknown";
    const carrying = p.inventory.length ? ` · carrying ${names(p.inventory)}` : "";
    return h("li", { class: "world-player", text: `${p.name} — ${where}${carrying}` });
  }

  function draw({ state, events }) {
    const quests = state.quests.map((q) => `${q.name} (${q.state})`).join("; ");
    const whose = state.lead ? ` (${state.lead})` : "";
    const players = state.players || [];
    fill(el,
      block(at === null ? "The world now" : `The world at action #${state.at_action}`,
        at === null
          ? h("p", { class: "muted small", text: "What the story has said is true on this path. The narrator is told it each turn." })
          : h("p", { class: "muted small world-then" }, "As it stood after that action. ",
            h("button", { type: "button", class: "link world-now", text: "Back to now", on: { click: () => showAt(null) } })),
        h("dl", { class: "scene-view world-state" },
          h("dt", { text: `Location${whose}` }),
          h("dd", { class: "world-location", text: state.location ? state.location.name : "—" }),
          h("dt", { text: "Present" }), h("dd", { class: "world-present", text: names(state.present) }),
          h("dt", { text: `Carrying${whose}` }), h("dd", { class: "world-inventory", text: names(state.inventory) }),
          players.length ? h("dt", { text: "Other players" }) : null,
          players.length ? h("dd", {}, h("ul", { class: "world-players" }, ...players.map(playerLine))) : null,
          h("dt", { text: "Time" }), h("dd", { class: "world-time", text: state.time ? state.time.text : "—" }),
          h("dt", { text: "Quests" }), h("dd", { class: "world-quests", text: quests || "—" }))),
      addForm(),
      block("Events on this path",
        events.length
          ? h("ol", { class: "world-events", attrs: { reversed: "" } },
            ...events.slice(-SHOWN).reverse().map(eventItem))
          : h("p", { class: "muted small", text: "Nothing yet." })));
  }

  function eventItem(event) {
    const roles = [event.subject, event.object, event.value].filter((v) => v !== null).join(" · ");
    const item = h("li", { class: "world-event", dataset: { id: String(event.id), origin: event.origin } });
    return fill(item,
      h("span", { class: "world-kind", text: event.kind }), " ",
      h("span", { class: "world-roles", text: roles || "(you)" }), " ",
      h("span", { class: "badge", text: ORIGINS[event.origin] || event.origin }), " ",
      secretBadge(event.known_by, "world-secret", SECRET_TITLE), event.known_by ? " " : null,
      h("button", {
        type: "button", class: "link", text: `action #${event.action_id}`,
        title: "Show the action this event belongs to",
        on: { click: () => showAction(event.action_id) },
      }), " ",
      h("button", {
        type: "button", class: "link world-at", text: "State here",
        attrs: { "aria-label": `The world as it stood after action #${event.action_id}` },
        on: { click: () => showAt(event.action_id) },
      }), " ",
      h("button", {
        type: "button", class: "link", text: event.origin === "player" ? "Remove" : "Dismiss",
        attrs: { "aria-label": `${event.origin === "player" ? "Remove" : "Dismiss"} event ${event.id}` },
        on: { click: () => remove(event) },
      }), " ",
      h("button", {
        type: "button", class: "link", text: "Secret",
        attrs: { "aria-label": `Say who knows event ${event.id}` },
        on: { click: () => secret(event, item) },
      }),
      event.evidence ? h("div", { class: "muted small world-evidence", text: event.evidence }) : null);
  }

  async function remove(event) {
    const done = await attempt(() => api("DELETE", `/api/world/events/${event.id}`));
    if (done === undefined) return;
    notify(event.origin === "player" ? "Event removed." : "Event dismissed.");
    refresh();
  }

  // Who knows the event: its facts stay as they are, so only the list is read again.
  function secret(event, item) {
    const open = item.querySelector(".secret-form");
    if (open) return open.querySelector("input").focus();
    item.appendChild(secretForm({
      knownBy: event.known_by,
      onSave: async (known) => {
        const stored = await api("PATCH", `/api/world/events/${event.id}`, { known_by: known });
        notify(known ? "Event marked as a secret." : "Event no longer a secret.");
        refresh();
        return stored;
      },
    }));
  }

  function addForm() {
    const kind = h("select", { id: "world-kind" }, ...KINDS.map((k) => h("option", { value: k, text: k })));
    const subject = h("input", { type: "text", id: "world-subject", placeholder: "empty: you", attrs: { maxlength: 120 } });
    const object = h("input", { type: "text", id: "world-object", placeholder: "a place, an item, a quest", attrs: { maxlength: 120 } });
    const value = h("input", { type: "text", id: "world-value", placeholder: "a status, a time, who receives", attrs: { maxlength: 300 } });
    const optional = (input) => (input.value.trim() ? input.value.trim() : undefined);
    return h("form", {
      class: "editor world-add", attrs: { "aria-label": "Add to the world" },
      on: {
        submit: async (event) => {
          event.preventDefault();
          const body = { kind: kind.value, subject: optional(subject), object: optional(object), value: optional(value) };
          const added = await attempt(() => api("POST", `${base()}/events`, body));
          if (added === undefined) return;
          notify("Added: it holds from the newest action on.");
          refresh();
        },
      },
    },
      h("label", { text: "What changed", attrs: { for: "world-kind" } }), kind,
      h("label", { text: "Who (subject)", attrs: { for: "world-subject" } }), subject,
      h("label", { text: "What or where (object)", attrs: { for: "world-object" } }), object,
      h("label", { text: "Value", attrs: { for: "world-value" } }), value,
      h("div", { class: "row" }, h("button", { type: "submit", class: "primary", text: "Add event" })));
  }

  return { el, refresh };
}
