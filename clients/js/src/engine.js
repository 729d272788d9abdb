// Herald's notification engine in JavaScript (browsers, React Native, Node): the policy, the wording and the banner
// queue of HeraldCore, as a pure state machine. Time is an input (whole microseconds from an origin the caller chooses), never read
// here, so the same inputs give the same effects in a page, under node, and in `herald replay`.
//
// This file is a port of Sources/HeraldCore and is held to it by a conformance test
// (Tests/HeraldReplayTests/WebEngineConformanceTests.swift): every replay trace runs through both and the
// timelines must be identical. Change a rule here and there together. The rules: docs/behaviour.md §1–3.

/** One second, in the engine's unit. */
export const SECOND = 1_000_000;

/** The banner queue's options; the defaults are the product's (3 waiting, 4 s, 0.25 s gap, no coalescing, 50 px). */
export function bannerConfig({ capacity = 3, duration = 4 * SECOND, gap = SECOND / 4, coalesce = false, swipeThreshold = 50 } = {}) {
  return {
    capacity: Math.max(0, capacity),
    duration: Math.max(0, duration),
    gap: Math.max(0, gap),
    coalesce: Boolean(coalesce),
    swipeThreshold: Math.max(0, swipeThreshold),
  };
}

// ---------------------------------------------------------------------------------------------------------------
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
    default: return null;
  }
}

/** What an entry says in one line: a message's preview, or an event's line (null for an event type not known). */
export function entryLine(incoming, viewer = null, formatter = standardFormatter) {
  const { message, conversation, sender } = incoming;
  if (!message.event) return preview(message.text, message.imageURL != null, formatter);
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
    body: preview(message.text, message.imageURL != null, formatter),
    avatarURL: sender.avatarURL ?? null,
    count: 1,
    tone: "message",
    icon: null,
    duration: null,
    sender: sender.id, // HeraldCore's `senderID`: for the avatar's colour, not part of a replay's timeline
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
 *  (HeraldCore's `LocalNotification.identifier`). */
export function notificationIdentifier({ seq, thread, message }) {
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
  const text = preview(message.text, message.imageURL != null, formatter);
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

// ---------------------------------------------------------------------------------------------------------------
// Who gets told (docs/behaviour.md §1; HeraldCore's NotificationPolicy)

/** The settings of a user who set nothing (the shape of `GET /v1/me/notifications`). */
export function defaultSettings() {
  return { defaultLevel: "all", snoozeUntil: null, timeZone: null, quietHours: [], mentionsDuringQuietHours: false, badgeCountsMuted: false };
}

const toMillis = (value) => (value === null || value === undefined ? null : typeof value === "number" ? value : Date.parse(value));

/** Whether `message` mentions `userID` in a conversation of `kind`: by id, `@all`, a direct chat, being added. */
export function isMention(message, userID, kind) {
  if (message.event) return message.event.type === "member_added" && (message.event.members ?? []).some((member) => member.id === userID);
  return kind === "direct" || message.mentionsAll === true || (message.mentions ?? []).includes(userID);
}

/** Whether `message` names `userID` or everyone: what goes ahead in the banner queue and is highlighted. */
export function namesUser(message, userID) {
  return !message.event && (message.mentionsAll === true || (message.mentions ?? []).includes(userID));
}

/** A conversation's level at `at` (ms): its own `choice` ({level, until}) while it holds, else the default. */
export function levelAt(choice, settings, at) {
  if (choice && (choice.until === null || choice.until === undefined || at < toMillis(choice.until))) return choice.level;
  return settings.defaultLevel ?? "all";
}

const weekdays = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const zoneFormats = new Map();

/** Minutes after midnight of "HH:MM" (00:00 to 23:59, or 24:00 for an end); null when malformed. */
function minutesOf(text, end) {
  const match = /^(\d\d):(\d\d)$/.exec(text ?? "");
  if (!match) return null;
  const hours = Number(match[1]), minutes = Number(match[2]);
  if (minutes >= 60) return null;
  if (hours === 24 && minutes === 0 && end) return 24 * 60;
  return hours < 24 ? hours * 60 + minutes : null;
}

/** Whether `at` (ms) falls in one of the settings' quiet windows, read in their time zone (DST included). */
export function isQuiet(settings, at) {
  if (!settings.timeZone || !(settings.quietHours ?? []).length) return false;
  let format = zoneFormats.get(settings.timeZone);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat("en-US", { timeZone: settings.timeZone, weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    } catch {
      return false;
    }
    zoneFormats.set(settings.timeZone, format);
  }
  // A runtime without formatToParts reads no quiet hours on the device (the server's pushes still follow them).
  if (typeof format.formatToParts !== "function") return false;
  const parts = Object.fromEntries(format.formatToParts(new Date(at)).map((part) => [part.type, part.value]));
  const day = weekdays.indexOf(parts.weekday.toLowerCase().slice(0, 3));
  const minute = (Number(parts.hour) % 24) * 60 + Number(parts.minute);
  return settings.quietHours.some((window) => {
    const start = minutesOf(window.start, false), end = minutesOf(window.end, true);
    if (start === null || end === null) return false;
    if (start < end) return window.days.includes(weekdays[day]) && minute >= start && minute < end;
    return (window.days.includes(weekdays[day]) && minute >= start) || (window.days.includes(weekdays[(day + 6) % 7]) && minute < end);
  });
}

/** The user's choices on a message that would notify them, at its `createdAt`: {skip: reason}, "ring" or "quietly"
 * (HeraldCore's `NotificationPolicy.interruption`). */
export function interruption(message, kind, userID, choice, settings) {
  const at = toMillis(message.createdAt) ?? 0;
  const level = levelAt(choice, settings, at);
  const mentioned = isMention(message, userID, kind);
  if (level === "nothing") return { skip: "muted" };
  if (level === "mentions" && !mentioned) return { skip: "unmentioned" };
  if (settings.snoozeUntil && at < toMillis(settings.snoozeUntil)) return { skip: "snoozed" };
  if (isQuiet(settings, at) && !(mentioned && settings.mentionsDuringQuietHours)) return "quietly";
  return "ring";
}

/** How a device in state `device` is told of `message`, in a conversation of `kind`: "banner", "local",
 * "quietLocal", or {skip: reason}. */
export function delivery(message, kind, userID, device, alreadySeen) {
  if (message.senderId === userID) return { skip: "own" };
  if (alreadySeen) return { skip: "duplicate" };
  if (message.silent) return { skip: "silent" };
  if (message.event && !(message.event.type === "member_added" && (message.event.members ?? []).some((member) => member.id === userID))) {
    return { skip: "quiet" };
  }
  const told = interruption(message, kind, userID, device.levels.get(message.conversationId) ?? null, device.settings);
  if (told.skip) return told;
  if (device.appState === "foreground") {
    return device.openConversation === message.conversationId ? { skip: "active" } : "banner";
  }
  if (!device.notificationsPermitted) return { skip: "permission" };
  return told === "quietly" ? "quietLocal" : "local";
}

// ---------------------------------------------------------------------------------------------------------------
// Mentions in text (HeraldCore's MentionText): `@` and a member's name at the start of a word, or `@all`

const isWordCharacter = (character) => /[\p{L}\p{N}]/u.test(character ?? "");

/** The members ({id, name}) `text` mentions, in the order they first appear (the longest name where several start
 * alike; case does not matter), and whether it mentions everyone: {ids, all}. */
export function findMentions(text, members) {
  const folded = text.toLowerCase();
  const named = members.filter((member) => member.name).sort((a, b) => [...b.name].length - [...a.name].length);
  const ids = [];
  let all = false;
  for (let at = folded.indexOf("@"); at >= 0; at = folded.indexOf("@", at + 1)) {
    if (at > 0 && isWordCharacter(folded[at - 1])) continue;
    const rest = folded.slice(at + 1);
    const endsWord = (length) => !isWordCharacter(rest[length]);
    const person = named.find((member) => rest.startsWith(member.name.toLowerCase()) && endsWord(member.name.toLowerCase().length));
    if (person) {
      if (!ids.includes(person.id)) ids.push(person.id);
    } else if (rest.startsWith("all") && endsWord(3)) {
      all = true;
    }
  }
  return { ids, all };
}

/** The names (and "all") that complete `prefix`, typed after an `@`: in the members' order, "all" last. */
export function mentionCompletions(prefix, members) {
  const folded = prefix.toLowerCase();
  const names = members.map((member) => member.name).filter((name) => name && name.toLowerCase().startsWith(folded));
  return "all".startsWith(folded) ? [...names, "all"] : names;
}

/** The ids seen most recently, up to a limit: a set that forgets its oldest member when full. */
export class RecentIDs {
  constructor(limit) {
    this.limit = Math.max(1, limit);
    this.members = new Set();
    this.order = [];
    this.oldest = 0;
  }

  has(id) {
    return this.members.has(id);
  }

  /** Remembers `id`; false if it was already there. */
  insert(id) {
    if (this.members.has(id)) return false;
    this.members.add(id);
    if (this.order.length < this.limit) {
      this.order.push(id);
    } else {
      this.members.delete(this.order[this.oldest]);
      this.order[this.oldest] = id;
      this.oldest = (this.oldest + 1) % this.limit;
    }
    return true;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The banner queue (docs/behaviour.md §3; HeraldCore's BannerQueue, BannerTimer and EffectLog)

const rank = { dismiss: 0, navigate: 1, drop: 2, clear: 2, skip: 3, show: 4, update: 4, local: 5 };

/** Effects stamped with their instant; each input's effects put in their documented order when it ends. */
class EffectLog {
  constructor() {
    this.entries = [];
    this.start = 0;
    this.instant = 0;
  }

  begin(instant) {
    this.start = this.entries.length;
    this.instant = instant;
  }

  append(effect) {
    this.entries.push({ at: this.instant, effect });
  }

  current() {
    return this.entries.slice(this.start);
  }

  end() {
    const { entries, start } = this;
    for (let index = start + 1; index < entries.length; index += 1) {
      const entry = entries[index];
      let slot = index;
      while (slot > start && rank[entries[slot - 1].effect.type] > rank[entry.effect.type]) {
        entries[slot] = entries[slot - 1];
        slot -= 1;
      }
      entries[slot] = entry;
    }
  }
}

/** The visible banner's life: its deadline, and the time left while a finger holds it. */
class BannerTimer {
  constructor(duration, now) {
    this.remaining = duration;
    this.deadline = now + duration;
  }

  pause(now) {
    if (this.deadline === null) return;
    this.remaining = Math.max(0, this.deadline - now);
    this.deadline = null;
  }

  resume(now) {
    if (this.deadline !== null) return;
    this.deadline = now + this.remaining;
  }

  restart(duration, now) {
    this.remaining = duration;
    if (this.deadline !== null) this.deadline = now + duration;
  }
}

function absorb(banner, later) {
  banner.mention = Boolean(banner.mention || later.mention);
  banner.count += later.count;
  banner.title = later.title;
  banner.subtitle = later.subtitle;
  banner.body = later.body;
  banner.avatarURL = later.avatarURL;
  banner.sender = later.sender;
}

/** Which banner is on screen, which wait, and when each goes. Instants never go backwards. */
export class BannerQueue {
  constructor(config = bannerConfig()) {
    this.config = config;
    this.visible = null;
    this.timer = null;
    this.waiting = [];
    this.quietUntil = null;
    this.now = 0;
  }

  /** When the queue next needs `advance`: the visible banner's timeout or the end of a gap; null when nothing is due. */
  get nextDeadline() {
    if (this.timer) return this.timer.deadline;
    return this.waiting.length === 0 ? null : this.quietUntil;
  }

  /** Fires every deadline up to and including `instant` into `log`, then makes `instant` the current one. */
  advanceInto(instant, log) {
    for (let deadline = this.nextDeadline; deadline !== null && deadline <= instant; deadline = this.nextDeadline) {
      this.now = Math.max(this.now, deadline);
      log.begin(this.now);
      if (this.timer) this.dismissVisible("timeout", log);
      this.showNextIfDue(log);
      log.end();
    }
    this.now = Math.max(this.now, instant);
  }

  /** Applies an input at `now`: {type: "enqueue", banner} | {type: "gesture", gesture} | {type: "opened", conversation} | {type: "left", conversation} | {type: "dismiss"} | {type: "dismissAll"}. */
  apply(input, log) {
    switch (input.type) {
      case "enqueue":
        this.enqueue(input.banner, log);
        return;
      case "gesture":
        this.applyGesture(input.gesture, log);
        break;
      case "opened":
        this.conversationOpened(input.conversation, log);
        break;
      case "left":
        this.conversationGone(input.conversation, "removed", log);
        break;
      case "dismiss":
        this.dismissVisible("programmatic", log);
        break;
      case "dismissAll":
        this.dismissVisible("programmatic", log);
        for (const banner of this.waiting) log.append({ type: "drop", banner: banner.id, reason: "programmatic" });
        this.waiting = [];
        break;
      default:
        throw new Error(`unknown queue input ${input.type}`);
    }
    this.showNextIfDue(log);
  }

  enqueue(banner, log) {
    if (this.config.coalesce && banner.conversation !== null) {
      const current = this.visible;
      if (current && current.conversation === banner.conversation) {
        absorb(current, banner);
        this.timer?.restart(current.duration ?? this.config.duration, this.now);
        log.append({ type: "update", banner: { ...current } });
        return;
      }
      const index = this.waiting.findIndex((candidate) => candidate.conversation === banner.conversation);
      if (index >= 0) {
        const waiting = this.waiting[index];
        absorb(waiting, banner);
        // A mention absorbed into a plain banner takes it ahead of the other plain ones.
        const plain = this.firstPlainSlot();
        if (waiting.mention && index > plain) this.waiting.splice(plain, 0, ...this.waiting.splice(index, 1));
        return;
      }
    }
    // Mentions wait ahead of banners that are not, behind earlier mentions.
    this.waiting.splice(banner.mention ? this.firstPlainSlot() : this.waiting.length, 0, { ...banner });
    const showsNow = !this.timer && !this.isQuiet;
    if (!showsNow && this.waiting.length > this.config.capacity) {
      // The oldest plain banner makes room; only mentions waiting, the oldest mention.
      const plain = this.firstPlainSlot();
      const [pushedOut] = this.waiting.splice(plain < this.waiting.length ? plain : 0, 1);
      log.append({ type: "drop", banner: pushedOut.id, reason: "capacity" });
    }
    this.showNextIfDue(log);
  }

  applyGesture(gesture, log) {
    const banner = this.visible;
    if (!banner) return;
    switch (gesture.type) {
      case "tap":
        this.dismissVisible("tap", log);
        if (banner.conversation !== null) {
          log.append({ type: "navigate", conversation: banner.conversation });
          this.conversationOpened(banner.conversation, log);
        }
        break;
      case "close":
        this.dismissVisible("close", log);
        break;
      case "swipe":
        if (-gesture.dy >= this.config.swipeThreshold) this.dismissVisible("swipe", log);
        break;
      case "touchDown":
        this.timer?.pause(this.now);
        break;
      case "touchUp":
        this.timer?.resume(this.now);
        break;
      default:
        throw new Error(`unknown gesture ${gesture.type}`);
    }
  }

  conversationOpened(conversation, log) {
    this.conversationGone(conversation, "opened", log);
  }

  /** Where the first waiting banner that is not a mention is (the end when there is none). */
  firstPlainSlot() {
    const index = this.waiting.findIndex((banner) => !banner.mention);
    return index < 0 ? this.waiting.length : index;
  }

  /** The banners of `conversation` go: the visible one dismissed, the waiting ones dropped, for `reason`. */
  conversationGone(conversation, reason, log) {
    if (this.visible && this.visible.conversation === conversation) this.dismissVisible(reason, log);
    this.waiting = this.waiting.filter((banner) => {
      if (banner.conversation !== conversation) return true;
      log.append({ type: "drop", banner: banner.id, reason });
      return false;
    });
  }

  dismissVisible(reason, log) {
    const banner = this.visible;
    if (!banner) return;
    this.visible = null;
    this.timer = null;
    this.quietUntil = this.now + this.config.gap;
    log.append({ type: "dismiss", banner: banner.id, reason });
  }

  get isQuiet() {
    return this.quietUntil !== null && this.now < this.quietUntil;
  }

  showNextIfDue(log) {
    if (this.timer || this.isQuiet || this.waiting.length === 0) return;
    const banner = this.waiting.shift();
    this.visible = banner;
    this.timer = new BannerTimer(banner.duration ?? this.config.duration, this.now);
    this.quietUntil = null;
    log.append({ type: "show", banner: { ...banner } });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The notifier: policy + wording + queue for one device (HeraldCore's Notifier)

/**
 * Everything one device does about new messages. `handle(input, at)` returns `[{at, effect}]`; `nextDeadline`
 * says when to call `advance(to)`. Inputs:
 * {type: "message", incoming} | {type: "app", state} | {type: "permission", granted} | {type: "open", conversation}
 * | {type: "mute", conversation} | {type: "unmute", conversation} | {type: "show", banner} | {type: "gesture", gesture}
 * | {type: "dismiss"} | {type: "dismissAll"} | {type: "pushed", conversation, message}. Gestures:
 * {type: "tap"|"close"|"touchDown"|"touchUp"} | {type: "swipe", dy}.
 *
 * `localHold` (in the instants' unit, 0 by default): how long a system notification waits before it is posted, for a
 * `pushed` input that would make it a second one (HeraldCore's `Notifier.localHold`).
 */
export class Notifier {
  constructor({ userID, config = bannerConfig(), formatter = standardFormatter, seenLimit = 10_000, localHold = 0 } = {}) {
    this.userID = userID;
    this.formatter = formatter;
    this.device = {
      appState: "foreground", notificationsPermitted: true, openConversation: null, levels: new Map(), settings: defaultSettings(),
    };
    this.queue = new BannerQueue(config);
    this.seen = new RecentIDs(seenLimit);
    this.pushed = new RecentIDs(seenLimit);
    this.localHold = Math.max(0, localHold);
    /** System notifications held, in the order they are due: [{deadline, key, notification}]. */
    this.held = [];
  }

  get nextDeadline() {
    const banner = this.queue.nextDeadline, local = this.held.length ? this.held[0].deadline : null;
    if (banner === null) return local;
    return local === null ? banner : Math.min(banner, local);
  }

  /** Fires every deadline up to and including `instant`, each at its own instant. */
  advance(instant) {
    const log = new EffectLog();
    this.fire(instant, log);
    return log.entries;
  }

  /** The banner queue's deadlines and the held notifications', in time order, up to `instant`. */
  fire(instant, log) {
    while (this.held.length && this.held[0].deadline <= instant) {
      const first = this.held.shift();
      this.queue.advanceInto(first.deadline, log);
      log.begin(Math.max(this.queue.now, first.deadline));
      log.append({ type: "local", notification: first.notification });
      log.end();
    }
    this.queue.advanceInto(instant, log);
  }

  /** Fires what is due up to `instant`, then handles `input` at `instant`. */
  handle(input, instant) {
    const log = new EffectLog();
    const { queue, device } = this;
    this.fire(instant, log);
    log.begin(queue.now);
    switch (input.type) {
      case "message":
        this.receive(input.incoming, log);
        break;
      case "app":
        device.appState = input.state;
        break;
      case "permission":
        device.notificationsPermitted = input.granted;
        break;
      case "open":
        device.openConversation = input.conversation;
        if (input.conversation !== null) queue.apply({ type: "opened", conversation: input.conversation }, log);
        break;
      case "mute":
        device.levels.set(input.conversation, { level: "nothing", until: null });
        break;
      case "unmute":
        device.levels.delete(input.conversation);
        break;
      case "level":
        if (input.choice) device.levels.set(input.conversation, { level: input.choice.level, until: toMillis(input.choice.until) });
        else device.levels.delete(input.conversation);
        break;
      case "settings":
        device.settings = { ...defaultSettings(), ...input.settings };
        break;
      case "show":
        queue.apply({ type: "enqueue", banner: input.banner }, log);
        break;
      case "gesture":
        queue.apply({ type: "gesture", gesture: input.gesture }, log);
        break;
      case "dismiss":
      case "dismissAll":
        queue.apply({ type: input.type }, log);
        break;
      case "pushed": {
        const key = JSON.stringify([input.conversation, input.message]);
        this.pushed.insert(key);
        const index = this.held.findIndex((held) => held.key === key);
        if (index >= 0) {
          this.held.splice(index, 1);
          log.append({ type: "skip", message: input.message, reason: "pushed" });
        }
        break;
      }
      default:
        throw new Error(`unknown input ${input.type}`);
    }
    for (const { effect } of log.current()) {
      if (effect.type === "navigate") device.openConversation = effect.conversation;
    }
    log.end();
    return log.entries;
  }

  receive(incoming, log) {
    const { message } = incoming;
    // An id is unique only within its conversation, so both name the message.
    const key = JSON.stringify([message.conversationId, message.id]);
    const alreadySeen = !this.seen.insert(key);
    // Removed, left, or the group deleted: nothing of it may stay on screen or in the notification centre.
    if (!alreadySeen && message.event && eventEnds(message.event, message.senderId, this.userID)) {
      this.queue.apply({ type: "left", conversation: message.conversationId }, log);
      log.append({ type: "clear", conversation: message.conversationId });
    }
    const kind = incoming.conversation.kind;
    const decision = delivery(message, kind, this.userID, this.device, alreadySeen);
    const shows = decision === "banner" || decision === "local" || decision === "quietLocal";
    if (shows && this.pushed.has(key)) {
      // Shown by its push already (the server said so before the message came: a catch-up).
      log.append({ type: "skip", message: message.id, reason: "pushed" });
    } else if (decision === "banner") {
      const banner = bannerFor(incoming, this.formatter, this.userID);
      banner.mention = namesUser(message, this.userID);
      this.queue.enqueue(banner, log);
    } else if (decision === "local" || decision === "quietLocal") {
      const notification = notificationFor(incoming, this.formatter, this.userID);
      if (decision === "quietLocal") notification.silent = true;
      if (this.localHold > 0) {
        const deadline = this.queue.now + this.localHold;
        const index = this.held.findIndex((held) => held.deadline > deadline);
        this.held.splice(index < 0 ? this.held.length : index, 0, { deadline, key, notification });
      } else {
        log.append({ type: "local", notification });
      }
    } else {
      log.append({ type: "skip", message: message.id, reason: decision.skip });
    }
  }
}
