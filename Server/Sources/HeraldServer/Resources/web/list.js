// The list of chats, a view: newest activity first, filtered by the search box as one types, the open one marked.
// Above state.js (what it shows) and banners.js (the avatars); what a click on a chat does is app.js's to say.

import { $, activity, folded, levelNow, lineOf, nameOf, page } from "./state.js";
import { avatar } from "./banners.js";
import { cleanText } from "/herald/presentation.js";
import { displayName, initials } from "/herald/engine.js";
import { fullStamp, listStamp } from "./time.js";

/** A click on a chat in the list calls `openChat` with its id. */
export function wireList(openChat) {
  $("conversations").addEventListener("click", (event) => {
    const item = event.target.closest?.("[data-conversation]");
    if (item) openChat(item.dataset.conversation);
  });
}

/** A chat's picture: the other person's in a direct chat, else the chat's initials. */
export function chatAvatar(conversation) {
  const name = nameOf(conversation);
  const other = conversation.kind === "direct"
    ? conversation.people?.find((person) => person.id !== page.session.me.id) : null;
  return avatar({ name, id: other?.id ?? conversation.id, url: other?.avatarURL, initials: initials(name) });
}

/** Whether `conversation` is one the search `query` (folded) finds: by its name, or its members' names. */
function found(conversation, query) {
  if (!query) return true;
  const names = [nameOf(conversation), ...(conversation.people ?? []).map((person) => person.name ?? person.id)];
  return names.some((name) => folded(displayName(name)).includes(query));
}

export function renderList() {
  const list = $("conversations");
  const conversations = [...page.session.conversations.values()].sort((a, b) => activity(b) - activity(a) || (a.id < b.id ? -1 : 1));
  const query = folded($("chat-search").value.trim());
  const shown = conversations.filter((conversation) => found(conversation, query));
  // An empty list says what to do: start a chat, or search for something else.
  $("list-empty").hidden = shown.length > 0 || !page.session.loaded;
  $("list-empty-text").textContent = conversations.length === 0
    ? "No chats yet. Start one with someone, and it shows here."
    : `No chat matches “${cleanText($("chat-search").value.trim())}”.`;
  $("list-empty-start").hidden = conversations.length > 0;
  list.replaceChildren(...shown.map((conversation) => {
    const item = document.createElement("li");
    item.dataset.conversation = conversation.id;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "conversation";
    if (conversation.id === page.session.open) button.setAttribute("aria-current", "true");
    const name = nameOf(conversation);
    const text = document.createElement("span");
    text.className = "conversation-text";
    const head = document.createElement("span");
    head.className = "conversation-head";
    const title = document.createElement("span");
    title.className = "conversation-name";
    title.textContent = cleanText(name);
    head.append(title);
    const last = conversation.lastMessage;
    if (last?.createdAt) {
      const when = new Date(last.createdAt);
      const stamp = document.createElement("time");
      stamp.className = "conversation-time";
      stamp.dateTime = when.toISOString();
      stamp.title = fullStamp(when);
      stamp.textContent = listStamp(when);
      head.append(stamp);
    }
    const lineRow = document.createElement("span");
    lineRow.className = "conversation-line";
    const line = document.createElement("span");
    line.className = "conversation-preview";
    line.textContent = last
      ? cleanText((last.senderId === page.session.me.id && last.kind !== "event" ? "You: " : "") + lineOf(conversation, last))
      : "No messages yet";
    lineRow.append(line);
    const level = levelNow(conversation);
    if (level === "nothing") lineRow.append(mutedMark());
    if (level === "mentions") lineRow.append(mentionsMark());
    if (conversation.unreadCount > 0) {
      const unread = document.createElement("span");
      // A muted chat's count is there, quietly: grey, and left out of the tab's total (unless the settings say).
      unread.className = level === "nothing" ? "unread quiet" : "unread";
      unread.textContent = conversation.unreadCount >= 1000 ? "999+" : String(conversation.unreadCount);
      unread.setAttribute("aria-label", `${conversation.unreadCount} unread${level === "nothing" ? ", muted" : ""}`);
      lineRow.append(unread);
    }
    text.append(head, lineRow);
    button.append(chatAvatar(conversation), text);
    item.append(button);
    return item;
  }));
  const counted = (c) => page.session.settings.badgeCountsMuted || levelNow(c) !== "nothing";
  const total = conversations.reduce((sum, c) => sum + (counted(c) ? c.unreadCount : 0), 0);
  document.title = total > 0 ? `(${total}) Herald` : "Herald";
}

/** The mentions-only mark of a chat in the list. */
export function mentionsMark() {
  const mark = document.createElement("span");
  mark.className = "level-mark";
  mark.textContent = "@";
  mark.setAttribute("role", "img");
  mark.setAttribute("aria-label", "Mentions only");
  mark.title = "Mentions only";
  return mark;
}

export const svgNS = "http://www.w3.org/2000/svg";

/** The muted mark of a chat in the list: a bell with a line through it. */
export function mutedMark() {
  const mark = document.createElementNS(svgNS, "svg");
  mark.setAttribute("class", "muted-mark");
  mark.setAttribute("viewBox", "0 0 24 24");
  mark.setAttribute("role", "img");
  mark.setAttribute("aria-label", "Muted");
  const path = document.createElementNS(svgNS, "path");
  path.setAttribute("d", "M12 22a2 2 0 0 0 2-2h-4a2 2 0 0 0 2 2zm6-6v-5c0-3.1-1.6-5.6-4.5-6.3V4a1.5 1.5 0 0 0-3 "
    + "0v.7c-.6.1-1.1.4-1.6.7L18 16.5zM3.3 2.3 2 3.6l3.3 3.3A7 7 0 0 0 6 11v5l-2 2v1h14.2l2.2 2.2 1.3-1.3z");
  mark.append(path);
  return mark;
}
