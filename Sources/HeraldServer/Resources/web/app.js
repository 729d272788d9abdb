// Herald's web client: sign-in, the conversation list, the chat, and the wiring of the stream into the engine.
// Everything from the network is shown with textContent, never as markup. The API, the stream and the engine are
// the JavaScript package's (clients/js), which the server serves at /herald/. The page's parts: state.js (what
// it knows), signin.js, session.js, list.js, people.js, chat.js, levels.js, away.js; this file wires them.

import { $, tokenKey, coalesceKey, page } from "./state.js";
import { askNotificationPermission, pushSwitchChanged, tellEngineAboutPermission, updateNotifyButton } from "./away.js";
import { cancelEdit, chat, closeChat, groupChange, loadOlder, messageAction, openChat, send, toggleGroupPanel } from "./chat.js";
import { claims, readFragment, showSignIn, signIn, signOut } from "./signin.js";
import { cleanText } from "/herald/presentation.js";
import { closeMentionList, mentionKey, toggleMute, updateMentionList, wireSettings } from "./levels.js";
import { closeNewChat, isGroup, newChat, openNewChat, picker, renderPicked, searchSoon } from "./people.js";
import { displayName } from "/herald/engine.js";
import { makeBanners } from "./session.js";

// Wiring

function wire() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    $("token-input").value = "";
    if (token) signIn(token);
  });
  $("sign-out").addEventListener("click", () => signOut());
  $("new-chat-button").addEventListener("click", () => {
    if ($("new-chat").hidden) openNewChat();
    else closeNewChat();
  });
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
  $("composer").addEventListener("submit", send);
  $("cancel-edit").addEventListener("click", cancelEdit);
  $("messages").addEventListener("click", messageAction);
  $("composer-text").addEventListener("input", updateMentionList);
  $("composer-text").addEventListener("blur", closeMentionList);
  $("composer-text").addEventListener("keydown", (event) => {
    if (!event.isComposing && mentionKey(event)) return;
    if (event.key === "Escape" && page.session?.editing) {
      cancelEdit();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  $("messages").addEventListener("scroll", () => {
    if ($("messages").scrollTop < 60) loadOlder();
  });
  $("back").addEventListener("click", closeChat);
  $("mute").addEventListener("click", toggleMute);
  wireSettings();
  $("members-button").addEventListener("click", toggleGroupPanel);
  $("add-members").addEventListener("click", () => openNewChat(page.session.open));
  $("leave").addEventListener("click", () => groupChange(() => page.session.api.removeMember(page.session.open, page.session.me.id)));
  $("rename").addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    groupChange(() => page.session.api.rename(page.session.open, $("rename-title").value.trim()));
  });
  $("notify-button").addEventListener("click", askNotificationPermission);
  $("push-switch").addEventListener("change", pushSwitchChanged);
  // Permission changed in the browser's settings: the engine follows (background messages, or nothing).
  navigator.permissions?.query({ name: "notifications" }).then((status) => {
    status.addEventListener("change", () => {
      updateNotifyButton();
      tellEngineAboutPermission();
    });
  }).catch(() => {});
  $("coalesce").addEventListener("change", () => {
    localStorage.setItem(coalesceKey, $("coalesce").checked ? "1" : "0");
    if (page.session) makeBanners();
  });
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
