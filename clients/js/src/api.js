// Herald's HTTP API (docs/protocol.md), as one signed-in user. No state about chats here: the API answers, the
// caller keeps what it needs. Runs wherever `fetch` does (browsers, React Native, Node 20+).

/** An error the API answered with: `code` is stable (docs/protocol.md, Errors), `message` is for people.
 *  `status` is the HTTP status (0: the server could not be reached); `retryAfter` is in seconds, when given. */
export class APIError extends Error {
  constructor(status, code, message, retryAfter = null) {
    super(message);
    this.name = "APIError";
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** How long one request may take before it counts as failed, in milliseconds. */
export const requestTimeout = 15_000;

/** `base` without a trailing slash ("" stays "": the page's own server). */
export function trimBase(base) {
  return (base ?? "").replace(/\/+$/, "");
}

/** A path segment: an id put into a URL. */
const segment = encodeURIComponent;

/** A query string of the fields that have a value (null and undefined are left out). Written out rather than with
 *  `URLSearchParams`, whose React Native implementation lacked `set` for years. */
export function queryString(fields) {
  return Object.entries(fields)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`)
    .join("&");
}

/**
 * The API of one Herald server as one user.
 *
 * `url` is the server's base URL (`https://chat.example.com`; "" in a page the server itself served). `renew`
 * (optional) is called with the token that expired and resolves to a fresh one: the request is made again, once.
 * `fetch` may be given where the global one is not the one to use.
 */
export class API {
  constructor({ url = "", token = null, renew = null, fetch: fetcher = null } = {}) {
    this.url = trimBase(url);
    this.token = token;
    this.renew = renew;
    this.fetch = fetcher ?? ((...args) => globalThis.fetch(...args));
  }

  /** A request; one the server refuses with `token_expired` is made again, once, with a renewed token. */
  async request(method, path, body) {
    // The token this request carries, read before it goes: another request (or the stream) may renew it while this
    // one is out, and then the renewal already made is the one to use, not a second.
    const used = this.token;
    try {
      return await this.send(method, path, body);
    } catch (error) {
      if (!(error instanceof APIError) || error.code !== "token_expired" || !this.renew) throw error;
      const fresh = this.token !== used ? this.token : await this.renew(used);
      if (!fresh || fresh === used) throw error;
      this.token = fresh;
      return this.send(method, path, body);
    }
  }

  /** One request as it is, answered with the JSON body (null for 204), or thrown as an `APIError`. */
  async send(method, path, body) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), requestTimeout);
    let response;
    try {
      response = await this.fetch(this.url + path, {
        method,
        headers: {
          ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
        cache: "no-store",
      });
    } catch {
      throw new APIError(0, "network", "the server cannot be reached");
    } finally {
      clearTimeout(timer);
    }
    if (response.status === 204) return null;
    const payload = await response.json().catch(() => null);
    if (!response.ok) {
      const error = payload?.error ?? {};
      const retryAfter = Number(response.headers.get("Retry-After")) || null;
      throw new APIError(response.status, error.code ?? "unknown", error.message ?? response.statusText, retryAfter);
    }
    return payload;
  }

  // Conversations

  /** One page of the user's conversations, newest activity first: `{conversations, next}`. `muted`: only those at
   *  `nothing` now; `levelSet`: only those with a level of their own. */
  conversations({ cursor = null, limit = 100, muted = false, levelSet = false } = {}) {
    const query = queryString({ limit, cursor: cursor || null, muted: muted ? "true" : null, level: levelSet ? "set" : null });
    return this.request("GET", `/v1/conversations?${query}`);
  }

  /** One conversation as the list shows it (members, owners, last message, unread count, level). */
  conversation(id) {
    return this.request("GET", `/v1/conversations/${segment(id)}`);
  }

  /** Starts a conversation: `kind` "direct" (one other member) or "group". */
  createConversation({ kind, members, title = null }) {
    return this.request("POST", "/v1/conversations", { kind, members, title: title || null });
  }

  /** Adds people to a group (owners only); `history` "none": they see only what follows. */
  addMembers(conversation, members, history = "full") {
    return this.request("POST", `/v1/conversations/${segment(conversation)}/members`, { members, history });
  }

  /** Removes a member (owners), or leaves (anyone, for themselves). */
  removeMember(conversation, user) {
    return this.request("DELETE", `/v1/conversations/${segment(conversation)}/members/${segment(user)}`);
  }

  /** Renames a group (owners); "" or null: no title. */
  rename(conversation, title) {
    return this.request("PATCH", `/v1/conversations/${segment(conversation)}`, { title: title || null });
  }

  /** Makes a member an owner, or an owner a member only. */
  setOwner(conversation, user, owner) {
    return this.request(owner ? "PUT" : "DELETE", `/v1/conversations/${segment(conversation)}/owners/${segment(user)}`);
  }

  /** Deletes a group for everyone (owners). */
  deleteConversation(conversation) {
    return this.request("DELETE", `/v1/conversations/${segment(conversation)}`);
  }

  /** People to start a chat with, found by name or id: `{users, next}`. */
  users(q = "", { after = null, limit = 20 } = {}) {
    return this.request("GET", `/v1/users?${queryString({ q, limit, after: after || null })}`);
  }

  // Messages

  /** A page of history, oldest first: the last `limit` (before `before` if given), or the first after `after`. */
  async messages(conversation, { before = null, after = null, limit = 50 } = {}) {
    const query = queryString({ limit, before, after });
    return (await this.request("GET", `/v1/conversations/${segment(conversation)}/messages?${query}`)).messages;
  }

  /** Posts a message; `id` (the client's, required) makes a retry safe: the same id is stored once. */
  postMessage(conversation, { id, text, imageURL = null, mentions = [], mentionsAll = false }) {
    return this.request("POST", `/v1/conversations/${segment(conversation)}/messages`, {
      id, text, ...(imageURL ? { imageURL } : {}), ...(mentions.length ? { mentions } : {}), ...(mentionsAll ? { mentionsAll } : {}),
    });
  }

  /**
   * Posts the Reply to a notification under `id` (`notificationAnswer`'s, made from the notification and the text, so
   * a retry is stored once). Should another member already hold that id (they could guess it and post first to block
   * the Reply), the server answers `id_conflict` (a repeat of one's own post is answered with it instead): the Reply is
   * posted once more under the id with 16 random hex digits after it, which no one can take ahead.
   */
  async postReply(conversation, { id, text }) {
    try {
      return await this.postMessage(conversation, { id, text });
    } catch (error) {
      if (error?.code !== "id_conflict") throw error;
      const random = typeof globalThis.crypto?.getRandomValues === "function"
        ? globalThis.crypto.getRandomValues(new Uint8Array(8))
        : Array.from({ length: 8 }, () => Math.floor(Math.random() * 256));
      const suffix = Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("");
      return this.postMessage(conversation, { id: `${id}-${suffix}`, text });
    }
  }

  /** Edits the text of one's own message (within the server's edit window); answers it as it is now (`edited`). */
  editMessage(conversation, message, { text, mentions = [], mentionsAll = false }) {
    return this.request("PATCH", `/v1/conversations/${segment(conversation)}/messages/${segment(message)}`, {
      text, ...(mentions.length ? { mentions } : {}), ...(mentionsAll ? { mentionsAll } : {}),
    });
  }

  /** Deletes a message (one's own, or anyone's in a group one owns); answers its tombstone (`deleted`). */
  deleteMessage(conversation, message) {
    return this.request("DELETE", `/v1/conversations/${segment(conversation)}/messages/${segment(message)}`);
  }

  /** Moves the read marker to `upTo`; `device` (this device's id) is left out of the read-clears-others pushes. */
  markRead(conversation, upTo, device = null) {
    return this.request("POST", `/v1/conversations/${segment(conversation)}/read`, device ? { upTo, device } : { upTo });
  }

  // Who hears what

  /** Mutes (the level `nothing` for ever) or unmutes (back to the default level). */
  setMuted(conversation, muted) {
    return this.request(muted ? "PUT" : "DELETE", `/v1/conversations/${segment(conversation)}/mute`);
  }

  /** A chat's level ("all", "mentions", "nothing"; null: the default), for ever or until an instant (a `Date` or
   *  an ISO 8601 string). */
  setLevel(conversation, level, until = null) {
    const instant = until instanceof Date ? until.toISOString() : until;
    const body = level === null ? { level: null } : { level, ...(instant ? { until: instant } : {}) };
    return this.request("PUT", `/v1/conversations/${segment(conversation)}/notifications`, body);
  }

  /** The user's notification settings (default level, snooze, quiet hours). */
  notificationSettings() {
    return this.request("GET", "/v1/me/notifications");
  }

  /** Changes the settings given (the others stay); resolves to the settings as kept. */
  changeNotificationSettings(change) {
    return this.request("PUT", "/v1/me/notifications", change);
  }

  /** Do not disturb until an instant (a `Date` or ISO string); null ends it. */
  snooze(until) {
    return this.changeNotificationSettings({ snoozeUntil: until instanceof Date ? until.toISOString() : until });
  }

  // Why a phone did not ring

  /** The troubleshooter: `{checkedAt, checks, devices}`, the checks in a fixed order ("devices", "permission",
   *  "level", "snooze", "quiet_hours", "pushes", "confirmations"), each `{id, state, title, detail, action}` in words
   *  for people (`state` "ok", "warning" or "problem"), and the user's devices with their last pushes. */
  notificationCheck() {
    return this.request("GET", "/v1/me/notifications/check");
  }

  /** A message's delivery trail as the user may see it: what was decided for them and why, and what each of their
   *  devices' push services answered (`{conversation, message, trailHours, members}`). `not_a_member` when the user
   *  is not a member of the conversation now; `message_not_found` for a message they cannot see. */
  deliveries(conversation, message) {
    return this.request("GET", `/v1/me/deliveries?${queryString({ conversation, message })}`);
  }

  // Devices

  /** The user's devices registered for pushes. */
  async devices() {
    return (await this.request("GET", "/v1/devices")).devices;
  }

  /** Registers (or re-registers) a device for pushes: `platform` "apns", "fcm", "expo" or "webpush"; `token` is
   *  the platform's token (for `webpush` the subscription's JSON); `permission` (optional) is what the device's
   *  system says of notifications now, as `reportPermission` takes it. Answers `{deviceKey}`: the device's new key,
   *  which reads what a private push withheld (docs/push.md, "Private pushes"). `keys` (apns, fcm, expo): the
   *  device's push keys (`generatePushKeys`), of which only the public key and auth are sent, so the server can
   *  encrypt its pushes to it (docs/push.md, "Encrypted pushes"). */
  registerDevice(id, platform, token, { permission = null, keys = null } = {}) {
    return this.request("PUT", `/v1/devices/${segment(id)}`, {
      platform, token, ...(permission ? { permission } : {}), ...(keys ? { keys: { p256dh: keys.p256dh, auth: keys.auth } } : {}),
    });
  }

  /** Tells the server whether the device's system lets the app notify: "granted", "denied", "provisional" (iOS
   *  quiet delivery), "not_asked" (iOS notDetermined, a browser's "default") or "unknown". The troubleshooter reads
   *  it; `not_found` when the user has no such device. */
  reportPermission(id, permission) {
    return this.request("PUT", `/v1/devices/${segment(id)}/permission`, { permission });
  }

  /** Sends the device a test notification now, and answers what its push service said: `{device, platform, outcome,
   *  providerID, reason}`, `outcome` one of "sent", "logged", "retry", "device_removed", "refused", "redirected",
   *  "no_provider". `not_found` when it is not the user's; `rate_limited` past 5 a minute (`retryAfter`). */
  testDevice(id) {
    return this.request("POST", `/v1/devices/${segment(id)}/test`);
  }

  /** Stops pushes to a device (at sign-out). */
  removeDevice(id) {
    return this.request("DELETE", `/v1/devices/${segment(id)}`);
  }

  /** What was pushed to this device whose push withheld its words (`withheld`: `sender`, `none`), or that it could not
   *  decrypt (`encrypted`): made with the device's key as this API's `token` (`registerDevice` answered it), since a
   *  background task or extension has no user token. `{title, body, data, message}`; `not_found` for anything not
   *  pushed to this device, `invalid_device_key` for a key no device has. */
  async pushedMessage(conversation, message) {
    return this.request("GET", `/v1/push/conversations/${segment(conversation)}/messages/${segment(message)}`);
  }


  /** The server's VAPID public key (base64url), which a Web Push subscription is made with. */
  async webPushKey() {
    return (await this.request("GET", "/v1/webpush/key")).publicKey;
  }

  // Demo (a server run with --demo only)

  /** The demo people, or null when the server does not run the demo. */
  static async demoPeople(options = {}) {
    try {
      return (await new API(options).request("GET", "/v1/demo/people")).people;
    } catch {
      return null;
    }
  }

  /** A token for a demo person: `{token}`. */
  static demoToken(user, options = {}) {
    return new API(options).request("POST", "/v1/demo/tokens", { user });
  }
}
