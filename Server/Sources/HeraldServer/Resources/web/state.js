// The page's model, at the bottom of its modules: what the page knows (the signed-in session, a chat to open, the
// keys it keeps), the pure reads of it (a chat's name, an entry's line, the level in force) and its updates (a
// message in its place, an event applied, a level or the settings changed). It draws nothing and imports no other
// part of the page (time.js only, for words of time): every part imports it. What changed is announced here
// (`announce`), and the parts above that show it listen (`listen`), wired by app.js.

import { defaultSettings, displayName, entryLine, eventEnds, groupTitle, isAmendment, levelAt, messagePreview } from "/herald/engine.js";
import { dayLabel, timeOfDay } from "./time.js";

export const $ = (id) => document.getElementById(id);
export const tokenKey = "herald.token";
export const coalesceKey = "herald.coalesce";
export const historyPage = 50;

/** What the page knows: `session`, everything the signed-in page knows (null when signed out); `chatToOpen`, a chat
 *  to open once the list is loaded (a notification's click names one: `/#chat=<id>`). */
export const page = { session: null, chatToOpen: null, composeOnOpen: false };

// ---------------------------------------------------------------------------------------------------------------
// Announcements: a part says what happened, the parts that show it (above it) listen. The names:
// "levels" (a chat's level or the settings changed: what shows levels is drawn again), "settings" (the settings
// changed: the sheet), "chat shown" (the pane shows another chat, or none: its id), "refused" (the server refused
// the token: the words to sign out with), "web push" (this browser's pushes were found or turned on or off: whether
// they are on).

const listeners = new Map();

/** Calls `handler` with what each later announcement of `name` says. */
export function listen(name, handler) {
  listeners.set(name, [...(listeners.get(name) ?? []), handler]);
}

/** Tells everyone listening to `name`, in the order they listened, at once. */
export function announce(name, ...details) {
  for (const handler of listeners.get(name) ?? []) handler(...details);
}

// ---------------------------------------------------------------------------------------------------------------
// Conversations

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

// ---------------------------------------------------------------------------------------------------------------
// A chat's messages, as loaded

export function chat(id) {
  let value = page.session.chats.get(id);
  if (!value) {
    value = { messages: [], complete: false, loading: false };
    page.session.chats.set(id, value);
  }
  return value;
}

/** Adds a message to a loaded chat in `seq` order (unsent ones last), replacing its pending copy. */
export function insertMessage(id, message) {
  // An edit or a deletion has no line: the history's messages are as they are now, and one arriving live changes its
  // message (`amendmentArrived`, session.js).
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

// ---------------------------------------------------------------------------------------------------------------
// Levels: who hears what of a chat, and the settings

/** A chat's own level as the engine takes it: {level, until} or null (the default). */
export function choiceOf(conversation) {
  return conversation.level ? { level: conversation.level, until: conversation.levelUntil ?? null } : null;
}

/** The level in force now: the chat's own while it holds, else the default. */
export function levelNow(conversation) {
  return levelAt(choiceOf(conversation), page.session.settings, Date.now());
}

/** An instant as the menu and the settings say it: the time today, else the day and time. */
export function untilText(iso) {
  const when = new Date(iso);
  const today = new Date().toDateString() === when.toDateString();
  return today ? timeOfDay(when) : `${dayLabel(when)} ${timeOfDay(when)}`;
}

/** When a choice made now for `span` ("always", "1h", "8h", "tomorrow") ends, as ISO; null for ever. */
export function endOf(span) {
  if (span === "1h" || span === "8h") return new Date(Date.now() + parseInt(span, 10) * 3600_000).toISOString();
  if (span === "tomorrow") {
    const when = new Date();
    when.setDate(when.getDate() + 1);
    when.setHours(8, 0, 0, 0);
    return when.toISOString();
  }
  return null;
}

/** A chat's level changed (here, or on another device: the stream's `level` frame). */
export function levelChanged(id, level, until) {
  const conversation = page.session.conversations.get(id);
  if (conversation) {
    conversation.level = level ?? null;
    conversation.levelUntil = level ? until ?? null : null;
  }
  page.session.banners.send({ type: "level", conversation: id, choice: level ? { level, until: until ?? null } : null });
  levelsChanged();
}

/** The settings changed (here, or on another device: the `notifications` frame). */
export function settingsChanged(settings) {
  page.session.settings = { ...defaultSettings(), ...settings };
  page.session.banners.send({ type: "settings", settings: page.session.settings });
  announce("settings");
  levelsChanged();
}

/** Says levels changed (what shows them is drawn again), and says it again when the next `until` (or snooze) ends. */
export function levelsChanged() {
  announce("levels");
  clearTimeout(page.session.levelTimer);
  const ends = [...page.session.conversations.values()].map((c) => c.levelUntil).concat(page.session.settings.snoozeUntil)
    .filter(Boolean).map((iso) => Date.parse(iso)).filter((at) => at > Date.now());
  if (ends.length === 0) return;
  const current = page.session;
  page.session.levelTimer = setTimeout(() => current === page.session && levelsChanged(), Math.min(...ends) - Date.now() + 50);
}
