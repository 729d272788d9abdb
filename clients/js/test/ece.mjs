// RFC 8291 encryption (an RFC 8188 aes128gcm body of one record) written out with node:crypto alone: the
// independent implementation the package's decryption is tested against (pushcrypto.test.mjs, the Expo example's
// background task).

import { createCipheriv, createECDH, hkdfSync, randomBytes } from "node:crypto";

const fromBase64URL = (text) => Buffer.from(text, "base64url");

/** RFC 8291 encryption written with node:crypto alone: a fresh sender key and salt, one record, `padding` zeros. */
export function encrypt(plaintext, keys, { padding = 0, recordSize = 4096 } = {}) {
  const sender = createECDH("prime256v1");
  sender.generateKeys();
  const receiver = fromBase64URL(keys.p256dh);
  const salt = randomBytes(16);
  const shared = sender.computeSecret(receiver);
  const info = Buffer.concat([Buffer.from("WebPush: info\0"), receiver, sender.getPublicKey()]);
  const ikm = Buffer.from(hkdfSync("sha256", shared, fromBase64URL(keys.auth), info, 32));
  const key = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  const cipher = createCipheriv("aes-128-gcm", key, nonce);
  const sealed = Buffer.concat([cipher.update(Buffer.concat([Buffer.from(plaintext), Buffer.from([2]), Buffer.alloc(padding)])), cipher.final(), cipher.getAuthTag()]);
  const header = Buffer.alloc(21);
  salt.copy(header, 0);
  header.writeUInt32BE(recordSize, 16);
  header[20] = 65;
  return Buffer.concat([header, sender.getPublicKey(), sealed]);
}

