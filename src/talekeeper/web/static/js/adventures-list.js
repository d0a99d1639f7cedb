// The list of the player's adventures on the adventures page. Invariants:
// - A title is shown as text wherever it appears: in the row, in the buttons' accessible
//   names, in the delete question and in the export's file name (made safe for a file system).
// - Delete always asks first, in the page: the row's buttons become "Delete “X” for good?"
//   with Confirm and Cancel; Escape or Cancel puts them back and nothing is sent.
// - Export saves exactly what GET /api/adventures/{id}/export answered, as a JSON file named
//   after the title, through a blob: link (no navigation, nothing left open afterwards).
import { h, fill, api, showError, notify, when, confirmGroup } from "./ui.js";

/** Show `adventures` in `root`. ctx: fresh (the id to highlight), scenarioTitle(id), changed(). */
export function renderList(root, adventures, ctx) {
  if (!adventures.length) {
    fill(root, h("div", { class: "card adv-empty" },
      h("p", { class: "adv-empty-lead", text: "No adventures yet." }),
      h("p", { class: "muted" },
        "Pick a story below and press Start: you will be playing in one click. ",
        "Or write your own from a blank page, start from another tool's file, or import a file you "
        + "exported before."),
      h("a", { class: "button primary", href: "#new-adventure", text: "Choose a story to begin" })));
    return;
  }
  fill(root, h("ul", { class: "adv-list", attrs: { "aria-label": "Your adventures" } },
    adventures.map((adventure) => row(adventure, ctx))));
}

function row(adventure, ctx) {
  const actions = h("div", { class: "adv-actions row" });
  const fresh = adventure.id === ctx.fresh;
  const item = h("li", {
    class: "adv card" + (fresh ? " fresh" : ""),
    dataset: { adventureId: String(adventure.id) },
  },
  h("div", { class: "adv-main" },
    h("h3", { class: "adv-title" }, h("a", { href: playUrl(adventure), text: adventure.title })),
    h("p", { class: "adv-meta small muted" }, meta(adventure, ctx))),
  actions);
  if (shared(adventure)) {
    // Exporting and deleting are its host's (docs/sharing.md): a member only opens it.
    fill(actions, h("a", { class: "button", href: playUrl(adventure), text: "Open",
      attrs: { "aria-label": `Open “${adventure.title}”` } }));
  } else {
    showButtons(actions, adventure, ctx);
  }
  return item;
}

/** An adventure someone else hosts, which this account joined (its role is not "host"). */
function shared(adventure) {
  return Boolean(adventure.role) && adventure.role !== "host";
}

function playUrl(adventure) {
  return `/adventures/${encodeURIComponent(adventure.id)}`;
}

function meta(adventure, ctx) {
  const scenario = ctx.scenarioTitle(adventure.scenario);
  const length = Number.isInteger(adventure.length) ? adventure.length : null;
  // One passage is at most an opening: nothing has been played yet.
  const played = length === null || length > 1;
  const stamp = played ? adventure.updated_at : adventure.created_at;
  const parts = [
    shared(adventure)
      ? h("span", { class: "badge", text: `Shared with you: ${adventure.role}` })
      : scenario ? h("span", { class: "badge", text: scenario }) : h("span", { text: "Your own story" }),
    h("span", {}, played ? "Last played " : "Started ",
      h("time", { attrs: { datetime: stamp }, text: when(stamp) })),
  ];
  if (length !== null) parts.push(h("span", { text: lengthText(length) }));
  return parts.flatMap((part, i) => (i ? [" · ", part] : [part]));
}

function lengthText(length) {
  if (length === 0) return "nothing written yet";
  return length === 1 ? "not played yet" : `${length.toLocaleString()} passages`;
}

function showButtons(actions, adventure, ctx) {
  const title = adventure.title;
  const remove = h("button", {
    type: "button", class: "danger", text: "Delete", attrs: { "aria-label": `Delete “${title}”` },
    on: { click: () => askDelete(actions, adventure, ctx) },
  });
  fill(actions,
    h("a", { class: "button primary", href: playUrl(adventure), text: "Play",
      attrs: { "aria-label": `Play “${title}”` } }),
    h("button", { type: "button", text: "Export", attrs: { "aria-label": `Export “${title}”` },
      on: { click: (event) => exportAdventure(event.currentTarget, adventure) } }),
    remove);
  return remove;
}

function askDelete(actions, adventure, ctx) {
  const back = () => showButtons(actions, adventure, ctx).focus();
  fill(actions, confirmGroup({
    question: `Delete “${adventure.title}” for good?`,
    yes: "Confirm",
    className: "adv-confirm row",
    onYes: (confirm, cancel) => deleteAdventure(adventure, ctx, [confirm, cancel], back),
    onNo: back,
  }));
}

async function deleteAdventure(adventure, ctx, buttons, back) {
  for (const button of buttons) button.disabled = true;
  buttons[0].textContent = "Deleting…";
  try {
    await api("DELETE", `/api/adventures/${encodeURIComponent(adventure.id)}`);
  } catch (error) {
    showError(`“${adventure.title}” was not deleted: ${error.message}`);
    back();
    return;
  }
  notify(`Deleted “${adventure.title}”.`);
  await ctx.changed();
  document.getElementById("adventures-heading")?.focus();
}

async function exportAdventure(button, adventure) {
  button.disabled = true;
  button.textContent = "Exporting…";
  try {
    const data = await api("GET", `/api/adventures/${encodeURIComponent(adventure.id)}/export`);
    const name = fileName(adventure.title);
    download(name, JSON.stringify(data, null, 2) + "\n");
    notify(`Saved “${adventure.title}” as ${name}.`);
  } catch (error) {
    showError(`“${adventure.title}” could not be exported: ${error.message}`);
  } finally {
    button.disabled = false;
    button.textContent = "Export";
  }
}

/** A file name from a title: characters file systems refuse become spaces; never empty. */
function fileName(title) {
  const base = String(title ?? "")
    .normalize("NFKC")
    .replace(/[\\/:*?"<>|\u0000-\u001f\u007f]+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^\.+/, "")
    .slice(0, 80)
    .trim();
  return (base || "adventure") + ".json";
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const link = h("a", { href: url, download: name, class: "visually-hidden", text: name });
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30_000); // the download has started by then
}
