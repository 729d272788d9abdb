// A new chat: people are picked from those the server lets one find (GET /v1/users), never typed as ids; the same
// picker adds people to a group. A sheet above chat.js (it opens the new chat) and list.js.

import { $, page } from "./state.js";
import { renderList } from "./list.js";
import { avatar } from "./banners.js";
import { openChat } from "./chat.js";
import { cleanText } from "/herald/presentation.js";
import { displayName, initials } from "/herald/engine.js";
import { closeDialog, openDialog } from "./dialogs.js";


/** What the new-chat form holds: the people picked, and the search under way. */
export const picker = { picked: new Map(), search: 0, timer: null, addingTo: null };

/** The people picker, for a new chat, or (`addingTo`, a group's id) for people to add to a group. */
export function openNewChat(addingTo = null) {
  const form = $("new-chat");
  form.reset();
  picker.picked.clear();
  picker.addingTo = addingTo;
  $("new-chat-error").textContent = "";
  document.body.classList.toggle("adding", addingTo !== null);
  if (addingTo !== null) form.elements.kind.value = "group";
  $("new-chat-start").textContent = addingTo !== null ? "Add" : "Start";
  $("new-chat-heading").textContent = addingTo !== null ? "Add people" : "New chat";
  document.body.classList.remove("new-group");
  openDialog("new-chat-dialog", { focus: "#people-search", onClose: forget });
  renderPicked();
  searchPeople();
}

export function closeNewChat() {
  closeDialog("new-chat-dialog");
}

/** The picker closed (however it closed): its search stops. */
function forget() {
  picker.addingTo = null;
  document.body.classList.remove("adding");
  clearTimeout(picker.timer);
  picker.search += 1;
}

export function isGroup() {
  return $("new-chat").elements.kind.value === "group";
}

/** Searches as the person types (a quarter second after the last key), the latest search winning. */
export function searchSoon() {
  clearTimeout(picker.timer);
  picker.timer = setTimeout(searchPeople, 250);
}

export async function searchPeople() {
  if (!page.session || !$("new-chat-dialog").open) return;
  const search = ++picker.search;
  const query = $("people-search").value.trim();
  let found;
  try {
    found = (await page.session.api.users(query)).users;
  } catch (error) {
    if (search === picker.search) $("people-note").textContent = `Could not search: ${error.message}`;
    return;
  }
  if (search !== picker.search) return;
  const members = picker.addingTo !== null ? page.session.conversations.get(picker.addingTo)?.members ?? [] : [];
  const choices = found.filter((person) => !picker.picked.has(person.id) && !members.includes(person.id));
  $("people-note").textContent = choices.length > 0 ? ""
    : found.length > 0 ? "Everyone found is picked."
      : query ? "No one found by that name among the people you can find."
        : "No one to add yet: people appear here once you share a chat with them.";
  $("people-results").replaceChildren(...choices.map((person) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "person";
    button.dataset.user = person.id;
    const name = displayName(person.name);
    const label = document.createElement("span");
    label.className = "person-text";
    const strong = document.createElement("strong");
    strong.textContent = cleanText(name);
    const id = document.createElement("span");
    id.className = "person-id";
    id.textContent = cleanText(person.id);
    label.append(strong, id);
    button.append(avatar({ name, id: person.id, url: person.avatarURL, initials: initials(name) }), label);
    button.addEventListener("click", () => pick(person));
    item.append(button);
    return item;
  }));
}

/** Picks a person: a direct chat is with one (the newest pick), a group with any number. */
export function pick(person) {
  if (!isGroup()) picker.picked.clear();
  picker.picked.set(person.id, person);
  $("people-search").value = "";
  renderPicked();
  searchPeople();
  $("people-search").focus();
}

export function renderPicked() {
  $("picked").replaceChildren(...[...picker.picked.values()].map((person) => {
    const item = document.createElement("li");
    item.className = "chip";
    item.dataset.user = person.id;
    const name = document.createElement("span");
    name.textContent = cleanText(displayName(person.name));
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "chip-remove";
    remove.textContent = "×";
    remove.setAttribute("aria-label", `Remove ${cleanText(displayName(person.name))}`);
    remove.addEventListener("click", () => {
      picker.picked.delete(person.id);
      renderPicked();
      searchPeople();
    });
    item.append(name, remove);
    return item;
  }));
  $("new-chat-start").disabled = picker.picked.size === 0;
}

export async function newChat(event) {
  event.preventDefault();
  const form = $("new-chat");
  const kind = isGroup() ? "group" : "direct";
  const members = [...picker.picked.keys()];
  $("new-chat-error").textContent = "";
  if (members.length === 0) return;
  if (picker.addingTo !== null) {
    try {
      await page.session.api.addMembers(picker.addingTo, members, $("new-history").checked ? "full" : "none");
      closeNewChat();
    } catch (error) {
      $("new-chat-error").textContent = `${error.message} (${error.code})`;
    }
    return;
  }
  try {
    const conversation = await page.session.api.createConversation({ kind, members, title: $("new-chat-title").value.trim() });
    closeNewChat();
    if (!page.session.conversations.has(conversation.id)) {
      page.session.conversations.set(conversation.id, { ...conversation, lastMessage: null, unreadCount: 0, readUpTo: 0, muted: false, activity: Number.MAX_SAFE_INTEGER });
    }
    renderList();
    openChat(conversation.id);
  } catch (error) {
    $("new-chat-error").textContent = `${error.message} (${error.code})`;
  }
}
