// Herald's web client: this file wires the page's parts together and signs in. Everything from the network is shown
// with textContent, never as markup. The API, the stream and the engine are the JavaScript package's (clients/js),
// which the server serves at /herald/. The parts: state.js (what the page knows), signin.js, session.js (the stream
// into the page), list.js (the chats), chat.js (the open chat), composer.js (sending, editing, @ completion),
// levels.js (a chat's notifications), settings.js, group.js (a group's details), people.js (a new chat),
// dialogs.js, away.js and push.js (notifications while away), banners.js (the in-app banners).
// The top of the page's modules: each part imports only parts below it (docs/architecture.md, "The web client"), and
// what a lower part cannot call, app.js hands it here: the handlers of its clicks, and listeners of what state.js
// announces.

import { $, listen, page, tokenKey } from "./state.js";
import { askNotificationPermission, permissionChanged } from "./away.js";
import { claims, readFragment, showSignIn, signIn, signOut } from "./signin.js";
import { closeChat, loadOlder, openChat, renderChatHeader } from "./chat.js";
import { closeNewChat, isGroup, newChat, openNewChat, picker, renderPicked, searchSoon } from "./people.js";
import { cleanText } from "/herald/presentation.js";
import { displayName } from "/herald/engine.js";
import { renderList, wireList } from "./list.js";
import { wireComposer } from "./composer.js";
import { wireDialogs } from "./dialogs.js";
import { wireGroup } from "./group.js";
import { wireLevels } from "./levels.js";
import { wireSettings } from "./settings.js";

function wire() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    $("token-input").value = "";
    if (token) signIn(token);
  });
  wireDialogs();
  wireList(openChat);
  // Levels changed (a chat's, the settings', or a time one was chosen for ended): what shows them is drawn again.
  listen("levels", () => {
    renderList();
    if (page.session.open) renderChatHeader();
  });
  // The server refused the token: signed out, saying why.
  listen("refused", signOut);
  for (const id of ["new-chat-button", "no-chat-start", "list-empty-start"]) $(id).addEventListener("click", () => openNewChat());
  $("new-chat-cancel").addEventListener("click", closeNewChat);
  $("new-chat").addEventListener("submit", newChat);
  for (const radio of $("new-chat").elements.kind) {
    radio.addEventListener("change", () => {
      document.body.classList.toggle("new-group", isGroup());
      // A direct chat is with one person: the first picked stays.
      if (!isGroup() && picker.picked.size > 1) {
        const [first] = picker.picked.values();
        picker.picked = new Map([[first.id, first]]);
        renderPicked();
      }
    });
  }
  $("people-search").addEventListener("input", searchSoon);
  $("people-search").addEventListener("keydown", (event) => {
    // Enter picks the first person found, as a search box with suggestions does.
    if (event.key === "Enter") {
      event.preventDefault();
      $("people-results").querySelector("button")?.click();
    }
  });
  $("chat-search").addEventListener("input", () => page.session && renderList());
  $("chat-search").addEventListener("keydown", (event) => {
    // Enter opens the first chat found; Escape clears the search.
    if (event.key === "Enter") $("conversations").querySelector("button")?.click();
    if (event.key === "Escape" && $("chat-search").value) {
      $("chat-search").value = "";
      renderList();
    }
  });
  wireComposer();
  $("messages").addEventListener("scroll", () => {
    if ($("messages").scrollTop < 60) loadOlder();
  });
  $("back").addEventListener("click", closeChat);
  wireLevels();
  wireSettings();
  wireGroup({ addPeople: openNewChat });
  $("notify-button").addEventListener("click", askNotificationPermission);
  // Permission changed in the browser's settings: the engine and the server's record of this browser follow.
  navigator.permissions?.query({ name: "notifications" }).then((status) => {
    status.addEventListener("change", permissionChanged);
  }).catch(() => {});
}

/** Whether a token from a link may sign in here in place of `current`: at once when no one is signed in or it is
 * the same user's; otherwise only if the person says so. A link made by someone else must not switch this tab to
 * their account unasked (login CSRF: what one then writes would go to them). */
function mayTakeLinkedToken(token, current) {
  if (!current || token === current) return true;
  const from = claims(current), to = claims(token);
  if (!from || !to || from.sub === to.sub) return true;
  const name = (who) => cleanText(displayName(who.name ?? who.sub));
  return window.confirm(`This link signs in as ${name(to)}. Sign out ${name(from)} and continue as ${name(to)}?`);
}

/** A link opened in a tab that is already open (`/#token=…` or `/#chat=…`): the token signs in, in place of whoever
 * was signed in (asking first when that is someone else); the chat opens. Either way the address is cleaned at once. */
window.addEventListener("hashchange", () => {
  const token = readFragment();
  if (token && token !== page.session?.api.token) {
    if (!mayTakeLinkedToken(token, page.session?.api.token)) return;
    if (page.session) signOut();
    signIn(token);
  } else if (page.chatToOpen !== null && page.session?.loaded) {
    openChat(page.chatToOpen, { compose: page.composeOnOpen });
    page.chatToOpen = null;
    page.composeOnOpen = false;
  }
});

wire();
const stored = sessionStorage.getItem(tokenKey) ?? localStorage.getItem(tokenKey);
const linked = readFragment();
const token = linked && mayTakeLinkedToken(linked, stored) ? linked : stored;
if (token) signIn(token);
else showSignIn();
