// The signed-in user: where the server is, the token, the id this phone registered for pushes, and the Herald client
// made from them. Plain JavaScript with its storage handed in (expo-secure-store in the app, a Map in the tests).

import { API, HeraldClient, LiveNotifications, generatePushKeys, pushDecryptionAvailable } from "@herald-chat/client";

const KEYS = {
  server: "herald.server", token: "herald.token", device: "herald.device", pushKeys: "herald.pushKeys", deviceKey: "herald.deviceKey",
};

/** The user id a token names (its `sub`), or null when it is not a JWT. The app's backend decides what it holds; the
 *  server checks the signature, this only reads who it is for. */
export function userOfToken(token) {
  const part = typeof token === "string" ? token.split(".")[1] : undefined;
  if (!part) return null;
  try {
    const base64 = part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "=");
    const claims = JSON.parse(decodeURIComponent(Array.from(atob(base64), (c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("")));
    return typeof claims.sub === "string" && claims.sub ? claims.sub : null;
  } catch {
    return null;
  }
}

/** The server's address as typed: trimmed, without a trailing slash, `http://` added when no scheme was given. */
export function serverAddress(typed) {
  const text = String(typed ?? "").trim().replace(/\/+$/, "");
  if (!text) return "";
  return /^https?:\/\//i.test(text) ? text : `http://${text}`;
}

/**
 * Storage of the sign-in and the device id. `storage` has `getItemAsync`, `setItemAsync` and `deleteItemAsync`
 * (expo-secure-store's names: the token stays in the Keychain or the Android Keystore).
 */
export class SignInStore {
  constructor(storage, makeID = defaultID) {
    this.storage = storage;
    this.makeID = makeID;
  }

  /** The saved sign-in, `{server, token, user}`, or null. */
  async load() {
    const [server, token] = await Promise.all([this.storage.getItemAsync(KEYS.server), this.storage.getItemAsync(KEYS.token)]);
    const user = userOfToken(token);
    return server && token && user ? { server, token, user } : null;
  }

  async save({ server, token }) {
    await this.storage.setItemAsync(KEYS.server, server);
    await this.storage.setItemAsync(KEYS.token, token);
  }

  async forget() {
    await this.storage.deleteItemAsync(KEYS.token);
    await this.storage.deleteItemAsync(KEYS.deviceKey);
  }

  /** This install's device id: made once, kept, the same for every user who signs in here. */
  async deviceID() {
    const kept = await this.storage.getItemAsync(KEYS.device);
    if (kept) return kept;
    const made = `expo-${this.makeID()}`;
    await this.storage.setItemAsync(KEYS.device, made);
    return made;
  }
}

/**
 * This install's push keys (`{p256dh, auth, privateKey}`, made once and kept beside the device id), with which the
 * server encrypts its pushes when it runs with `HERALD_PUSH_CONTENT=encrypted`; null where there is no Web Crypto to
 * make or use them (React Native without a Web Crypto installed): the device then registers without keys, and the
 * server sends it ids only, its words fetched with the device key.
 */
export async function pushKeys(storage) {
  const kept = await storedPushKeys(storage);
  if (kept || !pushDecryptionAvailable()) return kept;
  const made = await generatePushKeys();
  await storage.setItemAsync(KEYS.pushKeys, JSON.stringify(made));
  return made;
}

/** The push keys kept, or null (none made, or unreadable). The background task reads them. */
export async function storedPushKeys(storage) {
  try {
    const kept = JSON.parse((await storage.getItemAsync(KEYS.pushKeys)) ?? "null");
    return kept && typeof kept.p256dh === "string" && typeof kept.auth === "string" && kept.privateKey ? kept : null;
  } catch {
    return null;
  }
}

/** Keeps the device key `registerDevice` answered (`hdk_…`): with it the background task reads the words of a push
 *  that withheld them or could not be decrypted. Each registration's key ends the one before. */
export async function keepDeviceKey(storage, deviceKey) {
  if (typeof deviceKey === "string" && deviceKey) await storage.setItemAsync(KEYS.deviceKey, deviceKey);
}

/** What reads a pushed message's words with the kept device key, `(conversationId, messageId) => PushedMessage`
 *  (`API.pushedMessage`), or null when no server or key is kept. The background task has no user token. */
export async function withheldReader(storage) {
  const [server, deviceKey] = await Promise.all([storage.getItemAsync(KEYS.server), storage.getItemAsync(KEYS.deviceKey)]);
  if (!server || !deviceKey) return null;
  const api = new API({ url: server, token: deviceKey });
  return (conversationId, messageId) => api.pushedMessage(conversationId, messageId);
}

function defaultID() {
  if (typeof globalThis.crypto?.randomUUID === "function") return globalThis.crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/** The people a server run with `--demo` offers (`[{id, name}]`), or null when it runs without the demo. */
export function demoPeople(server) {
  return API.demoPeople({ url: server });
}

/** A demo person's token, from a server run with `--demo`. */
export async function demoToken(server, user) {
  return (await API.demoToken(user, { url: server })).token;
}

/**
 * Checks a sign-in against the server before it is kept: the address answers, and the token is taken (one request
 * with it). Resolves to `{server, token, user}`; rejects with an `Error` whose message says what is wrong.
 */
export async function checkSignIn({ server: typed, token: pasted }) {
  const server = serverAddress(typed);
  const token = String(pasted ?? "").trim();
  if (!server) throw new Error("Enter the server's address, e.g. http://192.168.1.20:8080");
  const user = userOfToken(token);
  if (!user) throw new Error("That is not a token: paste the whole eyJ… text your backend (or herald serve --demo) gave");
  try {
    await new API({ url: server, token }).conversations({ limit: 1 });
  } catch (error) {
    if (error.code === "network") throw new Error(`${server} cannot be reached: is herald serve running with --host 0.0.0.0, and is the phone on the same network?`);
    throw new Error(`The server refused the token (${error.code}): ${error.message}`);
  }
  return { server, token, user };
}

/** Tells `live` whether the app is in the foreground, now and at each change of React Native's `AppState` ("active"
 *  is the foreground; "background" and iOS's "inactive" are not); returns the function that stops. */
export function followAppState(live, AppState) {
  const state = (appState) => (appState === "active" ? "foreground" : "background");
  live.setAppState(state(AppState.currentState));
  const subscription = AppState.addEventListener("change", (appState) => live.setAppState(state(appState)));
  return () => subscription.remove();
}

/**
 * The user's live notifications: a client for the server with this token and device, wired to the engine. The
 * stream closes in the background (the server's pushes take over at once) and opens again in the foreground.
 * `renew` (optional) resolves to a fresh token when one expired: your backend's, or null to sign out.
 */
export function connect({ server, token, user, deviceID, renew = null, WebSocket = null, config }) {
  const client = new HeraldClient({ url: server, token, renew, device: deviceID, ...(WebSocket ? { WebSocket } : {}) });
  return new LiveNotifications({ client, userID: user, ...(config ? { config } : {}) });
}
