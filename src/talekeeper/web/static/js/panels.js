// The play page's side panels: Plot, Cards, Knowledge, Scene, World, Memory, Summary and (in
// accounts mode) People, as tabs, with a line that says what the background memory work is doing. Invariants:
// - This module owns everything inside <aside id="panels"> and nothing outside it.
// - The adventure is read once on load and again after every "story-changed"; panels read it
//   from the shared context (`ctx.adventure`), so the newest reply is known in one place.
// - After a turn (or any change to the story) the background work is polled about once a
//   second until it is idle; each step it finishes refreshes the Memory Bank and the Summary,
//   so the player watches memories fill in, and the card proposals are read once it is idle.
// - A tab may carry a count (the Cards tab: the open card proposals), set by its panel.
import { h, fill, api, attempt, on, adventureId } from "./ui.js";
import { plotPanel } from "./panel-plot.js";
import { cardsPanel } from "./panel-cards.js";
import { knowledgePanel } from "./panel-knowledge.js";
import { scenePanel } from "./panel-scene.js";
import { worldPanel } from "./panel-world.js";
import { memoryPanel } from "./panel-memory.js";
import { summaryPanel } from "./panel-summary.js";
import { backgroundStatus } from "./panel-status.js";
import { sharingPanel } from "./panel-sharing.js";

// People: accounts mode only, where an adventure can be shared (the page says so).
const sharing = document.getElementById("play")?.dataset.sharing === "on";
const TABS = [
  { key: "plot", label: "Plot", make: plotPanel },
  { key: "cards", label: "Cards", make: cardsPanel },
  { key: "knowledge", label: "Knowledge", make: knowledgePanel },
  { key: "scene", label: "Scene", make: scenePanel },
  { key: "world", label: "World", make: worldPanel },
  { key: "memory", label: "Memory", make: memoryPanel },
  { key: "summary", label: "Summary", make: summaryPanel },
  ...(sharing ? [{ key: "people", label: "People", make: sharingPanel }] : []),
];
const REMEMBER = "talekeeper.panel-tab";
const DEFAULT_TAB = "memory";

function savedTab() {
  try {
    const key = window.localStorage.getItem(REMEMBER);
    return TABS.some((t) => t.key === key) ? key : DEFAULT_TAB;
  } catch {
    return DEFAULT_TAB; // storage can be refused (private windows); the default will do
  }
}

function buildTabs(aside, panels) {
  const bar = h("div", { class: "panel-tabs", attrs: { role: "tablist", "aria-label": "Side panels" } });
  const buttons = new Map();
  function select(key, focus = false) {
    for (const tab of TABS) {
      const chosen = tab.key === key;
      const button = buttons.get(tab.key);
      button.setAttribute("aria-selected", chosen ? "true" : "false");
      button.tabIndex = chosen ? 0 : -1;
      panels.get(tab.key).box.hidden = !chosen;
      if (chosen && focus) button.focus();
    }
    try {
      window.localStorage.setItem(REMEMBER, key);
    } catch {
      // not remembered: harmless
    }
  }
  TABS.forEach((tab, index) => {
    const button = h("button", {
      type: "button", class: "panel-tab", text: tab.label,
      id: `panel-tab-${tab.key}`,
      attrs: { role: "tab", "aria-controls": `panel-${tab.key}` },
      on: {
        click: () => select(tab.key),
        keydown: (event) => {
          const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
          if (!step) return;
          event.preventDefault();
          select(TABS[(index + step + TABS.length) % TABS.length].key, true);
        },
      },
    });
    buttons.set(tab.key, button);
    bar.appendChild(button);
  });
  aside.appendChild(bar);
  function badge(key, count) {
    const button = buttons.get(key);
    const tab = TABS.find((t) => t.key === key);
    button.textContent = tab.label;
    button.removeAttribute("aria-label");
    if (count > 0) {
      button.appendChild(h("span", { class: "tab-count", text: String(count) }));
      button.setAttribute("aria-label", `${tab.label} (${count} waiting)`);
    }
  }
  return { select, badge };
}

async function start() {
  const aside = document.getElementById("panels");
  const id = adventureId();
  if (!aside || !id) return;

  const ctx = {
    id,
    adventure: null,
    /** The newest reply's id when the head is a narration (the Memory Bank's "this turn"). */
    headReplyId() {
      const head = ctx.adventure && ctx.adventure.head;
      return head && head.type === "narration" ? head.id : null;
    },
    async reloadAdventure() {
      ctx.adventure = await api("GET", `/api/adventures/${id}`);
      return ctx.adventure;
    },
    setAdventure(adventure) {
      ctx.adventure = adventure;
    },
    /** Start watching background work (after anything that schedules it). */
    watch: () => status.check(),
    /** Draw one panel again from ``ctx.adventure`` (after another panel changed it). */
    redraw: (key) => panels.get(key).refresh(),
    /** A count on a panel's tab (the open card proposals); 0 takes it away. */
    badge: (key, count) => badge(key, count),
  };

  const panels = new Map();
  for (const tab of TABS) {
    const panel = tab.make(ctx);
    panel.box = h("div", {
      class: `panel panel-${tab.key}`, id: `panel-${tab.key}`,
      attrs: { role: "tabpanel", "aria-labelledby": `panel-tab-${tab.key}` },
    }, panel.el);
    panels.set(tab.key, panel);
  }
  const status = backgroundStatus(ctx, {
    onProgress: () => refreshDerived(),
    // The card proposals once the work is done: listing them reads the whole path.
    onSettled: () => Promise.all([refreshDerived(), panels.get("cards").refreshProposals()]),
  });
  fill(aside);
  aside.appendChild(status.el);
  const { select, badge } = buildTabs(aside, panels);
  for (const panel of panels.values()) aside.appendChild(panel.box);
  select(savedTab());

  function refreshDerived() {
    return Promise.all([panels.get("memory").refresh(), panels.get("summary").refresh()]);
  }

  const loaded = await attempt(() => ctx.reloadAdventure());
  if (loaded === undefined) {
    aside.appendChild(h("p", { class: "muted", text: "The panels could not load; reload the page to try again." }));
    return;
  }
  await Promise.all([...panels.values()].map((panel) => panel.refresh()));
  status.check();

  on("story-changed", async () => {
    await attempt(() => ctx.reloadAdventure());
    await Promise.all([
      panels.get("scene").refresh(), panels.get("world").refresh(), refreshDerived(),
      panels.get("cards").refreshProposals(), // an undo or an edit may withdraw one
    ]);
    status.check();
  });
}

start();
