// Administrator's page: every account with its usage, and what an administrator may do to
// one (disable, enable, the admin flag, a new password, sign out everywhere, revoke tokens),
// plus adding a user. Invariants:
// - Nothing the server sent reaches the page as markup: names, figures and dates go in
//   with `h` (text nodes) only.
// - The page shows what /api/admin answers, which is counts and metadata: it never asks
//   for, or shows, anything of another player's stories.
// - The two passwords must match before anything is sent; every other rule (length, the
//   administrator's own account) is the server's, whose sentence is shown as it is.
// - After every change the list is read again from the server, so the figures and buttons
//   shown are the server's, never a guess; an open token list stays open.
// - A new password revokes the account's API tokens unless "also revoke their API tokens"
//   is unticked (ticked each time the form opens).
import { h, fill, api, notify, when, confirmGroup } from "./ui.js";

const root = document.getElementById("admin-page");
const self = (root.dataset.self || "").toLowerCase();
const list = document.getElementById("users-list");
const pageMessage = document.getElementById("admin-message");
const addForm = document.getElementById("add-user-form");
const FIGURES = [
  ["Adventures", "adventures", "Adventures the account has"],
  ["Turns", "turns", "Actions the player took (do, say, story), undone ones included"],
  ["AI calls", "ai_calls", "Model calls made for the account, background work included"],
  ["Tokens in", "tokens_in", "Prompt tokens the endpoint counted"],
  ["Tokens out", "tokens_out", "Reply tokens the endpoint counted"],
  ["Signed in", "sessions", "Browsers signed in now"],
  ["API tokens", "api_tokens", "API tokens the account has"],
];
let openTokens = null; // the id of the user whose tokens are shown

/** A sentence in a message box: an alert for an error, a status otherwise. */
function say(box, text, kind) {
  fill(box, text ? h("p", { class: "form-" + kind, text }) : null);
  box.setAttribute("role", kind === "error" ? "alert" : "status");
}

const failed = (error) => say(pageMessage, error.message, "error");

function badge(text, kind) {
  return h("span", { class: `badge badge-${kind}`, text });
}

// -- the list ------------------------------------------------------------------------------

async function load() {
  let body;
  try {
    body = await api("GET", "/api/admin/users");
  } catch (error) {
    fill(list, h("p", { class: "form-error", text: `The accounts could not be read: ${error.message}` }));
    return;
  }
  renderUsers(body.users);
  const shown = body.users.find((user) => user.id === openTokens);
  if (shown) await showTokens(shown);
  else openTokens = null;
}

function renderUsers(users) {
  if (!users.length) {
    fill(list, h("p", { class: "muted", text: "No accounts yet." }));
    return;
  }
  const head = [
    h("th", { text: "Account", attrs: { scope: "col" } }),
    ...FIGURES.map(([text, , title]) => h("th", { class: "num", text, title, attrs: { scope: "col" } })),
    h("th", { text: "Last seen", attrs: { scope: "col" } }),
    h("th", { text: "", attrs: { scope: "col" } }),
  ];
  fill(list, h("table", { class: "users-table" },
    h("thead", {}, h("tr", {}, head)),
    h("tbody", {}, users.map(userRows))));
}

function userRows(user) {
  const own = user.name.toLowerCase() === self;
  const name = h("th", { class: "user-name", attrs: { scope: "row" } },
    h("span", { class: "user-name-text", text: user.name }),
    own ? badge("you", "you") : null,
    user.admin ? badge("admin", "admin") : null,
    user.disabled ? badge("disabled", "disabled") : null);
  const figures = FIGURES.map(([, key]) => h("td", { class: "num", text: Number(user[key]).toLocaleString() }));
  const actions = h("td", { class: "user-actions" });
  const details = h("td", { class: "user-details-cell", attrs: { colspan: String(FIGURES.length + 3) } });
  const detailsRow = h("tr", { class: "user-details", hidden: true, dataset: { userId: String(user.id) } }, details);
  fill(actions, buttons(user, own, actions, detailsRow));
  const row = h("tr", {
    class: "user-row" + (user.disabled ? " user-disabled" : ""),
    dataset: { userId: String(user.id), userName: user.name },
  }, name, ...figures, h("td", { class: "when", text: user.last_seen ? when(user.last_seen) : "never" }), actions);
  return [row, detailsRow];
}

/** A button whose accessible name is its text and the account it acts on ("Disable: tove"). */
function button(text, label, onClick, options = {}) {
  return h("button", {
    type: "button", text, class: options.danger ? "danger" : null, disabled: Boolean(options.why),
    title: options.why || null, attrs: { "aria-label": label }, on: { click: onClick },
  });
}

function buttons(user, own, cell, detailsRow) {
  const all = () => buttons(user, own, cell, detailsRow);
  const ask = (options) => fill(cell, confirmGroup({ ...options, onNo: () => fill(cell, all()) }));
  return [
    user.disabled
      ? button("Enable", `Enable: ${user.name}`, () => change(user, { disabled: false }, `${user.name} may sign in again.`))
      : button("Disable", `Disable: ${user.name}`, () => ask({
        question: `Disable ${user.name}? They are signed out at once and cannot sign in until enabled.`,
        yes: "Disable", no: "Keep",
        onYes: (yes) => { yes.disabled = true; change(user, { disabled: true }, `${user.name} is disabled.`); },
      }), { danger: true, why: own ? "You cannot disable your own account." : null }),
    user.admin
      ? button("Remove admin", `Remove admin: ${user.name}`, () => change(user, { admin: false }, `${user.name} is no longer an administrator.`),
        { why: own ? "You cannot remove your own administrator flag." : null })
      : button("Make admin", `Make admin: ${user.name}`, () => change(user, { admin: true }, `${user.name} is an administrator.`)),
    button("Reset password", `Reset password: ${user.name}`, () => showReset(user, detailsRow),
      { why: own ? "Change your own password on the account page." : null }),
    button("Sign out everywhere", `Sign out everywhere: ${user.name}`, () => ask({
      question: own ? "Sign yourself out of every browser, this one too?" : `Sign ${user.name} out of every browser?`,
      yes: "Sign out", no: "Cancel",
      onYes: (yes) => { yes.disabled = true; signOut(user); },
    })),
    button(`Tokens (${user.api_tokens})`, `Tokens (${user.api_tokens}): ${user.name}`, () => toggleTokens(user)),
  ];
}

async function change(user, body, done) {
  try {
    await api("PATCH", `/api/admin/users/${encodeURIComponent(user.id)}`, body);
  } catch (error) {
    failed(error);
    await load();
    return;
  }
  say(pageMessage, done, "ok");
  notify(done);
  await load();
}

async function signOut(user) {
  let answer;
  try {
    answer = await api("DELETE", `/api/admin/users/${encodeURIComponent(user.id)}/sessions`);
  } catch (error) {
    failed(error);
    await load();
    return;
  }
  const browsers = answer.revoked === 1 ? "1 browser" : `${answer.revoked} browsers`;
  say(pageMessage, `${user.name} was signed out of ${browsers}.`, "ok");
  await load();
}

// -- a new password ------------------------------------------------------------------------

function showReset(user, detailsRow) {
  const id = `reset-${user.id}`;
  const fresh = h("input", { id: `${id}-new`, type: "password", autocomplete: "new-password" });
  const repeat = h("input", { id: `${id}-repeat`, type: "password", autocomplete: "new-password" });
  const box = h("div", { class: "form-message", attrs: { "aria-live": "polite" } });
  const revokeTokens = h("input", { id: `${id}-revoke-tokens`, type: "checkbox", attrs: { checked: "" } });
  const submit = h("button", { type: "submit", class: "primary", text: "Set password" });
  const close = () => { detailsRow.hidden = true; fill(detailsRow.firstChild); };
  const form = h("form", { class: "account-form password-reset", attrs: { novalidate: "" } },
    h("h3", { text: `A new password for ${user.name}` }),
    h("p", { class: "muted small", text: "Every browser signed in to the account is signed out, and its API tokens are revoked unless you untick the box." }),
    h("label", { text: "New password", attrs: { for: fresh.id } }), fresh,
    h("label", { text: "Repeat the new password", attrs: { for: repeat.id } }), repeat,
    h("label", { class: "inline" }, revokeTokens, " also revoke their API tokens"),
    box,
    h("div", { class: "row" }, submit, h("button", { type: "button", text: "Cancel", on: { click: close } })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    resetPassword(user, { fresh, repeat, revokeTokens, box, submit });
  });
  fill(detailsRow.firstChild, form);
  detailsRow.hidden = false;
  openTokens = null;
  fresh.focus();
}

async function resetPassword(user, { fresh, repeat, revokeTokens, box, submit }) {
  if (fresh.value !== repeat.value) {
    say(box, "The two passwords differ: type the same one in both fields.", "error");
    repeat.focus();
    return;
  }
  submit.disabled = true;
  try {
    await api("PATCH", `/api/admin/users/${encodeURIComponent(user.id)}`,
      { password: fresh.value, revoke_tokens: revokeTokens.checked });
  } catch (error) {
    say(box, error.message, "error");
    fresh.focus();
    return;
  } finally {
    submit.disabled = false;
  }
  const tokens = revokeTokens.checked ? "and their API tokens revoked" : "and their API tokens kept";
  const done = `The password of ${user.name} was changed; they were signed out everywhere ${tokens}.`;
  say(pageMessage, done, "ok");
  notify(done);
  await load();
}

// -- tokens --------------------------------------------------------------------------------

function detailsOf(user) {
  return list.querySelector(`tr.user-details[data-user-id="${CSS.escape(String(user.id))}"]`);
}

async function toggleTokens(user) {
  const row = detailsOf(user);
  if (openTokens === user.id && row && !row.hidden) {
    openTokens = null;
    row.hidden = true;
    fill(row.firstChild);
    return;
  }
  openTokens = user.id;
  await showTokens(user);
}

async function showTokens(user) {
  const row = detailsOf(user);
  if (!row) return;
  let body;
  try {
    body = await api("GET", `/api/admin/users/${encodeURIComponent(user.id)}/tokens`);
  } catch (error) {
    failed(error);
    return;
  }
  const heading = h("h3", { text: `API tokens of ${user.name}` });
  const content = body.tokens.length
    ? h("table", { class: "tokens-table" },
      h("thead", {}, h("tr", {}, ["Name", "Scopes", "Created", "Expires", "Last used", ""]
        .map((text) => h("th", { text, attrs: { scope: "col" } })))),
      h("tbody", {}, body.tokens.map((token) => tokenRow(user, token))))
    : h("p", { class: "muted tokens-empty", text: "No tokens." });
  fill(row.firstChild, h("div", { class: "user-tokens" }, heading, content));
  row.hidden = false;
}

function tokenRow(user, token) {
  const cell = h("td", { class: "token-actions" });
  const revoke = button("Revoke", `Revoke the token ${token.name}`, () => fill(cell, confirmGroup({
    question: `Revoke ${token.name} of ${user.name}? Scripts using it stop working at once.`,
    yes: "Revoke it", no: "Keep it",
    onNo: () => { fill(cell, revoke); revoke.focus(); },
    onYes: (yes) => { yes.disabled = true; revokeToken(user, token); },
  })), { danger: true });
  cell.appendChild(revoke);
  return h("tr", { dataset: { tokenId: String(token.id) } },
    h("td", { class: "token-name", text: token.name }),
    h("td", { class: "token-scope-list", text: token.scopes.join(", ") }),
    h("td", { class: "when", text: when(token.created_at) }),
    h("td", { class: "when", text: when(token.expires_at) }),
    h("td", { class: "when", text: token.last_used_at ? when(token.last_used_at) : "not yet" }),
    cell);
}

async function revokeToken(user, token) {
  try {
    await api("DELETE", `/api/admin/tokens/${encodeURIComponent(token.id)}`);
  } catch (error) {
    failed(error);
    await load();
    return;
  }
  const done = `The token ${token.name} of ${user.name} was revoked.`;
  say(pageMessage, done, "ok");
  notify(done);
  await load();
}

// -- adding a user -------------------------------------------------------------------------

async function addUser(event) {
  event.preventDefault();
  const box = document.getElementById("add-message");
  const [name, password, repeat, admin] = ["add-name", "add-password", "add-repeat", "add-admin"]
    .map((id) => document.getElementById(id));
  if (!name.value.trim()) {
    say(box, "Give the account a name.", "error");
    name.focus();
    return;
  }
  if (password.value !== repeat.value) {
    say(box, "The two passwords differ: type the same one in both fields.", "error");
    repeat.focus();
    return;
  }
  const submit = addForm.querySelector('button[type="submit"]');
  submit.disabled = true;
  let made;
  try {
    made = await api("POST", "/api/admin/users",
      { name: name.value.trim(), password: password.value, admin: admin.checked });
  } catch (error) {
    say(box, error.message, "error");
    (error.code === "weak_password" ? password : name).focus();
    return;
  } finally {
    submit.disabled = false;
  }
  addForm.reset();
  const done = `Added ${made.admin ? "the administrator" : "the player"} ${made.name}.`;
  say(box, done, "ok");
  notify(done);
  await load();
}

addForm.addEventListener("submit", addUser);
load();
