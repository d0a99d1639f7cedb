// Join page: an invite link is "/join#CODE". Posts the persona to /api/invites/CODE/join
// and, once a member, goes to the adventures page, where the shared adventure is listed.
// Invariants:
// - The code is read from the fragment only, and sent only in that request's path
//   (encoded): it never goes into an address the server or a proxy logs.
// - A refusal (no such invite, revoked, used up, expired, full, a bad field) shows the
//   server's own sentence in the form's alert; nothing typed is lost.
import { api } from "./ui.js";

const form = document.getElementById("join-form");
const alertBox = document.getElementById("join-error");
const submit = form.querySelector('button[type="submit"]');
const field = (name) => document.getElementById(`join-${name}`);

function code() {
  return decodeURIComponent(window.location.hash.replace(/^#/, "")).trim();
}

function showRefusal(message) {
  alertBox.textContent = message;
  alertBox.hidden = false;
}

async function join(event) {
  event.preventDefault();
  alertBox.hidden = true;
  if (!code()) {
    showRefusal("This link holds no invite: open the whole link the host sent you.");
    return;
  }
  if (!field("name").value.trim()) {
    showRefusal("Give your character a name, then join.");
    field("name").focus();
    return;
  }
  const persona = { name: field("name").value };
  for (const name of ["pronouns", "description"]) {
    if (field(name).value.trim()) persona[name] = field(name).value;
  }
  submit.disabled = true;
  try {
    await api("POST", `/api/invites/${encodeURIComponent(code())}/join`, { persona });
  } catch (error) {
    submit.disabled = false;
    showRefusal(error.message);
    return;
  }
  window.location.assign("/");
}

form.addEventListener("submit", join);
