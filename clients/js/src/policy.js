// Who gets told (docs/behaviour.md §1; HeraldCore's NotificationPolicy): mentions, levels, quiet hours, snooze, and
// how a device is told; and mentions in text (HeraldCore's MentionText).

// Who gets told (docs/behaviour.md §1; HeraldCore's NotificationPolicy)

/** The settings of a user who set nothing (the shape of `GET /v1/me/notifications`). */
export function defaultSettings() {
  return { defaultLevel: "all", snoozeUntil: null, timeZone: null, quietHours: [], mentionsDuringQuietHours: false, badgeCountsMuted: false };
}

export const toMillis = (value) => (value === null || value === undefined ? null : typeof value === "number" ? value : Date.parse(value));

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

/** One minute, in the engine's microseconds: the default window of a burst. */
export const defaultBurstWindow = 60_000_000;

/**
 * One interruption per burst (HeraldCore's `NotificationBursts`, docs/behaviour.md "Bursts"): per conversation, the
 * first system notification of a burst alerts; the ones within `window` of it replace it silently (its identifier,
 * a count), until the conversation is read or the window passes. A message that names the member alerts even inside
 * a burst, still replacing. Time is the caller's, in microseconds; a window of 0 turns bursts off.
 */
export class NotificationBursts {
  constructor(window = defaultBurstWindow) {
    this.window = Math.max(0, window);
    /** key → {started, identifier, count, readMarker} */
    this.bursts = new Map();
    this.pruneAt = 1024;
  }

  /** `{alerts, identifier, count}` for the notification `identifier` of burst `key` at `now`. */
  decide(key, identifier, namesMember, now, readMarker = 0) {
    const burst = this.bursts.get(key);
    if (burst && now - burst.started < this.window && now >= burst.started && readMarker <= burst.readMarker) {
      burst.count += 1;
      return { alerts: namesMember, identifier: burst.identifier, count: burst.count };
    }
    this.bursts.set(key, { started: now, identifier, count: 1, readMarker });
    if (this.bursts.size > this.pruneAt) {
      for (const [k, b] of this.bursts) if (now - b.started >= this.window) this.bursts.delete(k);
      this.pruneAt = Math.max(1024, this.bursts.size * 2);
    }
    return { alerts: true, identifier, count: 1 };
  }

  /** Ends burst `key` (read, or left): the next notification alerts. */
  end(key) {
    this.bursts.delete(key);
  }
}
