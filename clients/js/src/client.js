// The client an app holds for as long as a user is signed in: the HTTP API, the live stream, focus and app state
// told to the server after every reconnect, a send queue retried until the server acknowledges, and one token
// renewal shared by all of them. Its events are the stream's, named.

import { API, APIError } from "./api.js";
import { Stream } from "./stream.js";

/** Codes of a refused send that are worth trying again (with the same id, so it is stored once). */
const retriedCodes = new Set(["rate_limited", "database_unavailable", "storage_full", "internal", "server_busy"]);

/** The least time between two `received` frames, in ms: the first message after a quiet spell is confirmed at once,
 *  a burst by one frame a second, well within the stream's frame budget and the server's grace period (5 s). */
export const confirmationInterval = 1000;

/** Entry kinds the `member` event carries (docs/protocol.md, "Groups that change"). */
export const memberEvents = new Set(["member_added", "member_removed", "member_left", "owner_added", "owner_removed", "renamed", "deleted"]);

/** A random id for a message (a UUID where the runtime makes them). */
export function messageID() {
  if (typeof globalThis.crypto?.randomUUID === "function") return globalThis.crypto.randomUUID();
  const hex = () => Math.floor(Math.random() * 0x1_0000_0000).toString(16).padStart(8, "0");
  return `${hex()}-${hex()}-${hex()}-${hex()}`;
}

/**
 * One signed-in user's connection to Herald.
 *
 * ```js
 * const client = new HeraldClient({ url: "https://chat.example.com", token, renew: fetchNewToken, device: "phone-1" });
 * client.on("message", ({ message, conversation, sender }) => ...);
 * client.connect();
 * client.focus("c1");                     // the chat on screen (null: none)
 * client.setAppState("background");       // or "foreground"
 * await client.send("c1", "On my way");   // resolves when stored: {id, seq}
 * ```
 *
 * Events (`on(name, listener)` returns a function that removes the listener):
 * - `state`: "connecting", "live", "reconnecting", "paused", "refused" or "closed";
 * - `open`: a connection opened (focus and app state are told to the server by then; the catch-up follows);
 * - `message`: `{message, conversation, sender}`, every new entry (messages and events, your own included), once;
 * - `member`: the same, for a group's change (`message.event.type` is one of `memberEvents`);
 * - `ready`: `{seq, horizon?}`, the catch-up is over (`horizon`: retention deleted what came before it);
 * - `ack`: `{id, seq}`, a send stored; `refused`: `{id, code, message}`, a send refused for good;
 * - `level`: `{conversation, level, until}`; `muted`: `{conversation, muted}`; `notifications`: the settings;
 * - `pushed`: `{conversation, message, seq}`, the server pushed that message to this `device` (its push is the
 *   notification: `LiveNotifications` posts none of its own);
 * - `error`: an `error` frame not about a send; `tokenRefused`: the token is no good and could not be renewed;
 * - `frame`: every frame, as it came.
 *
 * `url`: the server ("" in a page it served). `token`: the user's JWT. `renew(usedToken)`: resolves to a fresh token
 * when one expired (optional; without it an expired token ends the connection with `tokenRefused`). `device`: the id
 * this device registered for pushes (optional). `after`: the last `seq` a previous run saw, to catch up from.
 * `WebSocket`, `fetch`: where the runtime's own are not the ones to use.
 *
 * Once messages were handed to the `message` (or `frame`) listeners, the client confirms them to the server
 * (`{"type": "received", "through": seq}`, at most every `confirmationInterval` ms): a connected device holds back a
 * push only for what it confirmed, so a frozen app is pushed and a running one is not.
 */
export class HeraldClient {
  constructor({ url = "", token, renew = null, device = null, after = null, WebSocket = null, fetch = null, backoff = {}, heartbeat } = {}) {
    this.listeners = new Map();
    this.renewing = null;
    this.userRenew = renew;
    const shared = renew ? (used) => this.renewToken(used) : null;
    this.api = new API({ url, token, renew: shared, fetch });
    this.stream = new Stream({
      url, token, device, after, renew: shared, WebSocket, backoff, heartbeat,
      onFrame: (frame) => this.receive(frame),
      onState: (state) => this.stateChanged(state),
      onOpen: () => {
        this.confirmed = 0;
        this.sayWhereIAm();
        this.emit("open", null);
      },
      onRefused: (frame) => {
        this.emit("tokenRefused", frame);
        this.stateChanged("refused");
      },
    });
    this.state = "closed";
    this.openConversation = null;
    this.appState = "foreground";
    this.live = false;
    this.pending = new Map(); // id → {frame, resolve, reject, timer}
    this.paused = false;
    // Confirmations: the furthest seq handed to the listeners, the last one told on this connection and when.
    this.confirmable = 0;
    this.confirmed = 0;
    this.confirmedAt = -Infinity;
    this.confirmTimer = null;
  }

  /** The token in use (renewed ones included). */
  get token() {
    return this.api.token;
  }

  /** The largest `seq` seen: where the next connection resumes, and what an app keeps to resume after a restart. */
  get lastSeq() {
    return this.stream.lastSeq;
  }

  /** The sends not acknowledged yet, oldest first: `{id, conversation, text}`. */
  get unsent() {
    return [...this.pending.values()].map(({ frame }) => ({ id: frame.id, conversation: frame.conversation, text: frame.text }));
  }

  /** Listens to an event (see the class); returns the function that stops listening. */
  on(name, listener) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(listener);
    return () => this.listeners.get(name)?.delete(listener);
  }

  emit(name, value) {
    for (const listener of [...(this.listeners.get(name) ?? [])]) {
      try {
        listener(value);
      } catch (error) {
        // A listener's fault is the app's: it must not stop the others, nor the stream.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  /** Opens the stream (and keeps it open, reconnecting, until `close`). */
  connect() {
    this.stream.start();
  }

  /** Closes the stream until `resume` (state "paused"): the server knows at once that this device is away and pushes
   *  to it, rather than waiting for confirmations a suspended app cannot send. Unsent messages wait. */
  pause() {
    if (this.paused) return;
    this.paused = true;
    clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    this.stream.stop();
    this.live = false;
    this.stateChanged("paused");
  }

  /** Opens the stream again after `pause`, resuming after the last `seq` seen. */
  resume() {
    if (!this.paused) return;
    this.paused = false;
    this.stream.start();
  }

  /** Closes the stream; unsent messages stay queued for the next `connect`. */
  close() {
    this.paused = false;
    clearTimeout(this.confirmTimer);
    this.confirmTimer = null;
    this.stream.stop();
    this.live = false;
    this.stateChanged("closed");
  }

  /** The conversation on screen (null: the list, settings, …): the server pushes nothing for it to this user. */
  focus(conversation) {
    this.openConversation = conversation ?? null;
    this.stream.send({ type: "focus", conversation: this.openConversation });
  }

  /** "foreground" or "background": with every device in the background, the server pushes. */
  setAppState(state) {
    if (state !== "foreground" && state !== "background") throw new TypeError(`unknown app state ${state}`);
    this.appState = state;
    this.stream.send({ type: "app", state });
  }

  /**
   * Sends a message: queued, sent as soon as the stream is live, and sent again (with the same id, so it is stored
   * once) after each reconnect until acknowledged. Resolves to `{id, seq}` when stored; rejects with an `APIError`
   * when refused for good (`not_a_member`, `text_too_long`, …). `rate_limited` and a busy database wait and go again.
   */
  send(conversation, text, { id = messageID(), imageURL = null, mentions = [], mentionsAll = false } = {}) {
    const frame = {
      type: "send", conversation, id, text, ...(imageURL ? { imageURL } : {}),
      ...(mentions.length ? { mentions } : {}), ...(mentionsAll ? { mentionsAll: true } : {}),
    };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { frame, resolve, reject, timer: null });
      if (this.live) this.stream.send(frame);
    });
  }

  /** A send's wait is over: it goes again now if live (else at the next `ready`). */
  resend(id) {
    const send = this.pending.get(id);
    if (!send) return;
    send.timer = null;
    if (this.live) this.stream.send(send.frame);
  }

  receive(frame) {
    this.emit("frame", frame);
    switch (frame.type) {
      case "message": {
        const incoming = { message: frame.message, conversation: frame.conversation, sender: frame.sender };
        this.emit("message", incoming);
        if (memberEvents.has(frame.message?.event?.type)) this.emit("member", incoming);
        if (this.takesMessages()) this.confirm(frame.message?.seq);
        break;
      }
      case "ready":
        this.live = true;
        this.emit("ready", { seq: frame.seq, ...(frame.horizon !== undefined ? { horizon: frame.horizon } : {}) });
        // Everything of the user's up to here was handed on (the catch-up), or there was nothing.
        if (this.takesMessages()) this.confirm(Math.max(frame.seq ?? 0, this.stream.lastSeq ?? 0));
        for (const send of this.pending.values()) {
          if (!send.timer) this.stream.send(send.frame);
        }
        break;
      case "ack": {
        const send = this.pending.get(frame.id);
        if (send) {
          clearTimeout(send.timer);
          this.pending.delete(frame.id);
          send.resolve({ id: frame.id, seq: frame.seq });
        }
        this.emit("ack", { id: frame.id, seq: frame.seq });
        break;
      }
      case "error": {
        const send = frame.ref ? this.pending.get(frame.ref) : null;
        if (!send) {
          this.emit("error", frame);
        } else if (retriedCodes.has(frame.code)) {
          clearTimeout(send.timer);
          send.timer = setTimeout(() => this.resend(frame.ref), Math.max(1, frame.retryAfter ?? 1) * 1000);
        } else {
          this.pending.delete(frame.ref);
          send.reject(new APIError(null, frame.code, frame.message));
          this.emit("refused", { id: frame.ref, code: frame.code, message: frame.message });
        }
        break;
      }
      case "level":
        this.emit("level", { conversation: frame.conversation, level: frame.level ?? null, until: frame.until ?? null });
        break;
      case "muted":
        this.emit("muted", { conversation: frame.conversation, muted: frame.muted });
        break;
      case "notifications":
        this.emit("notifications", frame.settings);
        break;
      case "pushed":
        this.emit("pushed", { conversation: frame.conversation, message: frame.message, seq: frame.seq });
        break;
      default:
        break;
    }
  }

  /** Whether anyone takes the messages in (a confirmation says they were). */
  takesMessages() {
    return (this.listeners.get("message")?.size ?? 0) + (this.listeners.get("frame")?.size ?? 0) > 0;
  }

  /** The messages up to `seq` were handed on: confirmed at once, or with the next confirmation's turn (a burst is
   *  one frame). */
  confirm(seq) {
    if (typeof seq !== "number" || seq <= this.confirmable) return;
    this.confirmable = seq;
    if (this.confirmTimer !== null) return;
    const wait = Math.max(0, this.confirmedAt + confirmationInterval - Date.now());
    this.confirmTimer = setTimeout(() => {
      this.confirmTimer = null;
      if (this.confirmable <= this.confirmed) return;
      // Not connected: the next `ready` confirms again.
      if (this.stream.send({ type: "received", through: this.confirmable })) {
        this.confirmed = this.confirmable;
        this.confirmedAt = Date.now();
      }
    }, wait);
  }

  stateChanged(state) {
    if (state !== "live") this.live = false;
    if (state === this.state) return;
    this.state = state;
    this.emit("state", state);
  }

  /** After every (re)connection: the server keeps focus and app state per connection. */
  sayWhereIAm() {
    this.stream.send({ type: "focus", conversation: this.openConversation });
    this.stream.send({ type: "app", state: this.appState });
  }

  /** One renewal at a time, shared by the API and the stream: a token renewed by one serves the other. */
  async renewToken(used) {
    if (this.api.token !== used) return this.api.token;
    this.renewing ??= Promise.resolve(this.userRenew(used)).then((fresh) => {
      if (fresh) {
        this.api.token = fresh;
        this.stream.token = fresh;
      }
      return fresh;
    }).finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }
}
