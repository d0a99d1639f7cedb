// The Memory panel: the Memory Bank, grouped as used this turn / idle / forgotten, and a form
// to add a memory by hand. Invariants:
// - "Used this turn" are the active memories the newest reply used: the reply is the head of
//   the story when it is a narration, and a memory lists the replies that used it
//   (`used_by`, from the same record as that reply's Insights). A story that ends with the
//   player's action (no reply yet) has no "this turn".
// - "Idle" are the other active memories, "forgotten" those pushed out by capacity (kept,
//   never retrieved). With "show all", withdrawn and deleted memories and other branches'
//   ones are listed too, as history.
// - Newest first in each group, so a memory written in the background appears at the top.
import { h, fill, api, notify, attempt, plural } from "./ui.js";
import { refresher } from "./panel-kit.js";
import { memoryItem } from "./panel-memory-item.js";

const MEMORY_MAX = 2000;
const GROUPS = [
  {
    key: "used", title: "Used this turn",
    hint: "Given to the narrator for the newest reply.",
    empty: "The newest reply used no memory.",
  },
  { key: "idle", title: "Idle", hint: "In the bank, not used this turn.", empty: "No idle memory." },
  {
    key: "forgotten", title: "Forgotten",
    hint: "Pushed out when the bank was full: kept, but never retrieved. Pin one to bring it back.",
  },
  { key: "withdrawn", title: "Withdrawn", hint: "Their source left the story (undo, retry or delete)." },
  { key: "deleted", title: "Deleted", hint: "Deleted by you; their source is not written again." },
  { key: "elsewhere", title: "On other branches", hint: "Memories of paths you are not on." },
];

function groupOf(memory, headReplyId, everything) {
  if (everything && memory.on_path === false) return "elsewhere";
  if (memory.status === "active") {
    return headReplyId !== null && memory.used_by.includes(headReplyId) ? "used" : "idle";
  }
  return memory.status;
}

export function memoryPanel(ctx) {
  const open = new Map();
  const showAll = h("input", { type: "checkbox", id: "memory-show-all" });
  const counts = h("p", { class: "muted small memory-counts" });
  const groups = h("div", { class: "memory-groups" });
  const el = h("div", { class: "panel-body" },
    h("div", { class: "row memory-head" },
      h("h3", { text: "Memory Bank" }),
      h("span", { class: "spacer" }),
      h("label", { class: "inline small", attrs: { for: "memory-show-all" } }, showAll, "Show all")),
    counts,
    addForm(),
    groups);

  const refresh = refresher(groups, async () => {
    const everything = showAll.checked;
    return { everything, memories: await api("GET", `/api/adventures/${ctx.id}/memories${everything ? "?include=all" : ""}`) };
  }, ({ memories, everything }) => render(memories, everything));
  showAll.addEventListener("change", refresh);

  function render(memories, everything) {
    const head = ctx.headReplyId();
    const byGroup = new Map(GROUPS.map((g) => [g.key, []]));
    for (const memory of memories) {
      const key = groupOf(memory, head, everything);
      (byGroup.get(key) || byGroup.get("idle")).push(memory);
    }
    const active = byGroup.get("used").length + byGroup.get("idle").length;
    const pinned = memories.filter((m) => m.pinned && m.status === "active").length;
    const waiting = memories.filter((m) => !m.embedded && m.status === "active").length;
    counts.textContent = [
      plural(active, "memory", "memories") + " in the bank",
      pinned ? `${pinned} pinned` : null,
      waiting ? `${waiting} waiting to be embedded` : null,
      byGroup.get("forgotten").length ? `${byGroup.get("forgotten").length} forgotten` : null,
    ].filter(Boolean).join(" · ") + ".";
    if (!memories.length) {
      fill(groups, h("p", { class: "muted memory-empty", text: "No memories yet. They are written in the background as the story grows (the first after about six turns), or add one by hand above." }));
      return;
    }
    const options = {
      headReplyId: head, open, changed: refresh, watch: ctx.watch,
    };
    fill(groups, GROUPS.map((group) => {
      const list = byGroup.get(group.key).slice().reverse();
      if (!list.length && !group.empty) return null;
      return h("section", {
        class: `memory-group group-${group.key}`, dataset: { group: group.key },
        attrs: { "aria-label": group.title },
      },
        h("h4", { class: "group-title" },
          group.title, " ", h("span", { class: "badge group-count", text: String(list.length) })),
        h("p", { class: "muted small", text: list.length ? group.hint : group.empty }),
        list.length
          ? h("ul", { class: "memory-list" },
            list.map((memory) => memoryItem(memory, { ...options, used: group.key === "used" })))
          : null);
    }));
  }

  function addForm() {
    const area = h("textarea", {
      id: "memory-new", rows: 2, placeholder: "e.g. Old Maren lost her left eye to the Choir.",
      attrs: { maxlength: MEMORY_MAX },
    });
    const pin = h("input", { type: "checkbox" });
    const add = h("button", { type: "submit", class: "primary", text: "Add memory" });
    return h("details", { class: "memory-add" },
      h("summary", { text: "Add a memory by hand" }),
      h("form", {
        class: "editor",
        on: {
          submit: async (event) => {
            event.preventDefault();
            add.disabled = true;
            const made = await attempt(() => api("POST", `/api/adventures/${ctx.id}/memories`, {
              text: area.value, pinned: pin.checked,
            }));
            add.disabled = false;
            if (made === undefined) return;
            area.value = "";
            pin.checked = false;
            notify("Memory added.");
            refresh();
            ctx.watch(); // it is embedded in the background
          },
        },
      },
      h("label", { text: "A sentence or two the narrator should remember", attrs: { for: "memory-new" } }),
      area,
      h("div", { class: "row" }, add, h("label", { class: "inline small" }, pin, "Pin it"))));
  }

  return { el, refresh };
}
