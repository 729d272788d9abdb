// What the chat list and a chat show, from the API's answers and the stream's events. Plain JavaScript.

import { displayName, entryLine, groupTitle, senderName } from "@herald-chat/client";

/** A chat's name: a group's title, or the other person's name in a direct chat (never a raw id). */
export function chatTitle(conversation, me) {
  if (conversation.kind === "group") return groupTitle(conversation.title);
  const other = conversation.people?.find((person) => person.id !== me);
  return displayName(other?.name ?? "");
}

/** A person of a conversation, by id: `{id, name}` (the name "Someone" when they never signed in). */
export function personIn(conversation, id) {
  const person = conversation.people?.find((candidate) => candidate.id === id);
  return { id, name: person?.name ?? "", avatarURL: person?.avatarURL ?? null };
}

/** One line for an entry of a chat: "You: …", "Bob: …" in a group, the text alone in a direct chat, an event's line. */
export function lineOf(conversation, message, me) {
  const sender = personIn(conversation, message.senderId);
  const line = entryLine({ message, conversation, sender }, me) ?? "";
  if (message.event) return line;
  if (message.senderId === me) return `You: ${line}`;
  return conversation.kind === "group" ? `${senderName(sender)}: ${line}` : line;
}

/**
 * The chat list, newest activity first, kept current by the stream: `load()` reads it from the server, `apply()` takes
 * each `message` event (a new last line; one more unread unless it is the user's own or the chat is on screen).
 */
export class ChatList {
  constructor({ api, me }) {
    this.api = api;
    this.me = me;
    this.chats = [];
  }

  async load() {
    const chats = [];
    let cursor = null;
    do {
      const page = await this.api.conversations({ cursor });
      chats.push(...page.conversations);
      cursor = page.next ?? null;
    } while (cursor);
    this.chats = chats;
    return this.chats;
  }

  /** A `message` event of the client; returns whether the list changed (false: a chat not loaded yet; reload). */
  apply({ message, conversation }, openChat = null) {
    const index = this.chats.findIndex((chat) => chat.id === conversation.id);
    if (index < 0) return false;
    const chat = { ...this.chats[index], ...conversation, lastMessage: message };
    if (message.senderId !== this.me && !message.event && conversation.id !== openChat) chat.unreadCount = (chat.unreadCount ?? 0) + 1;
    this.chats = [chat, ...this.chats.slice(0, index), ...this.chats.slice(index + 1)];
    return true;
  }

  /** The chat was read up to its last message here. */
  read(conversationId) {
    this.chats = this.chats.map((chat) => (chat.id === conversationId ? { ...chat, unreadCount: 0 } : chat));
  }
}

/** A chat's messages in `seq` order, each once: history, live messages and the user's own sends meet here. */
export function mergeMessages(current, incoming) {
  const byID = new Map(current.map((message) => [message.id, message]));
  for (const message of incoming) byID.set(message.id, message);
  return [...byID.values()].sort((a, b) => (a.seq ?? Number.MAX_SAFE_INTEGER) - (b.seq ?? Number.MAX_SAFE_INTEGER));
}
