// A device's push keys and the decryption of encrypted pushes (pushcrypto.js): RFC 8291's own example, bodies made
// by an independent implementation (node:crypto's ECDH, HKDF and AES-GCM, written out here from RFC 8188 and 8291),
// and what must be refused: a changed body, another device's keys, another conversation's or message's ids.

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  API, PushDecryptionError, base64URLDecode, base64URLEncode, decryptPush, decryptPushBody, generatePushKeys,
  pushDecryptionAvailable, MAX_ENCRYPTED_LENGTH,
} from "../src/index.js";

import { encrypt } from "./ece.mjs";

const b64 = (text) => Buffer.from(base64URLDecode(text));

test("RFC 8291, Appendix A: the example body decrypts to its plaintext", async () => {
  const uaPublic = b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4");
  const keys = {
    p256dh: base64URLEncode(uaPublic),
    auth: "BTBZMqHH6r4Tts7J_aSIgg",
    privateKey: { kty: "EC", crv: "P-256", d: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
      x: base64URLEncode(uaPublic.subarray(1, 33)), y: base64URLEncode(uaPublic.subarray(33, 65)) },
  };
  const body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN";
  const plaintext = await decryptPushBody(body, keys);
  assert.equal(new TextDecoder().decode(plaintext), "When I grow up, I want to be a watermelon");
});

const pushed = {
  title: "New message from Ann", body: "hello ✓ <b>", summary: "3 new messages", badge: 2,
  data: { type: "message", conversationId: "c1", messageId: "m1", seq: "12", notificationId: "herald-12", senderName: "Ann" },
};
const clear = (body) => ({ type: "message", conversationId: "c1", messageId: "m1", withheld: "encrypted", encrypted: base64URLEncode(body) });

test("keys made here decrypt what an independent implementation encrypted, with or without padding", async () => {
  assert.equal(pushDecryptionAvailable(), true);
  const keys = JSON.parse(JSON.stringify(await generatePushKeys())); // kept as JSON, read back
  assert.equal(b64(keys.p256dh).length, 65);
  assert.equal(b64(keys.auth).length, 16);
  assert.equal(keys.privateKey.kty, "EC");
  for (const padding of [0, 37]) {
    assert.deepEqual(await decryptPush(clear(encrypt(JSON.stringify(pushed), keys, { padding })), keys), pushed);
  }
  // A clear's plaintext has no message: the push's clear data has none either.
  const read = { badge: 0, data: { type: "read", conversationId: "c1", seq: "12" } };
  const body = encrypt(JSON.stringify(read), keys);
  assert.deepEqual(await decryptPush({ type: "read", conversationId: "c1", encrypted: base64URLEncode(body) }, keys), read);
  // Bytes or base64url alike.
  assert.equal(new TextDecoder().decode(await decryptPushBody(new Uint8Array(body), keys)), JSON.stringify(read));
});

async function refused(promise, code) {
  await assert.rejects(promise, (error) => error instanceof PushDecryptionError && error.code === code && error.message.length > 0);
}

test("a changed body, another device's keys and malformed bodies are refused, each with its code", async () => {
  const keys = await generatePushKeys();
  const body = encrypt(JSON.stringify(pushed), keys);
  for (const index of [0, 15, 30, 100, body.length - 1]) {
    const changed = Buffer.from(body);
    changed[index] ^= 1;
    await refused(decryptPush(clear(changed), keys), index >= 21 && index < 86 ? "malformed" : "undecryptable");
  }
  await refused(decryptPush(clear(body), await generatePushKeys()), "undecryptable");
  await refused(decryptPush(clear(body.subarray(0, 90)), keys), "malformed");
  await refused(decryptPush({ ...clear(body), encrypted: "not base64url!" }, keys), "malformed");
  await refused(decryptPush({ conversationId: "c1" }, keys), "malformed");
  const wrongSize = Buffer.from(body);
  wrongSize[20] = 64;
  await refused(decryptPush(clear(wrongSize), keys), "malformed");
  await refused(decryptPush(clear(encrypt(JSON.stringify(pushed), keys, { recordSize: 20 })), keys), "malformed");
  await refused(decryptPush(clear(body), { ...keys, auth: "AAAA" }), "keys");
  await refused(decryptPush(clear(body), { ...keys, privateKey: { kty: "EC" } }), "keys");
  await refused(decryptPush(clear(encrypt("not json", keys)), keys), "plaintext");
  await refused(decryptPush(clear(encrypt("[1]", keys)), keys), "plaintext");
  await refused(decryptPush(clear(body), keys, { crypto: {} }), "unsupported");
  assert.equal(pushDecryptionAvailable({}), false);
});

test("the plaintext must be about the push's clear conversation, message and kind, byte for byte; no longer than a push", async () => {
  const keys = await generatePushKeys();
  const body = encrypt(JSON.stringify(pushed), keys);
  for (const ids of [{ conversationId: "c2" }, { conversationId: "c1 " }, { conversationId: "C1" }, { messageId: "m2" },
    { messageId: undefined }, { conversationId: undefined }, { type: "message_deleted" }, { type: undefined }]) {
    await refused(decryptPush({ ...clear(body), ...ids }, keys), "mismatch");
  }
  const unicode = { ...pushed, data: { ...pushed.data, conversationId: "e\u0301" } };
  const sealed = encrypt(JSON.stringify(unicode), keys);
  await refused(decryptPush({ ...clear(sealed), conversationId: "\u00e9" }, keys), "mismatch"); // the same text, other bytes
  assert.deepEqual(await decryptPush({ ...clear(sealed), conversationId: "e\u0301" }, keys), unicode);
  await refused(decryptPush({ ...clear(body), encrypted: "A".repeat(MAX_ENCRYPTED_LENGTH + 1) }, keys), "malformed");
});

test("registerDevice sends the keys' public half and auth, never the private key", async () => {
  const keys = await generatePushKeys();
  const sent = [];
  const api = new API({ url: "https://chat.example.com", token: "t", fetch: async (url, init) => {
    sent.push(JSON.parse(init.body));
    return new Response(JSON.stringify({ deviceKey: "hdk_x" }), { status: 200, headers: { "content-type": "application/json" } });
  } });
  assert.deepEqual(await api.registerDevice("phone", "expo", "ExponentPushToken[x]", { permission: "granted", keys }), { deviceKey: "hdk_x" });
  await api.registerDevice("phone", "expo", "ExponentPushToken[x]");
  assert.deepEqual(sent, [
    { platform: "expo", token: "ExponentPushToken[x]", permission: "granted", keys: { p256dh: keys.p256dh, auth: keys.auth } },
    { platform: "expo", token: "ExponentPushToken[x]" },
  ]);
});
