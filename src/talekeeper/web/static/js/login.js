// Sign-in page: posts the name and password to /api/auth/login and, once signed in, goes on
// to the page that asked for it. Invariants:
// - Where it goes next is a path on this server and nothing else: `safeNext` keeps a
//   "/path" that the browser resolves to this very origin, and turns anything else
//   ("//host", "/\host", "https://host", "javascript:", text with control characters) into
//   the adventures page, so a link to the sign-in page cannot send anyone off-site. The
//   fragment the page was opened with is kept (`withFragment`): it is this origin's too.
// - A refusal (wrong name or password, too many tries) shows the server's own sentence in
//   the form's alert; the password field is emptied for the next try, the name kept.
import { api } from "./ui.js";

const HOME = "/";

/** `raw` when it is a path on this origin (kept with its query and fragment); HOME otherwise. */
export function safeNext(raw, origin = window.location.origin) {
  if (typeof raw !== "string" || !raw.startsWith("/")) return HOME;
  // The URL parser drops tabs and newlines and reads "\" as "/": "/\t/evil" is "//evil".
  if (/[\u0000-\u001f\u007f\\]/.test(raw) || raw.startsWith("//")) return HOME;
  let url;
  try {
    url = new URL(raw, origin);
  } catch {
    return HOME;
  }
  if (url.origin !== origin) return HOME;
  if (url.pathname === "/login") return HOME;  // signing in again would be a loop
  return url.pathname + url.search + url.hash;
}

const form = document.getElementById("login-form");
const username = document.getElementById("login-username");
const password = document.getElementById("login-password");
const alertBox = document.getElementById("login-error");
const submit = form.querySelector('button[type="submit"]');

function showRefusal(message) {
  alertBox.textContent = message;
  alertBox.hidden = false;
}

async function signIn(event) {
  event.preventDefault();
  alertBox.hidden = true;
  alertBox.textContent = "";
  if (!username.value.trim() || !password.value) {
    showRefusal("Type your account name and your password, then sign in.");
    (username.value.trim() ? password : username).focus();
    return;
  }
  submit.disabled = true;
  try {
    await api("POST", "/api/auth/login", { username: username.value.trim(), password: password.value });
  } catch (error) {
    submit.disabled = false;
    password.value = "";
    showRefusal(error.message);
    password.focus();
    return;
  }
  window.location.assign(withFragment(safeNext(form.dataset.next), window.location.hash));
}

/** `next` with the fragment this page was opened with, when `next` has none of its own: a
 * link whose secret rides in its fragment (an invite: "/join#CODE") keeps it through the
 * sign-in it was redirected to, since a redirect keeps the fragment but `next` cannot. */
export function withFragment(next, hash) {
  return next.includes("#") || !hash || hash === "#" ? next : next + hash;
}

form.addEventListener("submit", signIn);
