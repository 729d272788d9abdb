// The open chat, a view: its header, its messages (grouped by sender, with days, each with its menu), opening and
// closing it, and the read marker. Above the views it draws in its pane (list.js for the avatar, levels.js, group.js)
// and state.js; sending and editing (composer.js) and what the stream brings (session.js) sit above it and call it.

import { $, announce, chat, historyPage, insertMessage, lineOf, memberCount, nameOf, page } from "./state.js";
import { chatAvatar, renderList } from "./list.js";
import { cleanText, safeImageURL } from "/herald/presentation.js";
import { closeDialog } from "./dialogs.js";
import { closeLevelMenu, renderLevelControl } from "./levels.js";
import { dayLabel, fullStamp, timeOfDay } from "./time.js";
import { displayName, messagePreview, namesUser, preview, senderName } from "/herald/engine.js";
import { deviceID } from "./push.js";
import { renderGroupPanel } from "./group.js";

/** Consecutive messages of one sender within this long are grouped under one name. */
const groupedFor = 5 * 60_000;

export function openChat(id, { fromBanner = false, compose = false } = {}) {
  if (!page.session || !page.session.conversations.has(id)) return;
  // Opened from a notification or a link: the chat comes to the front, over any sheet that was open.
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();
  page.session.open = id;
  page.session.client.focus(id);
  // A tapped banner's conversation is already open in the engine; any other way of opening tells it.
  if (!fromBanner) page.session.banners.send({ type: "open", conversation: id });
  showChat(id);
  // A notification's Reply: ready to type.
  if (compose) $("composer-text").focus();
  renderList();
  refreshChat(id).then(markRead);
}

export function closeChat() {
  page.session.open = null;
  page.session.client.focus(null);
  page.session.banners.send({ type: "open", conversation: null });
  showChat(null);
  renderList();
}

export function showChat(id) {
  announce("chat shown", id);
  document.body.classList.toggle("chat-open", id !== null);
  closeLevelMenu();
  $("no-chat").hidden = id !== null;
  $("chat-header").hidden = id === null;
  $("messages").hidden = id === null;
  $("composer").hidden = id === null;
  $("removed").hidden = true;
  closeDialog("group-panel");
  $("messages").replaceChildren();
  $("messages").setAttribute("aria-busy", "true");
  if (id === null) return;
  renderChatHeader();
  renderMessages(id, { toBottom: true });
}

export function renderChatHeader() {
  const conversation = page.session.conversations.get(page.session.open);
  $("chat-title").textContent = cleanText(nameOf(conversation));
  $("chat-avatar").replaceChildren(chatAvatar(conversation));
  $("chat-subtitle").textContent = conversation.kind === "group" ? memberCount(conversation) : "";
  $("chat-title").classList.toggle("opens", conversation.kind === "group" && !conversation.removed);
  renderLevelControl(conversation);
  // A group one is no longer in says so and takes no more messages.
  const removed = conversation.removed === true;
  $("removed").hidden = !removed;
  $("composer").hidden = removed;
  $("level-button").hidden = removed;
  if (removed) closeLevelMenu();
  $("members-button").hidden = conversation.kind !== "group" || removed;
  renderGroupPanel();
}

/** Reads the newest page and merges it in (first open, or after a reconnect). */
export async function refreshChat(id) {
  const current = page.session;
  try {
    const messages = await page.session.api.messages(id, { limit: historyPage });
    if (current !== page.session) return;
    const value = chat(id);
    if (value.messages.length === 0 && messages.length < historyPage) value.complete = true;
    for (const message of messages) insertMessage(id, message);
    if (page.session.open === id) {
      renderMessages(id, { toBottom: true });
      $("messages").setAttribute("aria-busy", "false");
    }
  } catch (error) {
    if (current === page.session && page.session.open === id) page.session.banners.general(`Could not load the chat: ${error.message}`, "danger");
  }
}

/** Older messages, when scrolled to the top. */
export async function loadOlder() {
  const id = page.session?.open;
  if (!id) return;
  const value = chat(id);
  const oldest = value.messages.find((message) => message.seq != null);
  if (value.loading || value.complete || !oldest) return;
  value.loading = true;
  try {
    const messages = await page.session.api.messages(id, { before: oldest.seq, limit: historyPage });
    if (messages.length < historyPage) value.complete = true;
    const list = $("messages");
    const fromBottom = list.scrollHeight - list.scrollTop;
    for (const message of messages) insertMessage(id, message);
    if (page.session.open === id) {
      renderMessages(id);
      list.scrollTop = list.scrollHeight - fromBottom;
    }
  } catch {
    // Tried again on the next scroll.
  } finally {
    value.loading = false;
  }
}

export function renderMessages(id, { toBottom = false } = {}) {
  const list = $("messages");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const conversation = page.session.conversations.get(id);
  const names = new Map((conversation?.people ?? []).map((person) => [person.id, person.name]));
  const messages = chat(id).messages;
  list.replaceChildren(...messages.map((message, index) => {
    const item = document.createElement("li");
    if (message.kind === "event") {
      // An event is a quiet line of its own, in the words of docs/behaviour.md.
      item.className = "event";
      item.dataset.id = message.id;
      item.textContent = cleanText(lineOf(conversation, message));
      return item;
    }
    const mine = message.senderId === page.session.me.id;
    item.className = `message${mine ? " mine" : ""}`;
    const continued = continues(messages, index);
    if (continued) item.classList.add("continued");
    if (message.deleted) {
      // A tombstone: its place in the history, without its words.
      item.classList.add("deleted");
      item.dataset.id = message.id;
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = messagePreview(message);
      item.append(text);
      return item;
    }
    // A message that names the user (or everyone) stands out.
    if (!mine && namesUser(message, page.session.me.id)) item.classList.add("mention");
    item.dataset.id = message.id;
    const send = page.session.pending.get(message.id);
    if (mine && message.seq == null) item.classList.add(send?.failed ? "failed" : "pending");
    const system = message.senderId === "";
    if (system) item.classList.add("system");
    if (!mine && !continued && (conversation?.kind === "group" || system)) {
      const sender = document.createElement("span");
      sender.className = "sender";
      sender.textContent = system
        ? senderName({ id: "" })
        : cleanText(displayName(names.get(message.senderId) ?? message.senderName ?? message.senderId));
      item.append(sender);
    }
    const picture = safeImageURL(message.imageURL);
    if (picture) {
      // Only http and https pictures load, without a referrer; one that fails says so in words.
      const link = document.createElement("a");
      link.className = "picture";
      link.href = picture;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      const image = document.createElement("img");
      image.alt = "Picture";
      image.loading = "lazy";
      image.referrerPolicy = "no-referrer";
      image.addEventListener("error", () => link.replaceChildren(preview(null, true)), { once: true });
      image.src = picture;
      link.append(image);
      item.append(link);
    }
    if (message.text) {
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = cleanText(message.text);
      item.append(text);
    } else if (message.imageURL && !picture) {
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = preview(null, true);
      item.append(text);
    }
    const meta = document.createElement("span");
    meta.className = "meta";
    if (message.edited) {
      const edited = document.createElement("span");
      edited.className = "edited";
      edited.textContent = "edited · ";
      meta.append(edited);
    }
    if (message.seq != null && !system && (mine || ownsGroup(conversation))) item.append(messageMenu(message, mine));
    if (message.seq == null) {
      meta.textContent = send?.failed ? "Not sent" : "Sending…";
    } else {
      const when = new Date(message.createdAt);
      const stamp = document.createElement("time");
      stamp.dateTime = when.toISOString();
      stamp.title = fullStamp(when);
      stamp.textContent = timeOfDay(when);
      meta.append(stamp);
    }
    item.append(meta);
    return item;
  }).flatMap((item, index) => withDay(chat(id).messages, index, item)));
  if (toBottom || nearBottom) list.scrollTop = list.scrollHeight;
}

/** Whether the message at `index` follows one of the same sender's, the same day and within a few minutes: it goes
 *  under that one's name, closer to it. */
export function continues(messages, index) {
  const message = messages[index], before = messages[index - 1];
  // The backend's notices stand apart, each with its name.
  if (!before || before.kind === "event" || before.senderId !== message.senderId || message.senderId === "") return false;
  const at = message.createdAt ? Date.parse(message.createdAt) : Date.now();
  const then = before.createdAt ? Date.parse(before.createdAt) : Date.now();
  return at - then < groupedFor && new Date(at).toDateString() === new Date(then).toDateString();
}

/** `item` (the message at `index`), after a day's heading when it is the first of its day. */
export function withDay(messages, index, item) {
  const message = messages[index];
  const at = message.createdAt ? new Date(message.createdAt) : new Date();
  const before = index > 0 ? messages[index - 1] : null;
  const previous = before ? (before.createdAt ? new Date(before.createdAt) : new Date()) : null;
  if (previous && previous.toDateString() === at.toDateString()) return [item];
  const day = document.createElement("li");
  day.className = "day";
  day.setAttribute("role", "separator");
  day.textContent = dayLabel(at);
  return [day, item];
}

/** Sends the read marker for the open chat, while the page is visible. */
export function markRead() {
  if (!page.session?.open || document.hidden) return;
  const conversation = page.session.conversations.get(page.session.open);
  const latest = conversation?.lastMessage?.seq ?? 0;
  if (!conversation || latest <= conversation.readUpTo) return;
  conversation.readUpTo = latest;
  conversation.unreadCount = 0;
  renderList();
  page.session.api.markRead(conversation.id, latest, deviceID()).catch(() => {});
}

/** A message's menu: Edit (one's own) and Delete (one's own, or anyone's in a group one owns). */
export function messageMenu(message, mine) {
  const menu = document.createElement("details");
  menu.className = "message-menu";
  const summary = document.createElement("summary");
  summary.setAttribute("aria-label", "Message actions");
  summary.textContent = "\u22EF";
  const actions = document.createElement("div");
  actions.setAttribute("role", "menu");
  for (const [action, label] of mine ? [["edit", "Edit"], ["delete", "Delete"]] : [["delete", "Delete"]]) {
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("role", "menuitem");
    button.dataset.action = action;
    button.dataset.message = message.id;
    button.textContent = label;
    actions.append(button);
  }
  menu.append(summary, actions);
  return menu;
}

/** Whether the user owns the group `conversation` (an owner may delete anyone's message there). */
function ownsGroup(conversation) {
  return conversation?.kind === "group" && (conversation.owners ?? []).includes(page.session.me.id);
}

/** The message `message` (as the server has it now) in place of its older copy, in the chat and the list. */
export function replaceMessage(conversationID, message) {
  const loaded = page.session.chats.get(conversationID);
  const index = loaded?.messages.findIndex((m) => m.id === message.id && m.kind !== "event") ?? -1;
  if (index >= 0) loaded.messages[index] = { ...loaded.messages[index], ...message, text: message.text ?? null };
  const conversation = page.session.conversations.get(conversationID);
  if (conversation?.lastMessage?.id === message.id && conversation.lastMessage.kind !== "event") {
    conversation.lastMessage = { ...conversation.lastMessage, ...message };
  }
  if (page.session.open === conversationID) renderMessages(conversationID);
  renderList();
}
