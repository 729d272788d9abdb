// Herald's live stream (docs/protocol.md, "The stream"): one WebSocket at a time, resumed with `after`, reconnected
// with back-off and jitter, its token renewed when it expired. It says how the connection is and hands over every
// frame; what the frames mean is the caller's (HeraldClient, or the web page).

import { queryString, trimBase } from "./api.js";

/** Codes of a stream error frame that mean the token is no good: signing in again (or renewing) is the only way on. */
export const tokenErrors = new Set(["missing_token", "invalid_token", "token_expired"]);

/** A WebSocket's `readyState` while connecting, and once open (the constants are the same in every runtime). */
const CONNECTING = 0;
const OPEN = 1;

/** The stream's URL with `query` (a query string): `url`'s scheme turned into `ws:`/`wss:`; with no `url`, the
 *  page's own server. */
export function streamURL(url, query) {
  const base = trimBase(url);
  if (base === "") {
    const scheme = globalThis.location?.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${globalThis.location?.host}/v1/stream?${query}`;
  }
  return `${base.replace(/^http(s?):/i, "ws$1:")}/v1/stream?${query}`;
}

/**
 * The live stream.
 *
 * - `onFrame(frame)` gets every frame but the token refusals; `onState(state)` gets "connecting", "live" (after
 *   `ready`) or "reconnecting"; `onOpen()` is called on each connection, so the caller says `focus` and `app` again;
 *   `onRefused(frame)` gets the refusal when the token is no good for good (no more connecting after it).
 * - Reconnects after `backoff.initial` ms (500), doubling to `backoff.max` (5,000), each wait ×0.75 to ×1.25 at
 *   random so that many clients a restart dropped do not come back at the same instant; resumes with `after` = the
 *   largest `seq` seen (`after` given here: where an earlier run stopped).
 * - `renew(usedToken)` (optional) resolves to a fresh token when the server says this one expired: the stream goes
 *   on where it was.
 * - A frame is sent only while connected (`send` says whether it was); nothing is queued here.
 * - Every `heartbeat` ms (25,000) with nothing received, it sends a `ping`; when nothing arrives for as long again,
 *   the connection is taken for dead and made again (a phone that changed networks may never see a close).
 * - `device` names this device, so the server sends its pushes nothing while the stream is connected.
 * - A connection that has not opened after `connectTimeout` ms (15,000) is given up and tried again.
 * - `WebSocket` is the runtime's own unless given.
 */
export class Stream {
  constructor({
    url = "", token, device = null, after = null, onFrame, onState = () => {}, onOpen = () => {}, onRefused = () => {},
    renew = null, WebSocket = null, backoff = {}, heartbeat = 25_000, connectTimeout = 15_000,
  }) {
    this.url = url;
    this.token = token;
    this.renew = renew;
    this.device = device;
    this.onFrame = onFrame;
    this.onState = onState;
    this.onOpen = onOpen;
    this.onRefused = onRefused;
    this.WebSocket = WebSocket ?? globalThis.WebSocket;
    if (typeof this.WebSocket !== "function") {
      throw new TypeError("Herald's stream needs a WebSocket: this runtime has none (Node 20 needs --experimental-websocket)");
    }
    this.initialBackoff = backoff.initial ?? 500;
    this.maxBackoff = backoff.max ?? 5_000;
    this.heartbeat = heartbeat;
    this.connectTimeout = connectTimeout;
    this.lastSeq = typeof after === "number" ? after : null;
    this.socket = null;
    this.backoff = this.initialBackoff;
    this.stopped = true;
    this.retryTimer = null;
    this.heartbeatTimer = null;
    this.state = null;
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect(this.lastSeq === null ? "connecting" : "reconnecting");
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.heartbeatTimer);
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "closed by the app");
  }

  /** Sends a frame now if connected; false if it could not be sent (the caller keeps what must survive). */
  send(frame) {
    if (this.socket?.readyState !== OPEN) return false;
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
    // The token this connection is made with: what a refusal of it refers to, whatever renewed it meanwhile.
    const used = this.token;
    const query = queryString({ token: used, device: this.device || null, after: this.lastSeq });
    let socket;
    try {
      socket = new this.WebSocket(streamURL(this.url, query));
    } catch {
      this.retry();
      return;
    }
    this.socket = socket;
    let refused = null;
    const alive = () => {
      clearTimeout(this.heartbeatTimer);
      if (!this.heartbeat || this.socket !== socket) return;
      this.heartbeatTimer = setTimeout(() => {
        if (this.socket !== socket) return;
        this.send({ type: "ping" });
        this.heartbeatTimer = setTimeout(() => this.socket === socket && this.restart(), this.heartbeat);
      }, this.heartbeat);
    };
    socket.onopen = () => {
      if (this.socket !== socket) return;
      alive();
      this.onOpen();
    };
    socket.onmessage = (event) => {
      if (this.socket !== socket) return;
      alive();
      let frame;
      try {
        frame = JSON.parse(typeof event.data === "string" ? event.data : String(event.data));
      } catch {
        return;
      }
      if (frame === null || typeof frame !== "object") return;
      if (frame.type === "error" && tokenErrors.has(frame.code)) {
        refused = frame;
        return;
      }
      if (frame.type === "message") this.saw(frame.message?.seq);
      this.onFrame(frame);
      if (frame.type === "ready") {
        this.saw(frame.seq);
        this.backoff = this.initialBackoff;
        this.setState("live");
      }
    };
    let ended = false;
    const closed = () => {
      if (ended || this.socket !== socket || this.stopped) return;
      ended = true;
      this.socket = null;
      clearTimeout(this.heartbeatTimer);
      if (refused?.code === "token_expired" && this.renew) {
        // An expired token is renewed and the stream goes on where it was (`after`). The renewal may be done already
        // (the API's request found the token expired first): then it is the token that renewal made.
        Promise.resolve(this.renew(used)).then(
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
      this.retry();
    };
    socket.onclose = closed;
    // An attempt given up is closed too, so that it cannot open later unseen and stay open for ever.
    const abandon = () => {
      try {
        socket.close();
      } catch {
        // already closing
      }
      closed();
    };
    // Some runtimes (Node 20's WebSocket, when the upgrade is answered without 101) report a failed connection as an
    // error and never close: an error before the connection opened ends the attempt.
    socket.onerror = () => setTimeout(() => socket.readyState !== OPEN && abandon(), 0);
    // A connection that neither opens nor fails (a network that swallows packets) is given up after `connectTimeout`.
    setTimeout(() => socket.readyState === CONNECTING && this.socket === socket && abandon(), this.connectTimeout);
  }

  /** Waits the back-off, with jitter, then connects again. */
  retry() {
    const delay = this.backoff * (0.75 + Math.random() / 2);
    this.backoff = Math.min(this.backoff * 2, this.maxBackoff);
    this.setState("reconnecting");
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.connect("reconnecting"), delay);
  }

  /** The server refused the token for good: no more connecting. */
  refuse(frame) {
    if (this.stopped) return;
    this.stopped = true;
    this.onRefused(frame);
  }

  /** Drops the current connection to start again (after a failure the caller noticed, or a heartbeat missed). */
  restart() {
    const socket = this.socket;
    if (!socket) return;
    // Closing may take long on a dead network: this connection is forgotten now, and a new one made after the back-off.
    this.socket = null;
    clearTimeout(this.heartbeatTimer);
    try {
      socket.close(4000, "restart");
    } catch {
      // already closed
    }
    if (!this.stopped) this.retry();
  }
}
