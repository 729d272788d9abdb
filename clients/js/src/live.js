// The stream wired into the notification engine, as the Swift client's LiveNotifications: what an app needs to get
// "show this banner", "post this local notification" and "open this conversation", with the clock driven for it.

import { Notifier, SECOND, bannerConfig, generalBanner } from "./engine.js";

/** How long a system notification waits for the server's word that it pushed the message (µs): an app woken with
 *  frames waiting reads a message, then the `pushed` for it. */
export const localHold = SECOND / 2;

/** Milliseconds from an arbitrary origin, steady where the runtime has a monotonic clock. */
function steadyMillis() {
  return typeof globalThis.performance?.now === "function" ? globalThis.performance.now() : Date.now();
}

/**
 * Live notifications for one user: every message the client receives goes through HeraldCore's rules (the open
 * chat, the app state, the levels, snooze and quiet hours) and out as effects.
 *
 * ```js
 * const live = new LiveNotifications({ client, userID: "alice" });
 * live.on("effect", (effect) => { ... });  // show, update, dismiss, navigate, local, clear, skip, drop
 * live.start();                             // connects the client too
 * live.open("c1");                          // the chat on screen: the engine and the server both know
 * live.setAppState("background");
 * live.gesture({ type: "tap" });            // on the visible banner: tap, close, swipe {dy}, touchDown, touchUp
 * ```
 *
 * Messages of the first catch-up (history the device had not seen before it started) do not notify; everything
 * after the first `ready` does, messages caught up after a reconnect included, except those the server says it
 * pushed to this device (`pushed`: the push is the notification). A system notification, and a late message's banner
 * (`Notifier.lateAfter`), wait `localHold` for that word. The user's levels and settings are
 * read from the server each time the stream is live (messages arriving meanwhile wait for them) and follow the
 * changes made here (`setLevel`, `setSettings`, `snooze`) and on the user's other devices. A `navigate` effect (a
 * tapped banner) makes its conversation the focus by itself. Time runs on the runtime's clock: each deadline (a
 * banner's 4 s) is a timer. `config` is `bannerConfig(...)`'s.
 *
 * `inBackground`: "close" (the default) pauses the client when the app goes to the background and resumes it in the
 * foreground, so the server pushes at once rather than after its grace period and a suspended app holds no socket;
 * "keep" leaves the stream open (its messages are notified locally while the app runs).
 */
export class LiveNotifications {
  constructor({ client, userID, config = bannerConfig(), now = steadyMillis, inBackground = "close" }) {
    if (inBackground !== "close" && inBackground !== "keep") throw new TypeError(`inBackground is "close" or "keep", not ${inBackground}`);
    this.client = client;
    this.inBackground = inBackground;
    this.notifier = new Notifier({ userID, config, localHold });
    this.clock = now;
    this.origin = now();
    this.timer = null;
    this.listeners = new Set();
    this.caughtUp = false; // the first `ready` came
    this.reading = null; // levels and settings being read: messages wait for them
    this.held = [];
    this.generalCount = 0;
    this.unsubscribe = [];
    // Choice frames so far, and the last one's number for the settings and for each conversation: a reading of the
    // server that began before a frame came is older than it, and does not undo it.
    this.framesSeen = 0;
    this.settingsFrame = 0;
    this.levelFrames = new Map();
  }

  /** Now, in the engine's unit (microseconds since this was made). */
  now() {
    return Math.round((this.clock() - this.origin) * 1000);
  }

  /** Listens to the effects (`"effect"`); returns the function that stops listening. */
  on(name, listener) {
    if (name !== "effect") throw new TypeError(`LiveNotifications has no event ${name}`);
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Wires the client to the engine and connects it. */
  start() {
    if (this.unsubscribe.length) return;
    const { client } = this;
    this.unsubscribe = [
      client.on("message", (incoming) => this.arrived(incoming)),
      client.on("ready", () => this.becameLive()),
      client.on("pushed", ({ conversation, message }) => this.input({ type: "pushed", conversation, message })),
      client.on("level", ({ conversation, level, until }) => {
        this.framesSeen += 1;
        this.levelFrames.set(conversation, this.framesSeen);
        this.input({ type: "level", conversation, choice: level ? { level, until } : null });
      }),
      client.on("notifications", (settings) => {
        this.framesSeen += 1;
        this.settingsFrame = this.framesSeen;
        this.input({ type: "settings", settings });
      }),
    ];
    this.input({ type: "app", state: client.appState });
    this.input({ type: "open", conversation: client.openConversation });
    if (this.inBackground === "close" && client.appState === "background") client.pause();
    else client.connect();
  }

  /** Stops listening and the clock, and closes the client. */
  stop() {
    for (const stop of this.unsubscribe) stop();
    this.unsubscribe = [];
    clearTimeout(this.timer);
    this.timer = null;
    this.client.close();
  }

  /** The chat on screen (null: none). */
  open(conversation) {
    this.client.focus(conversation);
    this.input({ type: "open", conversation: conversation ?? null });
  }

  /** "foreground" or "background"; with `inBackground: "close"` the stream closes in the background and opens again
   *  in the foreground. */
  setAppState(state) {
    this.client.setAppState(state);
    this.input({ type: "app", state });
    if (this.inBackground !== "close" || !this.unsubscribe.length) return;
    if (state === "background") this.client.pause();
    else this.client.resume();
  }

  /** Whether the system lets this app post notifications (without, `local` becomes a skip). */
  setPermission(granted) {
    this.input({ type: "permission", granted });
  }

  /** A gesture on the visible banner: `{type: "tap" | "close" | "touchDown" | "touchUp"}` or `{type: "swipe", dy}`. */
  gesture(gesture) {
    this.input({ type: "gesture", gesture });
  }

  /** Takes the visible banner away (`all`: every waiting one too). */
  dismiss(all = false) {
    this.input({ type: all ? "dismissAll" : "dismiss" });
  }

  /** Queues a banner of the app's own ("Connection lost"): tone "primary", "success", "warning", "danger" or
   *  "info"; returns its id. */
  general(message, tone = "primary", seconds = 5) {
    this.generalCount += 1;
    const id = `general-${this.generalCount}`;
    this.input({ type: "show", banner: generalBanner({ id, message, tone, duration: seconds * SECOND }) });
    return id;
  }

  /** The banner on screen, or null. */
  get visible() {
    return this.notifier.queue.visible ?? null;
  }

  /** Sets a chat's level (null: the default), for ever or until an instant, on the server and here at once. */
  async setLevel(conversation, level, until = null) {
    await this.client.api.setLevel(conversation, level, until);
    const instant = until instanceof Date ? until.toISOString() : until;
    this.input({ type: "level", conversation, choice: level ? { level, until: instant } : null });
  }

  /** Changes the user's settings (the fields given); resolves to them as kept. */
  async setSettings(change) {
    const kept = await this.client.api.changeNotificationSettings(change);
    this.input({ type: "settings", settings: kept });
    return kept;
  }

  /** Do not disturb until an instant; null ends it. */
  snooze(until) {
    return this.setSettings({ snoozeUntil: until instanceof Date ? until.toISOString() : until });
  }

  // The wiring

  input(input) {
    this.apply(this.notifier.handle(input, this.now()));
  }

  apply(entries) {
    for (const { effect } of entries) {
      if (effect.type === "navigate") this.client.focus(effect.conversation);
      for (const listener of [...this.listeners]) {
        try {
          listener(effect);
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
      }
    }
    clearTimeout(this.timer);
    this.timer = null;
    const deadline = this.notifier.nextDeadline;
    if (deadline !== null && this.unsubscribe.length) {
      this.timer = setTimeout(() => this.apply(this.notifier.advance(this.now())), Math.max(0, (deadline - this.now()) / 1000));
    }
  }

  arrived(incoming) {
    if (!this.caughtUp) {
      // The first catch-up: history, not news. Seen, so a repeat later is not news either.
      this.notifier.seen.insert(JSON.stringify([incoming.message.conversationId, incoming.message.id]));
      return;
    }
    if (this.reading) {
      this.held.push(incoming);
      return;
    }
    this.input({ type: "message", incoming });
  }

  /** Each `ready`: the levels and settings are read (what changed while away), then what waited is handled. */
  becameLive() {
    const reading = this.readChoices().catch(() => {
      // Unreadable just now: the engine keeps what it knew; the frames bring changes from here on.
    }).then(() => {
      if (this.reading !== reading) return;
      this.reading = null;
      const held = this.held;
      this.held = [];
      for (const incoming of held) this.input({ type: "message", incoming });
    });
    this.reading = reading;
    this.caughtUp = true;
  }

  async readChoices() {
    const { api } = this.client;
    const began = this.framesSeen;
    const newer = (conversation) => (this.levelFrames.get(conversation) ?? 0) > began;
    const settings = await api.notificationSettings();
    const choices = new Map();
    let cursor = null;
    do {
      const page = await api.conversations({ cursor, levelSet: true });
      for (const conversation of page.conversations) {
        if (conversation.level) choices.set(conversation.id, { level: conversation.level, until: conversation.levelUntil ?? null });
      }
      cursor = page.next ?? null;
    } while (cursor);
    if (this.settingsFrame <= began) this.input({ type: "settings", settings });
    for (const conversation of [...this.notifier.device.levels.keys()]) {
      if (!choices.has(conversation) && !newer(conversation)) this.input({ type: "level", conversation, choice: null });
    }
    for (const [conversation, choice] of choices) {
      if (!newer(conversation)) this.input({ type: "level", conversation, choice });
    }
  }
}
