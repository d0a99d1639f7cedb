// Adventures page (served at "/"): the player's adventures with Play, Export and Delete; a new
// adventure from a shipped scenario or a blank page; importing an exported file. Invariants:
// - Everything from the server or a file (titles, descriptions, personas) reaches the page
//   as text only, through `h`/textContent.
// - Every failed request shows a readable message in the #errors banner and leaves the page
//   as it was: a refused import adds nothing, a failed delete keeps the row.
// - After anything that changes the list (import, delete) the list is read again from the
//   server, so the page shows what is stored, not what it hoped for.
import { h, fill, api, showError, notify } from "./ui.js";
import { renderList } from "./adventures-list.js";
import { renderNew } from "./adventures-new.js";
import { localServers } from "./local-servers.js";

const OTHER_TOOLS = " A file from another tool (a character card, a scenario) starts an adventure "
  + "through “Start from a file…” under Start a new adventure.";
const state = { adventures: null, scenarios: null, fresh: null };
let listRoot = null;
let newRoot = null;

function setup() {
  const local = document.getElementById("local-servers-root");
  // After a switch the page is read again: the placeholder's notice goes, the models change.
  if (local) localServers(local, { onUsed: () => location.reload() });
  listRoot = document.getElementById("adventures-root");
  newRoot = document.getElementById("new-adventure-root");
  if (!listRoot || !newRoot) return;
  const input = document.getElementById("import-file");
  if (input) input.addEventListener("change", () => onImportChosen(input));
  fill(listRoot, loading("Reading your adventures…"));
  fill(newRoot, loading("Reading the scenarios…"));
  loadScenarios().then(showList);
  refresh();
}

function loading(text) {
  return h("p", { class: "muted", attrs: { role: "status" }, text });
}

async function loadScenarios() {
  try {
    state.scenarios = await api("GET", "/api/scenarios");
  } catch (error) {
    showError(`The scenarios could not be read: ${error.message}`);
    state.scenarios = null;
  }
  renderNew(newRoot, state.scenarios, { retry: () => loadScenarios().then(showList) });
}

/** Read the list again from the server and show it. */
async function refresh() {
  try {
    state.adventures = await api("GET", "/api/adventures");
  } catch (error) {
    showError(`Your adventures could not be read: ${error.message}`);
    if (state.adventures === null) {
      fill(listRoot, h("div", { class: "card adv-empty" },
        h("p", { text: "Your adventures could not be read." }),
        h("button", { type: "button", text: "Try again", on: { click: () => refresh() } })));
    }
    return;
  }
  showList();
}

function showList() {
  if (state.adventures === null) return; // still loading, or failed with its own message
  renderList(listRoot, state.adventures, {
    fresh: state.fresh,
    scenarioTitle,
    changed: refresh,
  });
}

function scenarioTitle(id) {
  if (!id) return null;
  const known = (state.scenarios || []).find((s) => s.id === id);
  return known ? known.title : id;
}

async function onImportChosen(input) {
  const file = input.files && input.files[0];
  if (!file) return;
  input.disabled = true;
  try {
    await importFile(file);
  } finally {
    input.disabled = false;
    input.value = ""; // the same file can be chosen again after a fix
  }
}

async function importFile(file) {
  let data;
  try {
    data = JSON.parse(await file.text());
  } catch {
    showError(`“${file.name}” is not a JSON file, so it is not an exported adventure. `
      + "Choose a file that Export saved." + OTHER_TOOLS);
    return;
  }
  notify(`Importing “${file.name}”…`);
  let created;
  try {
    created = await api("POST", "/api/adventures/import", data);
  } catch (error) {
    notify("");
    showError(`“${file.name}” was not imported: ${error.message}` + OTHER_TOOLS);
    return;
  }
  notify(`Imported “${created.title}”.`);
  state.fresh = created.id;
  await refresh();
}

setup();
