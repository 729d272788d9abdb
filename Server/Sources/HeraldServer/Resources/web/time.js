// When a message was sent, as a chat product says it: the time today, "Yesterday", the weekday this week, the date
// further back (with the year when it is not this one). In the browser's language and time zone.

const DAY = 24 * 60 * 60 * 1000;

/** Midnight (local time) at the start of `date`'s day. */
function startOfDay(date) {
  return new Date(date.getFullYear(), date.getMonth(), date.getDate());
}

/** Whole days from `date`'s day to `now`'s (0 today, 1 yesterday); daylight-saving days count as one. */
export function daysAgo(date, now = new Date()) {
  return Math.round((startOfDay(now) - startOfDay(date)) / DAY);
}

/** The time of day: `14:05` (or `2:05 PM`, as the browser's language writes it). */
export function timeOfDay(date) {
  return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** The heading of a day in a chat: `Today`, `Yesterday`, `Monday` (this week), `Mon, 16 Nov`, `16 Nov 2025`. */
export function dayLabel(date, now = new Date()) {
  const days = daysAgo(date, now);
  if (days === 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days > 1 && days < 7) return date.toLocaleDateString([], { weekday: "long" });
  if (date.getFullYear() === now.getFullYear()) {
    return date.toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" });
  }
  return date.toLocaleDateString([], { day: "numeric", month: "short", year: "numeric" });
}

/** The stamp of a chat's last message in the list: the time today, then `Yesterday`, the weekday, the date. */
export function listStamp(date, now = new Date()) {
  const days = daysAgo(date, now);
  if (days === 0) return timeOfDay(date);
  if (days === 1) return "Yesterday";
  if (days > 1 && days < 7) return date.toLocaleDateString([], { weekday: "short" });
  if (date.getFullYear() === now.getFullYear()) return date.toLocaleDateString([], { day: "numeric", month: "short" });
  return date.toLocaleDateString([], { day: "numeric", month: "numeric", year: "2-digit" });
}

/** A date and time in full, for a tooltip: `Monday 16 November 2026, 14:05`. */
export function fullStamp(date) {
  return date.toLocaleString([], { dateStyle: "full", timeStyle: "short" });
}
