// Sign-in: a token from the address, the form or the demo people; signing out. Above session.js, which it starts.

import { $, tokenKey, page } from "./state.js";
import { API } from "/herald/api.js";
import { cleanText } from "/herald/presentation.js";
import { start } from "./session.js";
import { turnWebPushOff, webPushOwner } from "./push.js";


/** The claims of a token (its middle part), or null when it is not a JWT. The server checks the signature. */
export function claims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    const value = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value.sub === "string" ? value : null;
  } catch {
    return null;
  }
}

/** A token handed over in the address (`/#token=…`) is taken and removed from the address bar at once; so is a
 * chat to open (`/#chat=<id>`, from a notification's click). */
export function readFragment() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  page.chatToOpen = fragment.get("chat");
  // A notification's Reply: the chat opens with the composer focused.
  page.composeOnOpen = fragment.get("compose") === "1";
  if (token === null && page.chatToOpen === null) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return token?.trim() ?? null;
}

export async function showSignIn(message = "") {
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
  $("app").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  document.title = "Herald";
  const people = await API.demoPeople();
  const box = $("demo-people");
  box.replaceChildren();
  box.hidden = !people;
  for (const person of people ?? []) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.user = person.id;
    button.textContent = `Continue as ${cleanText(person.name)}`;
    button.addEventListener("click", async () => {
      try {
        const { token } = await API.demoToken(person.id);
        signIn(token);
      } catch (error) {
        $("sign-in-error").textContent = error.message;
      }
    });
    box.append(button);
  }
}

export function signIn(token) {
  const who = claims(token);
  if (!who) {
    showSignIn("That is not a Herald token.");
    return;
  }
  sessionStorage.setItem(tokenKey, token);
  start(token, who);
}

export function signOut(message = "") {
  sessionStorage.removeItem(tokenKey);
  localStorage.removeItem(tokenKey);
  if (page.session) {
    // This browser stops being told about the user's messages: unsubscribed, and the device removed while the token
    // still works.
    if (webPushOwner() !== null) turnWebPushOff(page.session.api);
    page.session.client.close();
    page.session.banners.close();
    page.session = null;
  }
  showSignIn(message);
}
