// The open chat: its header, its group panel, its messages, sending.

import { $, historyPage, page } from "./state.js";
import { applyEvent, lineOf, loadConversations, nameOf, personIn, renderList } from "./list.js";
import { cleanText, safeImageURL } from "/herald/presentation.js";
import { closeLevelMenu, closeMentionList, levelNow, levelWords, untilText } from "./levels.js";
import { dayLabel, fullStamp, timeOfDay } from "./time.js";
import { deviceID } from "./push.js";
import {
  amended, displayName, entryLine, findMentions, isAmendment, messagePreview, namesUser, preview, senderName,
} from "/herald/engine.js";


export function openChat(id, { fromBanner = false, compose = false } = {}) {
  if (!page.session || !page.session.conversations.has(id)) return;
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
  if (page.session.editing && page.session.editing.conversation !== id) cancelEdit();
  document.body.classList.toggle("chat-open", id !== null);
  closeLevelMenu();
  closeMentionList();
  $("no-chat").hidden = id !== null;
  $("chat-header").hidden = id === null;
  $("messages").hidden = id === null;
  $("composer").hidden = id === null;
  $("removed").hidden = true;
  $("group-panel").hidden = true;
  $("members-button").setAttribute("aria-expanded", "false");
  $("messages").replaceChildren();
  $("messages").setAttribute("aria-busy", "true");
  if (id === null) return;
  renderChatHeader();
  renderMessages(id, { toBottom: true });
}

export function renderChatHeader() {
  const conversation = page.session.conversations.get(page.session.open);
  $("chat-title").textContent = cleanText(nameOf(conversation));
  const muted = conversation.level === "nothing" && !conversation.levelUntil;
  $("mute").textContent = muted ? "Unmute" : "Mute";
  $("mute").setAttribute("aria-pressed", String(muted));
  const level = levelNow(conversation);
  const until = conversation.level && conversation.levelUntil ? ` until ${untilText(conversation.levelUntil)}` : "";
  $("level-button").textContent = `Notify: ${levelWords[level]}${conversation.level ? until : ""}`;
  for (const item of $("level-menu").querySelectorAll("[data-level]")) {
    const chosen = item.dataset.level === "default" ? !conversation.level : item.dataset.level === conversation.level;
    item.setAttribute("aria-checked", String(chosen));
  }
  // A group one is no longer in says so and takes no more messages.
  const removed = conversation.removed === true;
  $("removed").hidden = !removed;
  $("composer").hidden = removed;
  $("mute").hidden = removed;
  $("level-button").hidden = removed;
  if (removed) closeLevelMenu();
  $("members-button").hidden = conversation.kind !== "group" || removed;
  if (removed || conversation.kind !== "group") $("group-panel").hidden = true;
  renderGroupPanel();
}

/** The group panel: members and owners; owners rename, add, remove and make owners; anyone leaves. */
export function renderGroupPanel() {
  const conversation = page.session.conversations.get(page.session.open);
  if (!conversation || $("group-panel").hidden) return;
  const owners = conversation.owners ?? [];
  const owner = owners.includes(page.session.me.id);
  document.body.classList.toggle("group-owner", owner);
  if (document.activeElement !== $("rename-title")) $("rename-title").value = conversation.title ?? "";
  const act = (label, run) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary";
    button.textContent = label;
    button.addEventListener("click", () => groupChange(run));
    return button;
  };
  $("members").replaceChildren(...[...conversation.members].sort().map((id) => {
    const item = document.createElement("li");
    item.dataset.user = id;
    const name = document.createElement("span");
    name.className = "member-name";
    name.textContent = cleanText(id === page.session.me.id ? "You" : displayName(personIn(conversation, id).name));
    item.append(name);
    if (owners.includes(id)) {
      const tag = document.createElement("span");
      tag.className = "owner-tag";
      tag.textContent = "owner";
      item.append(tag);
    }
    if (owner && id !== page.session.me.id) {
      if (!owners.includes(id)) item.append(act("Make owner", () => page.session.api.setOwner(conversation.id, id, true)));
      item.append(act("Remove", () => page.session.api.removeMember(conversation.id, id)));
    }
    return item;
  }));
}

/** Runs a change to the open group; what it changed comes back as an event on the stream. */
export async function groupChange(run) {
  $("group-error").textContent = "";
  try {
    await run();
  } catch (error) {
    $("group-error").textContent = `${error.message} (${error.code})`;
  }
}

export function toggleGroupPanel() {
  const panel = $("group-panel");
  panel.hidden = !panel.hidden;
  $("members-button").setAttribute("aria-expanded", String(!panel.hidden));
  $("group-error").textContent = "";
  renderGroupPanel();
}

export function chat(id) {
  let value = page.session.chats.get(id);
  if (!value) {
    value = { messages: [], complete: false, loading: false };
    page.session.chats.set(id, value);
  }
  return value;
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

/** Adds a message to a loaded chat in `seq` order (unsent ones last), replacing its pending copy. */
export function insertMessage(id, message) {
  // An edit or a deletion has no line: the history's messages are as they are now, and one arriving live changes its
  // message (`amendmentArrived`).
  if (message.kind === "event" && isAmendment(message.event)) return false;
  const { messages } = chat(id);
  const index = messages.findIndex((existing) => existing.id === message.id && existing.senderId === message.senderId);
  if (index >= 0) {
    if (messages[index].seq != null) return false;
    messages.splice(index, 1);
  }
  let at = messages.length;
  if (message.seq != null) {
    while (at > 0 && (messages[at - 1].seq == null || messages[at - 1].seq > message.seq)) at -= 1;
  }
  messages.splice(at, 0, message);
  return true;
}

export function renderMessages(id, { toBottom = false } = {}) {
  const list = $("messages");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const conversation = page.session.conversations.get(id);
  const names = new Map((conversation?.people ?? []).map((person) => [person.id, person.name]));
  list.replaceChildren(...chat(id).messages.map((message) => {
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
    if (!mine && (conversation?.kind === "group" || system)) {
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

export function messageArrived(frame) {
  const { message, conversation: about, sender } = frame;
  const event = message.kind === "event";
  if (event && isAmendment(message.event)) {
    amendmentArrived(frame);
    return;
  }
  // An entry this page cannot read (a newer server's) is left out.
  if (message.kind !== "message" && !(event && message.event && entryLine({ message, conversation: about, sender }) !== null)) return;
  let conversation = page.session.conversations.get(message.conversationId);
  if (!conversation) {
    // A chat someone else just started: shown at once from the frame, completed by the next read of the list.
    conversation = {
      id: about.id, kind: about.kind, title: about.title, members: [page.session.me.id, sender.id],
      people: [{ id: sender.id, name: sender.name, avatarURL: sender.avatarURL }],
      lastMessage: null, unreadCount: 0, readUpTo: 0, muted: false, level: null, levelUntil: null,
    };
    page.session.conversations.set(conversation.id, conversation);
    loadConversations().catch(() => {});
  }
  const isNew = !conversation.lastMessage || message.seq > conversation.lastMessage.seq;
  if (isNew) {
    conversation.lastMessage = message;
    // An event is never unread.
    if (!event && message.senderId !== page.session.me.id && message.seq > conversation.readUpTo) conversation.unreadCount += 1;
    if (event) {
      applyEvent(conversation, message);
      if (!conversation.people.some((person) => person.id === sender.id)) conversation.people.push({ ...sender });
      if (page.session.open === conversation.id) renderChatHeader();
    }
  }
  if (message.senderId === page.session.me.id) acknowledged(message.id, message.seq);
  if (page.session.chats.has(conversation.id)) {
    insertMessage(conversation.id, { ...message, senderName: sender.name });
    if (page.session.open === conversation.id) renderMessages(conversation.id);
  }
  renderList();
  if (page.session.open === conversation.id) markRead();
  // The first connection has no `after`, so it brings no history: every message is news. After a reconnect the
  // catch-up is news too; the engine skips any it has already seen.
  page.session.banners.send({
    type: "message",
    incoming: { message, conversation: about, sender: { id: sender.id, name: sender.name, avatarURL: sender.avatarURL } },
  });
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

/** Whether the user owns the group `conversation` (an owner may delete anyone's message there). */
function ownsGroup(conversation) {
  return conversation?.kind === "group" && (conversation.owners ?? []).includes(page.session.me.id);
}

/** A message's menu: Edit (one's own) and Delete (one's own, or anyone's in a group one owns). */
function messageMenu(message, mine) {
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

/** A click in a message's menu: edit it in the composer, or delete it (asked first). */
export function messageAction(event) {
  const button = event.target.closest?.(".message-menu button");
  if (!button || !page.session?.open) return;
  button.closest("details").open = false;
  if (button.dataset.action === "edit") startEdit(button.dataset.message);
  else deleteMessage(button.dataset.message);
}

/** Puts the user's message `id` of the open chat in the composer, to be sent as an edit. */
export function startEdit(id) {
  const conversation = page.session.open;
  const message = chat(conversation).messages.find((m) => m.id === id && m.senderId === page.session.me.id && m.kind !== "event");
  if (!message || message.deleted) return;
  page.session.editing = { conversation, id };
  $("editing").hidden = false;
  const box = $("composer-text");
  box.value = message.text ?? "";
  box.focus();
}

/** Leaves editing: the composer is for new messages again. */
export function cancelEdit() {
  if (!page.session?.editing) return;
  page.session.editing = null;
  $("editing").hidden = true;
  $("composer-text").value = "";
}

/** Sends the composer's text as the edit of the message being edited. */
async function saveEdit() {
  const current = page.session;
  const { conversation, id } = current.editing;
  const text = $("composer-text").value;
  if (text.trim() === "") return;
  const members = (current.conversations.get(conversation)?.people ?? []).filter((person) => person.id !== current.me.id);
  const { ids: mentions, all: mentionsAll } = findMentions(text, members);
  try {
    const message = await current.api.editMessage(conversation, id, { text, mentions, mentionsAll });
    if (current !== page.session) return;
    cancelEdit();
    replaceMessage(conversation, message);
  } catch (error) {
    if (current === page.session) current.banners.general(`Not edited: ${error.message}`, "danger");
  }
}

/** Deletes the message `id` of the open chat for everyone, once the user says so. */
async function deleteMessage(id) {
  const current = page.session;
  const conversation = current.open;
  if (!window.confirm("Delete this message for everyone?")) return;
  try {
    const tombstone = await current.api.deleteMessage(conversation, id);
    if (current !== page.session) return;
    if (current.editing?.id === id) cancelEdit();
    replaceMessage(conversation, tombstone);
  } catch (error) {
    if (current === page.session) current.banners.general(`Not deleted: ${error.message}`, "danger");
  }
}

/** The message `message` (as the server has it now) in place of its older copy, in the chat and the list. */
function replaceMessage(conversationID, message) {
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

/** An edit or a deletion from the stream: its message changes in place (no line of its own), the list follows,
 *  and the engine takes the banner or notification of it along. */
function amendmentArrived(frame) {
  const { message: amendment, conversation: about, sender } = frame;
  const current = page.session;
  const conversation = current.conversations.get(amendment.conversationId);
  const loaded = current.chats.get(amendment.conversationId);
  const target = amendment.event.messageId;
  const index = loaded?.messages.findIndex((m) => m.id === target && m.kind !== "event") ?? -1;
  if (index >= 0) loaded.messages[index] = amended(loaded.messages[index], amendment);
  if (conversation?.lastMessage?.id === target && conversation.lastMessage.kind !== "event") {
    conversation.lastMessage = amended(conversation.lastMessage, amendment);
  }
  if (conversation && amendment.event.type === "message_deleted") {
    // A deleted message is no longer unread: the server's count says how many are.
    current.api.conversation(conversation.id).then((summary) => {
      if (current !== page.session) return;
      conversation.unreadCount = summary.unreadCount;
      renderList();
    }).catch(() => {});
  }
  if (current.editing?.id === target && amendment.event.type === "message_deleted") cancelEdit();
  if (current.open === amendment.conversationId) renderMessages(amendment.conversationId);
  renderList();
  current.banners.send({
    type: "message",
    incoming: { message: amendment, conversation: about, sender: { id: sender.id, name: sender.name, avatarURL: sender.avatarURL } },
  });
}

export function send(event) {
  event?.preventDefault();
  if (page.session?.editing && page.session.editing.conversation === page.session.open) {
    saveEdit();
    return;
  }
  const box = $("composer-text");
  const text = box.value;
  if (!page.session?.open || text.trim() === "" || page.session.conversations.get(page.session.open)?.removed) return;
  const id = crypto.randomUUID();
  const conversation = page.session.open;
  // Mentions: the members named with `@` in the text (completion writes their names), and `@all`.
  const members = (page.session.conversations.get(conversation).people ?? []).filter((person) => person.id !== page.session.me.id);
  const { ids: mentions, all: mentionsAll } = findMentions(text, members);
  const pending = { conversation, text, mentions, mentionsAll, failed: false };
  page.session.pending.set(id, pending);
  insertMessage(conversation, { id, conversationId: conversation, senderId: page.session.me.id, text, imageURL: null, seq: null });
  box.value = "";
  closeMentionList();
  renderMessages(conversation, { toBottom: true });
  // The client sends it now if live, else when the stream is live again, under the same id, until stored.
  const current = page.session;
  page.session.client.send(conversation, text, { id, mentions, mentionsAll }).then(
    ({ seq }) => current === page.session && acknowledged(id, seq),
    (error) => current === page.session && refused(id, error),
  );
}

export function acknowledged(id, seq) {
  const send = page.session.pending.get(id);
  if (!send) return;
  page.session.pending.delete(id);
  const value = page.session.chats.get(send.conversation);
  const message = value?.messages.find((m) => m.id === id && m.senderId === page.session.me.id);
  if (message && message.seq == null) {
    message.seq = seq;
    message.createdAt = message.createdAt ?? new Date().toISOString();
    if (page.session.open === send.conversation) renderMessages(send.conversation);
  }
}

/** A send refused for good (the client waits out `rate_limited` itself): it stays in the chat, marked unsent. */
export function refused(id, error) {
  const send = page.session.pending.get(id);
  if (!send) return;
  send.failed = true;
  page.session.banners.general(`Message not sent: ${error.message}`, "danger");
  if (page.session.open === send.conversation) renderMessages(send.conversation);
}
