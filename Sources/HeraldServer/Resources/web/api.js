// Herald's HTTP API and live stream, for the page (docs/protocol.md). No state about chats here: the API answers,
// and the stream delivers frames and says how the connection is.

/** An error the API answered with: `code` is stable (docs/protocol.md, Errors), `message` is for people. */
export class APIError extends Error {
  constructor(status, code, message, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** How long any one request may take before it counts as failed. */
const requestTimeout = 15_000;

/** The API of the server the page came from, as one signed-in user. */
export class API {
  /** `renew` (optional) resolves to a fresh token when the server says this one expired. */
  constructor(token, renew = null) {
    this.token = token;
    this.renew = renew;
  }

  /** A request; one the server refuses with `token_expired` is made again, once, with a renewed token. */
  async request(method, path, body) {
    try {
      return await this.send(method, path, body);
    } catch (error) {
      if (!(error instanceof APIError) || error.code !== "token_expired" || !this.renew) throw error;
      const used = this.token;
      const fresh = await this.renew(used);
      if (!fresh || fresh === used) throw error;
      this.token = fresh;
      return this.send(method, path, body);
    }
  }

  async send(method, path, body) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), requestTimeout);
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: {
          ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: controller.signal,
        cache: "no-store",
      });
    } catch (error) {
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

  /** One page of the user's conversations, newest activity first: {conversations, next}. */
  conversations(cursor = null, limit = 100) {
    const query = new URLSearchParams({ limit: String(limit) });
    if (cursor) query.set("cursor", cursor);
    return this.request("GET", `/v1/conversations?${query}`);
  }

  /** People to start a chat with, found by name or id: {users, next}. */
  users(q = "", after = null, limit = 20) {
    const query = new URLSearchParams({ q, limit: String(limit) });
    if (after) query.set("after", after);
    return this.request("GET", `/v1/users?${query}`);
  }

  createConversation({ kind, members, title }) {
    return this.request("POST", "/v1/conversations", { kind, members, title: title || null });
  }

  /** A group's changes (owners; anyone may remove themselves, which is leaving). */
  addMembers(conversation, members, history = "full") {
    return this.request("POST", `/v1/conversations/${encodeURIComponent(conversation)}/members`, { members, history });
  }

  removeMember(conversation, user) {
    return this.request("DELETE", `/v1/conversations/${encodeURIComponent(conversation)}/members/${encodeURIComponent(user)}`);
  }

  rename(conversation, title) {
    return this.request("PATCH", `/v1/conversations/${encodeURIComponent(conversation)}`, { title: title || null });
  }

  setOwner(conversation, user, owner) {
    return this.request(owner ? "PUT" : "DELETE", `/v1/conversations/${encodeURIComponent(conversation)}/owners/${encodeURIComponent(user)}`);
  }

  /** A page of messages, oldest first: the last `limit`, before `before` if given. */
  async messages(conversation, { before = null, limit = 50 } = {}) {
    const query = new URLSearchParams({ limit: String(limit) });
    if (before !== null) query.set("before", String(before));
    return (await this.request("GET", `/v1/conversations/${encodeURIComponent(conversation)}/messages?${query}`)).messages;
  }

  /** Moves the read marker; `device` (this browser's id) is left out of the read-clears-others pushes. */
  markRead(conversation, upTo, device = null) {
    return this.request("POST", `/v1/conversations/${encodeURIComponent(conversation)}/read`,
      device ? { upTo, device } : { upTo });
  }

  setMuted(conversation, muted) {
    return this.request(muted ? "PUT" : "DELETE", `/v1/conversations/${encodeURIComponent(conversation)}/mute`);
  }

  /** A chat's level ("all", "mentions", "nothing"; null: the default), for ever or until an ISO instant. */
  setLevel(conversation, level, until = null) {
    const body = level === null ? { level: null } : { level, ...(until ? { until } : {}) };
    return this.request("PUT", `/v1/conversations/${encodeURIComponent(conversation)}/notifications`, body);
  }

  /** The user's notification settings (default level, snooze, quiet hours). */
  notificationSettings() {
    return this.request("GET", "/v1/me/notifications");
  }

  /** Changes the settings given (the others stay); the settings as kept. */
  changeNotificationSettings(change) {
    return this.request("PUT", "/v1/me/notifications", change);
  }

  /** The server's VAPID public key (base64url), which a Web Push subscription is made with. */
  async webPushKey() {
    return (await this.request("GET", "/v1/webpush/key")).publicKey;
  }

  /** Registers (or re-registers) a device for pushes: `token` is the platform's token, for `webpush` the
   *  subscription's JSON. */
  registerDevice(id, platform, token) {
    return this.request("PUT", `/v1/devices/${encodeURIComponent(id)}`, { platform, token });
  }

  removeDevice(id) {
    return this.request("DELETE", `/v1/devices/${encodeURIComponent(id)}`);
  }

  /** The demo people, or null when the server does not run the demo. */
  static async demoPeople() {
    try {
      return (await new API(null).request("GET", "/v1/demo/people")).people;
    } catch {
      return null;
    }
  }

  /** A token for a demo person (demo mode only). */
  static demoToken(user) {
    return new API(null).request("POST", "/v1/demo/tokens", { user });
  }
}

/** Codes of a stream error frame that mean the token is no good: signing in again is the only way on. */
export const tokenErrors = new Set(["missing_token", "invalid_token", "token_expired"]);

/**
 * The live stream: one WebSocket at a time (a token that expired renewed with `renew`, when given), reconnected with back-off (0.5 s doubling to 5 s, with jitter) and
 * resumed with `after` = the largest `seq` seen. `onFrame(frame)` gets every frame; `onState(state)` gets
 * "connecting", "live" (after `ready`) or "reconnecting". Frames sent while not connected wait for the next
 * connection; `onOpen()` is called on each connection so the caller can say `focus` and `app` again. `device`
 * names this browser, so the server sends its Web Push subscription nothing while the stream is connected.
 */
export class Stream {
  constructor({ token, device = null, onFrame, onState, onOpen, onRefused, renew = null }) {
    this.token = token;
    this.renew = renew;
    this.device = device;
    this.onFrame = onFrame;
    this.onState = onState;
    this.onOpen = onOpen;
    this.onRefused = onRefused;
    this.lastSeq = null;
    this.socket = null;
    this.backoff = 500;
    this.stopped = false;
    this.retryTimer = null;
    this.state = null;
  }

  start() {
    this.stopped = false;
    this.connect("connecting");
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.socket?.close(1000, "signed out");
    this.socket = null;
  }

  /** Sends a frame now if connected; false if it could not be sent (the caller keeps what must survive). */
  send(frame) {
    if (this.socket?.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  /** Remembers the largest `seq` seen, to resume after it. */
  saw(seq) {
    if (typeof seq === "number" && (this.lastSeq === null || seq > this.lastSeq)) this.lastSeq = seq;
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.onState(state);
  }

  connect(state) {
    if (this.stopped) return;
    this.setState(state);
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const query = new URLSearchParams({ token: this.token });
    if (this.device) query.set("device", this.device);
    if (this.lastSeq !== null) query.set("after", String(this.lastSeq));
    const socket = new WebSocket(`${scheme}//${location.host}/v1/stream?${query}`);
    this.socket = socket;
    let refused = null;
    socket.onopen = () => this.onOpen();
    socket.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type === "error" && tokenErrors.has(frame.code)) {
        refused = frame;
        return;
      }
      if (frame.type === "message") this.saw(frame.message?.seq);
      this.onFrame(frame);
      if (frame.type === "ready") {
        this.saw(frame.seq);
        this.backoff = 500;
        this.setState("live");
      }
    };
    socket.onclose = () => {
      if (this.socket !== socket || this.stopped) return;
      this.socket = null;
      if (refused?.code === "token_expired" && this.renew) {
        // An expired token is renewed and the stream goes on where it was (`after`), its unsent frames kept.
        const used = this.token;
        this.renew(used).then(
          (fresh) => {
            if (this.stopped) return;
            if (!fresh || fresh === used) return this.refuse(refused);
            this.token = fresh;
            this.connect("reconnecting");
          },
          () => this.refuse(refused),
        );
        return;
      }
      if (refused) {
        this.refuse(refused);
        return;
      }
      const delay = this.backoff * (0.75 + Math.random() / 2);
      this.backoff = Math.min(this.backoff * 2, 5_000);
      this.setState("reconnecting");
      this.retryTimer = setTimeout(() => this.connect("reconnecting"), delay);
    };
  }

  /** The server refused the token for good: no more connecting. */
  refuse(frame) {
    if (this.stopped) return;
    this.stopped = true;
    this.onRefused(frame);
  }

  /** Drops the current connection to start again (after a failure the caller noticed). */
  restart() {
    this.socket?.close(4000, "restart");
  }
}
