// What a notification says (docs/behaviour.md §2; HeraldCore's ContentFormatter): previews, names, titles, event
// lines, banners, system notifications and their identifiers, announcements.

import { SECOND } from "./config.js";

// Wording (docs/behaviour.md §2; HeraldCore's ContentFormatter)

const segmenter = typeof Intl.Segmenter === "function" ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;
const whiteSpace = /^\p{White_Space}/u;
/** What stays on the character before it: marks, joiners, variation selectors, skin tones, emoji tags. */
const extending = /^[\p{M}\u200D\uFE00-\uFE0F\u{1F3FB}-\u{1F3FF}\u{E0020}-\u{E007F}]$/u;
const regionalIndicator = /^[\u{1F1E6}-\u{1F1FF}]$/u;
/** The viramas that join two consonants of Devanagari, Bengali, Gujarati, Oriya, Telugu and Malayalam into one. */
const linker = /^[\u094D\u09CD\u0ACD\u0B4D\u0C4D\u0D4D]$/u;
/** What a joiner or a virama joins on: a letter or an emoji. */
const joinable = /^[\p{L}\p{Extended_Pictographic}]$/u;

/**
 * `text`'s grapheme clusters: `Intl.Segmenter`'s where the runtime has it (browsers, Node); where it has not
 * (React Native's Hermes), code points with what extends them kept on (marks, zero-width joiner sequences,
 * conjuncts after a virama, variation selectors, skin tones, flags as pairs, CR LF), which gives the same clusters
 * for chat text.
 */
export function* graphemeClusters(text) {
  if (segmenter) {
    for (const { segment } of segmenter.segment(text)) yield segment;
    return;
  }
  let cluster = "";
  let joined = false; // the last character was a joiner or a virama: the next letter belongs to this cluster
  let flagHalf = false; // the cluster is one regional indicator, waiting for its pair
  for (const character of text) {
    const extendsCluster = (joined && joinable.test(character)) || extending.test(character) ||
      (flagHalf && regionalIndicator.test(character)) || (cluster === "\r" && character === "\n");
    if (cluster !== "" && extendsCluster) {
      cluster += character;
      flagHalf = false;
    } else {
      if (cluster !== "") yield cluster;
      cluster = character;
      flagHalf = regionalIndicator.test(character);
    }
    joined = character === "\u200D" || linker.test(character);
  }
  if (cluster !== "") yield cluster;
}

/** Whether a grapheme cluster is white space: ASCII space and \t–\r, else its first scalar's White_Space. */
function isFoldableSpace(cluster) {
  if (cluster.length === 1) {
    const code = cluster.charCodeAt(0);
    if (code < 0x80) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  }
  if (cluster === "\r\n") return true;
  return whiteSpace.test(cluster);
}

/** `text` with white space runs folded to one space, the ends trimmed, cut to `limit` grapheme clusters. */
export function foldWhitespace(text, limit = Infinity) {
  let folded = "";
  let count = 0;
  let spaceBefore = false;
  for (const segment of graphemeClusters(text)) {
    if (isFoldableSpace(segment)) {
      spaceBefore = count > 0;
      continue;
    }
    if (count + (spaceBefore ? 1 : 0) >= limit) return { text: folded, cut: true };
    if (spaceBefore) {
      folded += " ";
      count += 1;
      spaceBefore = false;
    }
    folded += segment;
    count += 1;
  }
  return { text: folded, cut: false };
}

/** The first grapheme cluster of `text` ("" when empty). */
function firstCluster(text) {
  for (const segment of graphemeClusters(text)) return segment;
  return "";
}

/** The product's wording rules. */
export const standardFormatter = Object.freeze({
  previewLimit: 50,
  imagePlaceholder: "📷 Image",
  emptyPlaceholder: "New message",
  deletedPlaceholder: "This message was deleted",
  unknownSenderName: "Someone",
  systemSenderName: "Admin",
  untitledGroupName: "Group chat",
});

/** The one-line preview of a message's text (null for none). */
export function preview(text, hasImage, formatter = standardFormatter) {
  const { text: folded, cut } = foldWhitespace(text ?? "", formatter.previewLimit);
  if (folded === "") return hasImage ? formatter.imagePlaceholder : formatter.emptyPlaceholder;
  return cut ? folded + "..." : folded;
}

/** The preview of a message: its tombstone's words once deleted (HeraldCore's `ContentFormatter.preview(of:)`). */
export function messagePreview(message, formatter = standardFormatter) {
  if (message.deleted) return formatter.deletedPlaceholder ?? standardFormatter.deletedPlaceholder;
  return preview(message.text, message.imageURL != null, formatter);
}

/** Whether an event changes an earlier message (an edit or a deletion) rather than the conversation. */
export function isAmendment(event) {
  return Boolean(event) && (event.type === "message_edited" || event.type === "message_deleted")
    && typeof event.messageId === "string";
}

/** `message` as `amendment` (an entry whose event edits or deletes it) leaves it: the new text and mentions, or a
 *  tombstone; unchanged when it is about another message (HeraldCore's `Message.amended(by:)`). */
export function amended(message, amendment) {
  const event = amendment?.event;
  if (!isAmendment(event) || message.event || event.messageId !== message.id) return message;
  if (event.type === "message_deleted") {
    const { mentions, mentionsAll, ...rest } = message;
    return { ...rest, text: null, imageURL: null, deleted: true };
  }
  if (message.deleted) return message;
  const next = { ...message, text: amendment.text ?? null, edited: true };
  if (amendment.mentions?.length) next.mentions = amendment.mentions; else delete next.mentions;
  if (amendment.mentionsAll) next.mentionsAll = true; else delete next.mentionsAll;
  return next;
}

/** The name to show for a sender: "Admin" for the app's backend (the empty id), else their display name. */
export function senderName(person, formatter = standardFormatter) {
  return person.id === "" ? formatter.systemSenderName : displayName(person.name, formatter);
}

/** Whether `name` reads as the system sender's name: the same letters and digits in NFKC and lower case. */
export function readsAsSystemName(name, formatter = standardFormatter) {
  const letters = (text) => text.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]/gu, "");
  const system = letters(formatter.systemSenderName);
  return system !== "" && letters(name) === system;
}

/** The name to show for a person: their display name folded, or "Someone" when blank; a name that reads as the
 * system sender's ("ADMIN", "Ａｄｍｉｎ", "Ad-min") gets " (member)" after it, so no one passes for the app's backend
 * (HeraldCore's `ContentFormatter.name(of:)`). */
export function displayName(name, formatter = standardFormatter) {
  const folded = foldWhitespace(name ?? "").text;
  if (folded === "") return formatter.unknownSenderName;
  return readsAsSystemName(folded, formatter) ? `${folded} (member)` : folded;
}

/** The title to show for a group: its title folded, or "Group chat" when it has none. */
export function groupTitle(title, formatter = standardFormatter) {
  const folded = foldWhitespace(title ?? "").text;
  return folded === "" ? formatter.untitledGroupName : folded;
}

/** Initials for an avatar placeholder: the first letters of the first and last words, upper-cased; "?" if blank. */
export function initials(name) {
  return initialsOfFolded(foldWhitespace(name ?? "").text);
}

function initialsOfFolded(name) {
  if (name === "") return "?";
  const first = firstCluster(name).toUpperCase();
  const space = name.lastIndexOf(" ");
  if (space < 0) return first;
  return first + firstCluster(name.slice(space + 1)).toUpperCase();
}

/**
 * An incoming message as the stream delivers it:
 * `{message: {id, conversationId, senderId, text, imageURL, event?}, conversation: {id, kind, title}, sender: {id, name, avatarURL}}`;
 * an event (`kind` "event" on the wire) carries `event: {type, members: [{id, name}], title}`.
 */

/** Whether `id` is `viewer`'s (ids are compared as they are: byte for byte, no folding). */
const same = (id, viewer) => viewer !== null && viewer !== undefined && id === viewer;

/**
 * The line an event (`{type, members: [{id, name}], title}`) is in a chat, as `viewer` reads it (HeraldCore's
 * `ContentFormatter.line(for:by:in:viewer:)`): "Alice added Carol", "Alice added you to Team Chat", "Bob left".
 */
export function eventLine(event, sender, conversation, viewer = null, formatter = standardFormatter) {
  const predicate = eventPredicate(event, sender, conversation, viewer, formatter);
  if (predicate === null) return null;
  return `${same(sender.id, viewer) ? "You" : senderName(sender, formatter)} ${predicate}`;
}

/** What an event's line says after its subject ("added Carol", "left"); null for a type not known. */
function eventPredicate(event, sender, conversation, viewer, formatter) {
  const named = (person) => (same(person.id, viewer) ? "you" : senderName(person, formatter));
  const list = (people) => {
    const names = people.slice(0, 3).map(named);
    if (people.length > 3) return `${names.join(", ")} and ${people.length - 3} others`;
    if (names.length <= 1) return names[0] ?? formatter.unknownSenderName;
    return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  };
  const members = event.members ?? [];
  switch (event.type) {
    case "member_added":
      if (members.some((member) => same(member.id, viewer)) && !same(sender.id, viewer)) {
        return `added you to ${groupTitle(conversation.title, formatter)}`;
      }
      return `added ${list(members)}`;
    case "member_removed": return `removed ${list(members)}`;
    case "member_left": return "left";
    case "renamed": {
      const title = foldWhitespace(event.title ?? "").text;
      return title === "" ? "removed the group's name" : `renamed the group to \u201C${title}\u201D`;
    }
    case "owner_added": return `made ${list(members)} ${members.length === 1 ? "an owner" : "owners"}`;
    case "owner_removed": return `removed ${list(members)} as ${members.length === 1 ? "owner" : "owners"}`;
    case "deleted": return "deleted the group";
    case "message_edited": return "edited a message";
    case "message_deleted": return "deleted a message";
    default: return null;
  }
}

/** What an entry says in one line: a message's preview, or an event's line (null for an event type not known). */
export function entryLine(incoming, viewer = null, formatter = standardFormatter) {
  const { message, conversation, sender } = incoming;
  if (!message.event) return messagePreview(message, formatter);
  return eventLine(message.event, sender, conversation, viewer, formatter);
}

/** Whether, after this event by `senderId`, `userID` is no longer in the conversation (removed, left, deleted). */
export function eventEnds(event, senderId, userID) {
  switch (event.type) {
    case "member_removed": return (event.members ?? []).some((member) => member.id === userID);
    case "member_left": return senderId === userID;
    case "deleted": return true;
    default: return false;
  }
}

/** The in-app banner for an incoming message (an event: who did it as the title, what they did as the body). */
export function bannerFor(incoming, formatter = standardFormatter, viewer = null) {
  const { message, conversation, sender } = incoming;
  if (message.event) {
    return {
      id: message.id, conversation: conversation.id, title: senderName(sender, formatter), subtitle: null,
      body: eventPredicate(message.event, sender, conversation, viewer, formatter), avatarURL: sender.avatarURL ?? null,
      count: 1, tone: "message", icon: null, duration: null, sender: sender.id,
    };
  }
  return {
    id: message.id,
    conversation: conversation.id,
    title: senderName(sender, formatter),
    subtitle: conversation.kind === "group" ? "in " + groupTitle(conversation.title, formatter) : null,
    body: messagePreview(message, formatter),
    avatarURL: sender.avatarURL ?? null,
    count: 1,
    tone: "message",
    icon: null,
    duration: null,
    sender: sender.id, // HeraldCore's `senderID`: for the avatar's colour, not part of a replay's timeline
    shows: message.id, // HeraldCore's `messageID`: the message whose words it shows, followed by edits and deletions
  };
}

/** The system notification for an incoming message (push uses the same words), with the message's `seq` when the
 *  server stored it and its sender (HeraldCore's `senderID`: whom a Reply answers; none for an event or the app's
 *  backend). */
export function notificationFor(incoming, formatter = standardFormatter, viewer = null) {
  const { message } = incoming;
  const notification = notificationWords(incoming, formatter, viewer);
  if (typeof message.seq === "number") notification.seq = message.seq;
  if (!message.event && message.senderId !== "") notification.sender = message.senderId;
  return notification;
}

/** The name no other message's notification has, and the one its push carries on every platform (iOS's request
 *  identifier through `apns-collapse-id`, Android's tag, Web Push's `tag`): `herald-<seq>`, so a message both pushed
 *  and notified here shows once. Without a seq, its conversation (length in UTF-8 first) and its id there
 *  (HeraldCore's `LocalNotification.identifier`). Inside a burst, the burst's first's (`replaces`). */
export function notificationIdentifier({ seq, thread, message, replaces }) {
  if (typeof replaces === "string") return replaces;
  if (typeof seq === "number") return `herald-${seq}`;
  return `${new TextEncoder().encode(thread).length}:${thread}/${message}`;
}

function notificationWords(incoming, formatter, viewer) {
  const { message, conversation, sender } = incoming;
  if (message.event) {
    return {
      message: message.id, title: groupTitle(conversation.title, formatter), body: entryLine(incoming, viewer, formatter),
      thread: conversation.id,
    };
  }
  const name = senderName(sender, formatter);
  const text = messagePreview(message, formatter);
  if (sender.id === "") {
    // The app's backend: worded apart from any person's message.
    const title = conversation.kind === "group" ? groupTitle(conversation.title, formatter) : formatter.systemSenderName;
    return { message: message.id, title, body: text, thread: conversation.id };
  }
  if (conversation.kind === "group") {
    return {
      message: message.id,
      title: `New message in ${groupTitle(conversation.title, formatter)}`,
      body: `${name}: ${text}`,
      thread: conversation.id,
    };
  }
  return { message: message.id, title: `New message from ${name}`, body: text, thread: conversation.id };
}

/** What a screen reader announces for a banner: "Charlie Davis in Team Chat: Hey, are you there?"; a general
 * banner's message (HeraldCore's `ContentFormatter.announcement(for:)`). */
export function announcement(banner) {
  let text = banner.title;
  if (banner.subtitle !== null) text += " " + banner.subtitle;
  if (banner.body !== null) text += ": " + banner.body;
  return text;
}

/** A general-purpose banner ("Connection lost"); tones: primary, success, warning, danger, neutral. */
export function generalBanner({ id, message, tone = "primary", icon = null, duration = 5 * SECOND }) {
  return { id, conversation: null, title: message, subtitle: null, body: null, avatarURL: null, count: 1, tone, icon, duration, sender: null };
}

/** A banner's initials: the title's for message banners, null for general ones. */
export function bannerInitials(banner) {
  return banner.tone === "message" ? initialsOfFolded(banner.title) : null;
}
