// The list of chats: newest activity first, filtered by the search box as one types, the open one marked.

import { $, page } from "./state.js";
import { avatar } from "./banners.js";
import { choiceOf, levelNow } from "./levels.js";
import { cleanText } from "/herald/presentation.js";
import { displayName, entryLine, eventEnds, groupTitle, initials, messagePreview } from "/herald/engine.js";
import { fullStamp, listStamp } from "./time.js";
import { openChat, renderChatHeader } from "./chat.js";


export async function loadConversations() {
  const all = [];
  let cursor = null;
  for (let round = 0; round < 20; round += 1) {
    const { conversations, next } = await page.session.api.conversations({ cursor });
    all.push(...conversations);
    if (!next) break;
    cursor = next;
  }
  const known = page.session.conversations;
  // The server lists newest activity first; a chat with no message yet keeps its place by the one above it.
  let activity = page.session.client.lastSeq ?? 0;
  for (const conversation of all) {
    activity = conversation.lastMessage?.seq ?? activity;
    conversation.activity = activity;
  }
  page.session.conversations = new Map(all.map((conversation) => [conversation.id, conversation]));
  // A group one was just removed from stays, saying so, until the page is loaded again.
  for (const [id, conversation] of known) {
    if (conversation.removed && !page.session.conversations.has(id)) page.session.conversations.set(id, conversation);
  }
  for (const conversation of all) {
    const before = known.get(conversation.id);
    if ((before?.level ?? null) !== conversation.level || (before?.levelUntil ?? null) !== conversation.levelUntil) {
      page.session.banners.send({ type: "level", conversation: conversation.id, choice: choiceOf(conversation) });
    }
  }
  renderList();
  if (page.session.open && page.session.conversations.has(page.session.open)) renderChatHeader();
}

/** A member of `conversation` as the engine takes a sender: id and name (the id when no name is known). */
export function personIn(conversation, id) {
  const person = conversation?.people?.find((p) => p.id === id);
  return { id, name: person?.name ?? id, avatarURL: person?.avatarURL ?? null };
}

/** An entry's line in the list and the chat: a message's text, or an event's words as this user reads them. */
export function lineOf(conversation, message) {
  if (message.kind !== "event") return messagePreview(message);
  return entryLine({ message, conversation, sender: personIn(conversation, message.senderId) }, page.session.me.id) ?? "";
}

/** What an event changes in the conversation as this page holds it. */
export function applyEvent(conversation, message) {
  const { event } = message;
  const ids = (event.members ?? []).map((member) => member.id);
  conversation.people ??= [];
  conversation.owners ??= [];
  const without = (list, gone) => list.filter((id) => !gone.includes(id));
  switch (event.type) {
    case "member_added":
      for (const member of event.members) {
        if (!conversation.members.includes(member.id)) conversation.members.push(member.id);
        if (!conversation.people.some((person) => person.id === member.id)) conversation.people.push({ ...member });
      }
      if (ids.includes(page.session.me.id)) conversation.removed = false;
      break;
    case "member_removed":
      conversation.members = without(conversation.members, ids);
      conversation.owners = without(conversation.owners, ids);
      break;
    case "member_left":
      conversation.members = without(conversation.members, [message.senderId]);
      conversation.owners = without(conversation.owners, [message.senderId]);
      break;
    case "renamed": conversation.title = event.title; break;
    case "owner_added": conversation.owners = [...new Set([...conversation.owners, ...ids])]; break;
    case "owner_removed": conversation.owners = without(conversation.owners, ids); break;
    case "deleted": conversation.members = []; break;
    default: break;
  }
  if (eventEnds(event, message.senderId, page.session.me.id)) conversation.removed = true;
}

/** What a conversation is called here: a group's title, or the other person's name. */
export function nameOf(conversation) {
  if (conversation.kind === "group") return groupTitle(conversation.title);
  const otherID = conversation.members.find((id) => id !== page.session.me.id) ?? page.session.me.id;
  const other = conversation.people?.find((person) => person.id === otherID);
  return displayName(other ? other.name : otherID);
}

/** A chat's picture: the other person's in a direct chat, else the chat's initials. */
export function chatAvatar(conversation) {
  const name = nameOf(conversation);
  const other = conversation.kind === "direct"
    ? conversation.people?.find((person) => person.id !== page.session.me.id) : null;
  return avatar({ name, id: other?.id ?? conversation.id, url: other?.avatarURL, initials: initials(name) });
}

/** How many are in a group, in words. */
export function memberCount(conversation) {
  const count = conversation.members.length;
  return `${count} ${count === 1 ? "member" : "members"}`;
}

export function activity(conversation) {
  return Math.max(conversation.lastMessage?.seq ?? 0, conversation.activity ?? 0);
}

/** Text as the search compares it: lower case, without accents, so "zoe" finds "Zoë". */
export function folded(text) {
  return text.normalize("NFD").replace(/\p{Mn}/gu, "").toLocaleLowerCase();
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
    button.addEventListener("click", () => openChat(conversation.id));
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
