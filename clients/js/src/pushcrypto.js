// A device's push keys and the decryption of an encrypted push (docs/push.md, "Encrypted pushes"): with the server
// in `HERALD_PUSH_CONTENT=encrypted`, a device registered with keys gets pushes whose words travel only in
// `encrypted`, an RFC 8188 `aes128gcm` body encrypted for its keys as RFC 8291 encrypts a Web Push. Web Crypto only
// (`crypto.subtle`: ECDH, HKDF, AES-GCM): browsers, Node 20+, and React Native where a Web Crypto is installed.

/** Why an encrypted push could not be read: `code` is stable, `message` is for people.
 *  - `unsupported`: no Web Crypto here (`crypto.subtle`); fetch the words with the device key instead.
 *  - `malformed`: `encrypted` is not an `aes128gcm` body of one record (bad base64url, header or size).
 *  - `keys`: the stored keys cannot be used (not a P-256 private key, not 16 bytes of auth).
 *  - `undecryptable`: the body was not encrypted for these keys, or was changed on the way.
 *  - `plaintext`: it decrypted to something that is not Herald's JSON.
 *  - `mismatch`: the plaintext is about another conversation or message than the push's clear ids. */
export class PushDecryptionError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "PushDecryptionError";
    this.code = code;
  }
}

const encoder = new TextEncoder();

/** The Web Crypto to use: `given`, or the global one; null when there is none. */
function webCrypto(given) {
  const crypto = given ?? globalThis.crypto;
  return crypto && crypto.subtle && typeof crypto.getRandomValues === "function" ? crypto : null;
}

/** Whether this runtime can make push keys and decrypt pushes (Web Crypto with `crypto.subtle`). */
export function pushDecryptionAvailable(crypto = null) {
  return webCrypto(crypto) !== null;
}

/** `bytes` (a Uint8Array or ArrayBuffer) as base64url, without padding. */
export function base64URLEncode(bytes) {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = "";
  for (const byte of view) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The bytes of base64url `text` (padding optional), or null when it is not base64url. */
export function base64URLDecode(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return null;
  const plain = text.replace(/=+$/, "");
  if (plain.length % 4 === 1) return null;
  try {
    const binary = atob(plain.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (plain.length % 4)) % 4));
    return Uint8Array.from(binary, (character) => character.charCodeAt(0));
  } catch {
    return null;
  }
}

/**
 * Makes this device's push keys: a P-256 ECDH key pair and 16 random bytes of auth. Answers `{p256dh, auth,
 * privateKey}`: `p256dh` (the 65-byte public key) and `auth` as base64url, what `registerDevice(…, {keys})` sends;
 * `privateKey` a JWK. All of it is JSON: keep it where only the app (and its notification code) reads it
 * (expo-secure-store, the Keychain), and never send `privateKey` anywhere. Throws `PushDecryptionError`
 * (`unsupported`) without Web Crypto.
 */
export async function generatePushKeys({ crypto = null } = {}) {
  const subtle = requireCrypto(crypto).subtle;
  const pair = await subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"]);
  const [publicKey, privateKey] = await Promise.all([subtle.exportKey("raw", pair.publicKey), subtle.exportKey("jwk", pair.privateKey)]);
  const auth = requireCrypto(crypto).getRandomValues(new Uint8Array(16));
  return { p256dh: base64URLEncode(publicKey), auth: base64URLEncode(auth), privateKey: { kty: privateKey.kty, crv: privateKey.crv, x: privateKey.x, y: privateKey.y, d: privateKey.d } };
}

/** What the server takes of `keys` (`registerDevice`'s `keys`): the public half and auth only. */
export function pushRegistrationKeys(keys) {
  return { p256dh: keys.p256dh, auth: keys.auth };
}

function requireCrypto(given) {
  const crypto = webCrypto(given);
  if (!crypto) throw new PushDecryptionError("unsupported", "this runtime has no Web Crypto (crypto.subtle) to decrypt pushes with");
  return crypto;
}

function concat(...parts) {
  const joined = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}

async function hkdf(subtle, salt, ikm, info, bytes) {
  const key = await subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
  return new Uint8Array(await subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, key, bytes * 8));
}

/** The longest `encrypted` field taken, in characters of base64url (or bytes): more than 4 KB of push holds. */
export const MAX_ENCRYPTED_LENGTH = 8192;

/**
 * Decrypts an `aes128gcm` body (RFC 8188, one record) encrypted for `keys` as RFC 8291 encrypts a Web Push:
 * `body` is the bytes or their base64url. Answers the plaintext's bytes; throws `PushDecryptionError`.
 */
export async function decryptPushBody(body, keys, { crypto = null } = {}) {
  const subtle = requireCrypto(crypto).subtle;
  // A push service carries 4 KB at most: anything longer is refused before it is decoded.
  if ((typeof body === "string" ? body.length : body?.length ?? 0) > MAX_ENCRYPTED_LENGTH) {
    throw new PushDecryptionError("malformed", "the encrypted push is longer than a push can be");
  }
  const bytes = typeof body === "string" ? base64URLDecode(body) : body instanceof Uint8Array ? body : null;
  if (!bytes) throw new PushDecryptionError("malformed", "the encrypted push is not base64url");
  // salt (16) | rs (4) | idlen (1) = 65 | keyid: the sender's P-256 public key | one record.
  if (bytes.length < 16 + 4 + 1 + 65 + 17) throw new PushDecryptionError("malformed", "the encrypted push is too short");
  const salt = bytes.subarray(0, 16);
  const recordSize = new DataView(bytes.buffer, bytes.byteOffset + 16, 4).getUint32(0);
  const idLength = bytes[20];
  const senderKey = bytes.subarray(21, 21 + 65);
  const record = bytes.subarray(21 + 65);
  if (idLength !== 65 || senderKey[0] !== 4) throw new PushDecryptionError("malformed", "the encrypted push's header names no P-256 key");
  if (recordSize < 18 || record.length > recordSize) throw new PushDecryptionError("malformed", "the encrypted push is not one record");

  const receiverKey = base64URLDecode(keys?.p256dh);
  const auth = base64URLDecode(keys?.auth);
  let privateKey;
  let sender;
  try {
    if (!receiverKey || receiverKey.length !== 65 || !auth || auth.length !== 16) throw new Error("size");
    privateKey = await subtle.importKey("jwk", { ...keys.privateKey, ext: true }, { name: "ECDH", namedCurve: "P-256" }, false, ["deriveBits"]);
  } catch {
    throw new PushDecryptionError("keys", "the device's push keys cannot be used (a P-256 private key, its public key and 16 bytes of auth)");
  }
  try {
    sender = await subtle.importKey("raw", senderKey, { name: "ECDH", namedCurve: "P-256" }, false, []);
  } catch {
    throw new PushDecryptionError("malformed", "the encrypted push's key is not a P-256 point");
  }
  let plaintext;
  try {
    const shared = new Uint8Array(await subtle.deriveBits({ name: "ECDH", public: sender }, privateKey, 256));
    const ikm = await hkdf(subtle, auth, shared, concat(encoder.encode("WebPush: info\0"), receiverKey, senderKey), 32);
    const contentKey = await hkdf(subtle, salt, ikm, encoder.encode("Content-Encoding: aes128gcm\0"), 16);
    const nonce = await hkdf(subtle, salt, ikm, encoder.encode("Content-Encoding: nonce\0"), 12);
    const key = await subtle.importKey("raw", contentKey, "AES-GCM", false, ["decrypt"]);
    plaintext = new Uint8Array(await subtle.decrypt({ name: "AES-GCM", iv: nonce, tagLength: 128 }, key, record));
  } catch {
    throw new PushDecryptionError("undecryptable", "the push was not encrypted for this device's keys, or was changed on the way");
  }
  // The last (and only) record ends with its delimiter 2, then zero or more zeros of padding.
  let end = plaintext.length - 1;
  while (end >= 0 && plaintext[end] === 0) end -= 1;
  if (end < 0 || plaintext[end] !== 2) throw new PushDecryptionError("malformed", "the encrypted push's record is not a last record");
  return plaintext.subarray(0, end);
}

/**
 * Reads an encrypted push: `data` is the push's clear data (`encrypted`, `conversationId`, `messageId`, as the
 * platform delivers them), `keys` this device's (`generatePushKeys`). Answers the plaintext object (`{title?, body?,
 * summary?, badge, data, localization?}`, docs/push.md), only when its `data.type`, `data.conversationId` and
 * `data.messageId` are the clear ones exactly (a push's words never land on another chat's notification, nor a
 * message's words on its deletion). Everything in it came
 * over the network: show its words as plain text. Throws `PushDecryptionError`.
 */
export async function decryptPush(data, keys, options = {}) {
  if (typeof data?.encrypted !== "string") throw new PushDecryptionError("malformed", "the push carries nothing encrypted");
  const bytes = await decryptPushBody(data.encrypted, keys, options);
  let plaintext;
  try {
    plaintext = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new PushDecryptionError("plaintext", "the decrypted push is not UTF-8 JSON");
  }
  const inner = plaintext?.data;
  if (plaintext === null || typeof plaintext !== "object" || Array.isArray(plaintext) || inner === null || typeof inner !== "object" || Array.isArray(inner)) {
    throw new PushDecryptionError("plaintext", "the decrypted push is not Herald's: no data object");
  }
  const same = (clear, decrypted) => (clear ?? null) === (decrypted ?? null);
  if (typeof data.conversationId !== "string" || !same(data.conversationId, inner.conversationId) || !same(data.messageId, inner.messageId)) {
    throw new PushDecryptionError("mismatch", "the decrypted push is about another conversation or message than its clear ids");
  }
  if (!same(data.type, inner.type)) {
    throw new PushDecryptionError("mismatch", "the decrypted push is of another kind than its clear type");
  }
  return plaintext;
}
