// Setup page: makes the first administrator from the one-time link and, once made (and so
// signed in), goes to the adventures page. Invariants:
// - The secret is read from this page's address, its fragment (which no browser sends to a
//   server, so no log or Referer holds it), and sent only in the body of
//   POST /api/auth/setup; the page never writes it anywhere else.
// - The two passwords must match before anything is sent; every other rule (the name, the
//   length) is the server's, whose sentence is shown in the form's alert as it is.
// - Once the account exists the link is spent: the page replaces itself in the history, so
//   going back does not land on a link that now answers "not found".
import { api } from "./ui.js";

const form = document.getElementById("setup-form");
const username = document.getElementById("setup-username");
const password = document.getElementById("setup-password");
const repeat = document.getElementById("setup-repeat");
const alertBox = document.getElementById("setup-error");
const submit = form.querySelector('button[type="submit"]');
const secret = decodeURIComponent(window.location.hash.slice(1));

function refuse(message, field) {
  alertBox.textContent = message;
  alertBox.hidden = false;
  field.focus();
}

async function create(event) {
  event.preventDefault();
  alertBox.hidden = true;
  alertBox.textContent = "";
  const name = username.value.trim();
  if (!name) return refuse("Type a name for the account.", username);
  if (!password.value) return refuse("Type a password for the account.", password);
  if (password.value !== repeat.value) {
    repeat.value = "";
    return refuse("The two passwords differ: type the same one in both fields.", repeat);
  }
  submit.disabled = true;
  try {
    await api("POST", "/api/auth/setup", { secret, username: name, password: password.value });
  } catch (error) {
    submit.disabled = false;
    refuse(error.message, error.code === "weak_password" ? password : username);
    return;
  }
  window.location.replace("/");
}

form.addEventListener("submit", create);
