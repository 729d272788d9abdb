// What a view needs to show Herald's banners and messages, on any platform (as HeraldPresentation's AvatarStyle in
// Swift): which pictures load, a person's colour, and text that is safe to put on screen.

/** An address as written, when it is http or https and nothing else (a runtime whose `URL` cannot parse it). */
const plainWebAddress = /^https?:\/\/[^\s<>"'`\\]+$/i;

/** Only http and https pictures are ever loaded: the address (normalised where the runtime's `URL` can), or null. */
export function safeImageURL(text) {
  if (typeof text !== "string") return null;
  let url;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  try {
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    // React Native's `URL` parses but throws "not implemented" from most of its getters.
    return plainWebAddress.test(text) ? text : null;
  }
}

/** The UTF-8 bytes of `text` (TextEncoder's, where the runtime has it). */
function utf8(text) {
  if (typeof TextEncoder === "function") return new TextEncoder().encode(text);
  const bytes = [];
  for (const character of text) {
    let code = character.codePointAt(0);
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd; // a lone surrogate, as TextEncoder writes it
    if (code < 0x80) bytes.push(code);
    else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
    else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
  }
  return bytes;
}

/** A colour for an initials avatar, the same for the same id everywhere (a hue from an FNV-1a hash of the id). */
export function avatarColour(id) {
  let hash = 0x811c9dc5;
  for (const byte of utf8(id ?? "")) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return `hsl(${hash % 360} 55% 42%)`;
}

/** Text safe to show: C0 and C1 controls (but tab and newline) and the bidi overrides removed. */
export function cleanText(text) {
  return String(text ?? "").replace(/[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g, "");
}

/** The category of Herald's message notifications, and its actions (the same identifiers on every platform). */
export const notificationCategory = "HERALD_MESSAGE";
export const replyAction = "HERALD_REPLY";
export const markReadAction = "HERALD_MARK_READ";
/** The longest reply taken, in characters. */
export const maxReplyCharacters = 4000;

/**
 * What answering one of Herald's message notifications asks, from the action's identifier, the notification's data (a
 * push's, or a local one's: `conversationId`, `messageId`, `seq`) and the text typed for a Reply; null for anything
 * else (not Herald's, an empty reply, a Mark as read without a seq):
 *
 * - `{type: "reply", conversationId, messageId, text}`: post `text` under `messageId`, made from the notification and
 *   the text (`reply-<seq>-<16 hex digits of FNV-1a>`, as HeraldPresentation's `NotificationAnswer` makes it), so a
 *   retried reply is stored once and another text is another message;
 * - `{type: "read", conversationId, seq}`: move the read marker to `seq`.
 */
export function notificationAnswer(action, data, text) {
  const conversationId = typeof data?.conversationId === "string" ? data.conversationId : "";
  if (!conversationId) return null;
  const seq = typeof data.seq === "string" && /^[0-9]{1,15}$/.test(data.seq) && Number(data.seq) > 0 ? Number(data.seq) : null;
  if (action === replyAction) {
    const typed = Array.from(typeof text === "string" ? text.trim() : "").slice(0, maxReplyCharacters).join("");
    const about = seq !== null ? String(seq) : typeof data.messageId === "string" ? data.messageId : null;
    if (!typed || about === null) return null;
    return { type: "reply", conversationId, messageId: `reply-${about}-${fnv1a64(typed)}`, text: typed };
  }
  if (action === markReadAction) return seq === null ? null : { type: "read", conversationId, seq };
  return null;
}

/** 16 hex digits of FNV-1a (64-bit) over `text`'s UTF-8, without TextEncoder (React Native may lack it). */
function fnv1a64(text) {
  const mask = (1n << 64n) - 1n;
  let hash = 0xcbf29ce484222325n;
  const eat = (byte) => {
    hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & mask;
  };
  for (const character of text) {
    const point = character.codePointAt(0);
    if (point < 0x80) eat(point);
    else if (point < 0x800) [0xc0 | (point >> 6), 0x80 | (point & 0x3f)].forEach(eat);
    else if (point < 0x10000) [0xe0 | (point >> 12), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f)].forEach(eat);
    else [0xf0 | (point >> 18), 0x80 | ((point >> 12) & 0x3f), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f)].forEach(eat);
  }
  return hash.toString(16).padStart(16, "0");
}
