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
