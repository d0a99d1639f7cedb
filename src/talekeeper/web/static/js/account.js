// Account page: a new password, and the account's API tokens. Invariants:
// - Nothing the server sent reaches the page as markup: names, scopes and dates are put in
//   with `h` (text nodes) and the new token only as an input's value.
// - A new token is shown once, right after it was made, and lives only in this page's
//   memory: it is never listed, stored or sent anywhere again, and "Done" or a reload
//   forgets it (the server keeps only its digest).
// - The two new passwords must match before anything is sent; every other rule (length,
//   the current password) is the server's, whose sentence is shown as it is.
// - A password change revokes the account's API tokens unless "also revoke my API tokens"
//   is unticked (ticked on every load); the list is read again after it.
import { h, fill, api, notify, when, confirmGroup } from "./ui.js";

const passwordForm = document.getElementById("password-form");
const tokenForm = document.getElementById("token-form");
const list = document.getElementById("tokens-list");
const created = document.getElementById("token-created");
const tokenValue = document.getElementById("token-value");

/** A sentence in a form's message box: an alert for an error, a status otherwise. */
function say(box, text, kind) {
  fill(box, text ? h("p", { class: "form-" + kind, text }) : null);
  box.setAttribute("role", kind === "error" ? "alert" : "status");
}

// -- password -------------------------------------------------------------------------------

async function changePassword(event) {
  event.preventDefault();
  const box = document.getElementById("password-message");
  const [current, fresh, repeat] = ["password-current", "password-new", "password-repeat"]
    .map((id) => document.getElementById(id));
  if (!current.value) {
    say(box, "Type your current password first.", "error");
    current.focus();
    return;
  }
  if (fresh.value !== repeat.value) {
    say(box, "The two new passwords differ: type the same one in both fields.", "error");
    repeat.focus();
    return;
  }
  const revokeTokens = document.getElementById("password-revoke-tokens").checked;
  const button = passwordForm.querySelector('button[type="submit"]');
  button.disabled = true;
  let answer;
  try {
    answer = await api("POST", "/api/auth/password",
      { current: current.value, new: fresh.value, revoke_tokens: revokeTokens });
  } catch (error) {
    say(box, error.message, "error");
    (error.status === 401 ? current : fresh).focus();
    return;
  } finally {
    button.disabled = false;
  }
  for (const field of [current, fresh, repeat]) field.value = "";
  say(box, `Password changed. Every other browser signed in to this account was signed out; ${tokensGone(answer.tokens_revoked, revokeTokens)}.`, "ok");
  notify("Password changed.");
  await loadTokens();
}

/** What a password change did to the API tokens, as the end of a sentence. */
function tokensGone(count, asked) {
  if (!asked) return "your API tokens keep working";
  if (!count) return "there were no API tokens to revoke";
  return count === 1 ? "your API token was revoked" : `your ${count} API tokens were revoked`;
}

// -- tokens ---------------------------------------------------------------------------------

function tokenRow(token) {
  const actions = h("td", { class: "token-actions" });
  const revoke = h("button", {
    type: "button", class: "danger", text: "Revoke",
    attrs: { "aria-label": `Revoke the token ${token.name}` },
    on: { click: () => askRevoke(token, actions, revoke) },
  });
  actions.appendChild(revoke);
  return h("tr", { dataset: { tokenId: String(token.id) } },
    h("td", { class: "token-name", text: token.name }),
    h("td", { class: "token-scope-list", text: token.scopes.join(", ") }),
    h("td", { class: "when", text: when(token.created_at) }),
    h("td", { class: "when", text: when(token.expires_at) }),
    h("td", { class: "when", text: token.last_used_at ? when(token.last_used_at) : "not yet" }),
    actions);
}

function askRevoke(token, cell, button) {
  const keep = () => { fill(cell, button); button.focus(); };
  fill(cell, confirmGroup({
    question: `Revoke ${token.name}? Scripts using it stop working at once.`,
    yes: "Revoke it",
    no: "Keep it",
    onNo: keep,
    onYes: async (yes) => {
      yes.disabled = true;
      try {
        await api("DELETE", `/api/tokens/${encodeURIComponent(token.id)}`);
      } catch (error) {
        say(document.getElementById("token-message"), error.message, "error");
        keep();
        return;
      }
      notify(`The token ${token.name} was revoked.`);
      await loadTokens();
    },
  }));
}

function renderTokens(tokens) {
  if (!tokens.length) {
    fill(list, h("p", { class: "muted tokens-empty", text: "No tokens yet." }));
    return;
  }
  const head = ["Name", "Scopes", "Created", "Expires", "Last used", ""]
    .map((text) => h("th", { text, attrs: { scope: "col" } }));
  fill(list, h("table", { class: "tokens-table" },
    h("thead", {}, h("tr", {}, head)),
    h("tbody", {}, tokens.map(tokenRow))));
}

async function loadTokens() {
  try {
    const body = await api("GET", "/api/tokens");
    renderTokens(body.tokens);
  } catch (error) {
    fill(list, h("p", { class: "form-error", text: `The tokens could not be read: ${error.message}` }));
  }
}

/** The body of POST /api/tokens from the form, or a sentence saying what to fix. */
function tokenRequest() {
  const name = document.getElementById("token-name").value.trim();
  const scopes = [...tokenForm.querySelectorAll('input[name="scope"]:checked')].map((b) => b.value);
  const never = document.getElementById("token-never").checked;
  const days = document.getElementById("token-days").value.trim();
  if (!name) return { problem: "Give the token a name: what will use it?", field: "token-name" };
  if (!scopes.length) return { problem: "Choose at least one scope.", field: null };
  if (!never && !/^\d+$/.test(days)) {
    return { problem: "Type the number of days the token works, or tick \"never expires\".",
      field: "token-days" };
  }
  return { body: { name, scopes, expires_days: never ? null : Number(days) } };
}

async function createToken(event) {
  event.preventDefault();
  const box = document.getElementById("token-message");
  const request = tokenRequest();
  if (request.problem) {
    say(box, request.problem, "error");
    if (request.field) document.getElementById(request.field).focus();
    return;
  }
  const button = tokenForm.querySelector('button[type="submit"]');
  button.disabled = true;
  let token;
  try {
    token = await api("POST", "/api/tokens", request.body);
  } catch (error) {
    say(box, error.message, "error");
    return;
  } finally {
    button.disabled = false;
  }
  say(box, `Created the token ${token.name}.`, "ok");
  document.getElementById("token-name").value = "";
  showOnce(token.token);
  await loadTokens();
}

function showOnce(raw) {
  tokenValue.value = raw;
  created.hidden = false;
  tokenValue.focus();
  tokenValue.select();
}

async function copyToken() {
  tokenValue.focus();
  tokenValue.select();
  try {
    // Only a secure context (https, or this machine) has the clipboard API.
    if (!navigator.clipboard) throw new Error("no clipboard");
    await navigator.clipboard.writeText(tokenValue.value);
    notify("The token is on the clipboard.");
  } catch {
    notify(document.execCommand("copy") ? "The token is on the clipboard."
      : "Copying was refused: the token is selected, copy it with Ctrl+C.");
  }
}

function forgetToken() {
  tokenValue.value = "";
  created.hidden = true;
}

function syncNever() {
  document.getElementById("token-days").disabled = document.getElementById("token-never").checked;
}

passwordForm.addEventListener("submit", changePassword);
tokenForm.addEventListener("submit", createToken);
document.getElementById("token-never").addEventListener("change", syncNever);
document.getElementById("token-copy").addEventListener("click", copyToken);
document.getElementById("token-done").addEventListener("click", forgetToken);
syncNever();
loadTokens();
