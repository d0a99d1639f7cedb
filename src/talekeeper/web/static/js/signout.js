// The "Sign out" button of the top bar (accounts mode only). Invariant: the browser goes to
// the sign-in page once the session is over: ended now, or already ended (a 401). Any other
// failure keeps the page, with the reason in the banner, since the cookie may still work.
import { api, showError } from "./ui.js";

const button = document.getElementById("sign-out");

async function signOut() {
  button.disabled = true;
  try {
    await api("POST", "/api/auth/logout");
  } catch (error) {
    if (error.status !== 401) {
      button.disabled = false;
      showError(error);
      return;
    }
  }
  window.location.assign("/login");
}

if (button) button.addEventListener("click", signOut);
