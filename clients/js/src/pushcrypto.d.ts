// The types of a device's push keys and of reading an encrypted push (pushcrypto.js; docs/push.md, "Encrypted
// pushes"). index.d.ts exports them.

/** Why an encrypted push could not be read (`PushDecryptionError.code`). */
export type PushDecryptionErrorCode = "unsupported" | "malformed" | "keys" | "undecryptable" | "plaintext" | "mismatch";

/** An encrypted push that could not be read: `code` is stable, `message` is for people. */
export class PushDecryptionError extends Error {
  readonly name: "PushDecryptionError";
  readonly code: PushDecryptionErrorCode;
  constructor(code: PushDecryptionErrorCode, message: string);
}

/** What `registerDevice(…, {keys})` sends: the public key (65 bytes, uncompressed P-256) and auth (16 bytes), base64url. */
export interface PushRegistrationKeys {
  p256dh: string;
  auth: string;
}

/** A device's push keys as kept on the device (JSON): the registration's two and the private key, a JWK. */
export interface PushKeys extends PushRegistrationKeys {
  privateKey: JsonWebKey;
}

/** The Web Crypto to use where the global `crypto` is not the one. */
export interface PushCryptoOptions {
  crypto?: Crypto | null;
}

/** What a decrypted push says: the same fields a `full` push carries (docs/push.md). */
export interface DecryptedPush {
  title?: string;
  body?: string;
  summary?: string;
  badge?: number;
  /** `type`, `conversationId`, `messageId`, `seq`, `notificationId`, `senderName`, …: strings, as a full push's data. */
  data: Record<string, string>;
  localization?: { title?: { key: string; arguments: string[] }; body?: { key: string; arguments: string[] } };
}

/** The clear data of an encrypted push, as the platform delivers it. */
export interface EncryptedPushData {
  encrypted: string;
  type?: string;
  conversationId: string;
  messageId?: string | null;
  [field: string]: unknown;
}

/** The longest `encrypted` field `decryptPush` takes (characters of base64url): longer is refused, `malformed`. */
export const MAX_ENCRYPTED_LENGTH: number;
/** Whether this runtime has Web Crypto (`crypto.subtle`) to make keys and decrypt pushes with. */
export function pushDecryptionAvailable(crypto?: Crypto | null): boolean;
/** Makes a device's push keys (a P-256 ECDH pair and 16 random bytes of auth). */
export function generatePushKeys(options?: PushCryptoOptions): Promise<PushKeys>;
/** The public half and auth of `keys`: what the server takes. */
export function pushRegistrationKeys(keys: PushRegistrationKeys): PushRegistrationKeys;
/** Decrypts an `aes128gcm` body (bytes or base64url) encrypted for `keys`; the plaintext's bytes. */
export function decryptPushBody(body: Uint8Array | string, keys: PushKeys, options?: PushCryptoOptions): Promise<Uint8Array>;
/** Reads an encrypted push, checked against its clear conversation and message ids and its clear type. */
export function decryptPush(data: EncryptedPushData, keys: PushKeys, options?: PushCryptoOptions): Promise<DecryptedPush>;
export function base64URLEncode(bytes: Uint8Array | ArrayBuffer): string;
export function base64URLDecode(text: string): Uint8Array | null;

/** `GET /v1/push/conversations/{id}/messages/{messageId}` with a device's key (`API.pushedMessage`, made with the
 *  key as its `token`): what a full push of the message would have said to this device's user, and the message. For
 *  a push that withheld its words, or that the device could not decrypt. */
export interface PushedMessage {
  title?: string | null;
  body: string;
  /** A full push's data: the ids, `senderName`, `senderAvatarURL`, `conversationTitle`, `isGroup`, …, as strings. */
  data: Record<string, string>;
  message: import("./index.js").Message;
}
