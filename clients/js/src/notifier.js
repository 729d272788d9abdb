// One device (HeraldCore's Notifier): the policy, the wording and the queue together.

import { bannerConfig, SECOND } from "./config.js";
import {
  bannerFor, eventEnds, isAmendment, messagePreview, notificationFor, notificationIdentifier, standardFormatter,
} from "./wording.js";
import { defaultBurstWindow, defaultSettings, delivery, namesUser, NotificationBursts, toMillis } from "./policy.js";
import { BannerQueue, EffectLog, RecentIDs } from "./banners.js";

/** 2001-01-01T00:00:00Z in milliseconds: HeraldCore's reference date, from which both engines count a message's time. */
const referenceDate = Date.UTC(2001, 0, 1);

/**
 * Everything one device does about new messages. `handle(input, at)` returns `[{at, effect}]`; `nextDeadline`
 * says when to call `advance(to)`. Inputs:
 * {type: "message", incoming} | {type: "app", state} | {type: "permission", granted} | {type: "open", conversation}
 * | {type: "mute", conversation} | {type: "unmute", conversation} | {type: "show", banner} | {type: "gesture", gesture}
 * | {type: "dismiss"} | {type: "dismissAll"} | {type: "pushed", conversation, message}. Gestures:
 * {type: "tap"|"close"|"touchDown"|"touchUp"} | {type: "swipe", dy}.
 *
 * `localHold` (in the instants' unit, 0 by default): how long a system notification, and the banner of a late message
 * (`Notifier.lateAfter`), wait before they are shown, for a `pushed` input that would make them a second interruption
 * (HeraldCore's `Notifier.localHold`). `burstWindow` (one minute by
 * default, 0: off): how long after a conversation's system notification the next ones replace it silently
 * (`NotificationBursts`).
 */
export class Notifier {
  constructor({
    userID, config = bannerConfig(), formatter = standardFormatter, seenLimit = 10_000, localHold = 0,
    burstWindow = defaultBurstWindow,
  } = {}) {
    this.userID = userID;
    this.formatter = formatter;
    this.device = {
      appState: "foreground", notificationsPermitted: true, openConversation: null, levels: new Map(), settings: defaultSettings(),
    };
    this.queue = new BannerQueue(config);
    this.seen = new RecentIDs(seenLimit);
    this.pushed = new RecentIDs(seenLimit);
    /** The smallest lag seen so far between a message's `createdAt` (the server's clock) and its arrival (the
     *  engine's instant minus the server's, in µs): a message that came at once. Null until the first message. */
    this.promptest = null;
    this.localHold = Math.max(0, localHold);
    this.bursts = new NotificationBursts(burstWindow);
    /** Banners and system notifications held, in the order they are due: [{deadline, key, banner | notification,
     *  namesMember}]. */
    this.held = [];
    /** The system notifications it posted, newest last, at most `followedLimit`: each the latest words under its
     *  identifier, so that an edit of its message can replace them and a deletion remove them: [{key, notification}]. */
    this.posted = [];
  }

  /** How many of its latest system notifications a device follows when their messages are edited or deleted. */
  static followedLimit = 64;

  /** How much later than the promptest message so far a message may arrive and still count as live, by the server's
   *  clock (`createdAt`) against the engine's instants (µs): a banner for a later one (or for the first message)
   *  waits `localHold`, as it may have been pushed meanwhile (HeraldCore's `Notifier.lateAfter`). */
  static lateAfter = SECOND / 2;

  get nextDeadline() {
    const banner = this.queue.nextDeadline, local = this.held.length ? this.held[0].deadline : null;
    if (banner === null) return local;
    return local === null ? banner : Math.min(banner, local);
  }

  /** Fires every deadline up to and including `instant`, each at its own instant. */
  advance(instant) {
    const log = new EffectLog();
    this.fire(instant, log);
    return log.entries;
  }

  /** The banner queue's deadlines and the held notifications', in time order, up to `instant`. */
  fire(instant, log) {
    while (this.held.length && this.held[0].deadline <= instant) {
      const first = this.held.shift();
      this.queue.advanceInto(first.deadline, log);
      const now = Math.max(this.queue.now, first.deadline);
      log.begin(now);
      if (first.banner) this.queue.enqueue(first.banner, log);
      else log.append({ type: "local", notification: this.posting(first.notification, first.key, first.namesMember, now) });
      log.end();
    }
    this.queue.advanceInto(instant, log);
  }

  /** Fires what is due up to `instant`, then handles `input` at `instant`. */
  handle(input, instant) {
    const log = new EffectLog();
    const { queue, device } = this;
    this.fire(instant, log);
    log.begin(queue.now);
    switch (input.type) {
      case "message":
        this.receive(input.incoming, log);
        break;
      case "app":
        device.appState = input.state;
        break;
      case "permission":
        device.notificationsPermitted = input.granted;
        break;
      case "open":
        device.openConversation = input.conversation;
        if (input.conversation !== null) {
          queue.apply({ type: "opened", conversation: input.conversation }, log);
          this.bursts.end(input.conversation);
          this.dropHeldBanners(input.conversation, log);
        }
        break;
      case "mute":
        device.levels.set(input.conversation, { level: "nothing", until: null });
        break;
      case "unmute":
        device.levels.delete(input.conversation);
        break;
      case "level":
        if (input.choice) device.levels.set(input.conversation, { level: input.choice.level, until: toMillis(input.choice.until) });
        else device.levels.delete(input.conversation);
        break;
      case "settings":
        device.settings = { ...defaultSettings(), ...input.settings };
        break;
      case "show":
        queue.apply({ type: "enqueue", banner: input.banner }, log);
        break;
      case "gesture":
        queue.apply({ type: "gesture", gesture: input.gesture }, log);
        break;
      case "dismiss":
      case "dismissAll":
        queue.apply({ type: input.type }, log);
        break;
      case "pushed": {
        const key = JSON.stringify([input.conversation, input.message]);
        this.pushed.insert(key);
        const index = this.held.findIndex((held) => held.key === key);
        if (index >= 0) {
          this.held.splice(index, 1);
          log.append({ type: "skip", message: input.message, reason: "pushed" });
        }
        break;
      }
      default:
        throw new Error(`unknown input ${input.type}`);
    }
    for (const { effect } of log.current()) {
      if (effect.type === "navigate") {
        device.openConversation = effect.conversation;
        this.bursts.end(effect.conversation);
        this.dropHeldBanners(effect.conversation, log);
      }
    }
    log.end();
    return log.entries;
  }

  /** Whether `message`, arriving now, is late (`lateAfter`), and it taken into `promptest`. */
  arrivesLate(message) {
    // The server's time in whole microseconds after 2001-01-01, as HeraldCore counts it.
    const millis = toMillis(message.createdAt);
    if (!Number.isFinite(millis)) return true; // no time to judge it by: it may be late
    const lag = this.queue.now - Math.round((millis - referenceDate) * 1000);
    const late = this.promptest === null || lag - this.promptest > Notifier.lateAfter;
    this.promptest = this.promptest === null ? lag : Math.min(this.promptest, lag);
    return late;
  }

  /** Holds a banner or a system notification (`{banner}` or `{notification}`) for `localHold`, among the others in
   *  the order they are due. */
  hold(notice, key, namesMember) {
    const deadline = this.queue.now + this.localHold;
    const index = this.held.findIndex((held) => held.deadline > deadline);
    this.held.splice(index < 0 ? this.held.length : index, 0, { deadline, key, ...notice, namesMember });
  }

  /** The conversation is on screen: the banners held for it will never show (reason `active`). */
  dropHeldBanners(conversation, log) {
    this.held = this.held.filter((held) => {
      if (!held.banner || JSON.parse(held.key)[0] !== conversation) return true;
      log.append({ type: "skip", message: JSON.parse(held.key)[1], reason: "active" });
      return false;
    });
  }

  receive(incoming, log) {
    const { message } = incoming;
    // An id is unique only within its conversation, so both name the message.
    const key = JSON.stringify([message.conversationId, message.id]);
    const late = this.arrivesLate(message);
    const alreadySeen = !this.seen.insert(key);
    // Removed, left, or the group deleted: nothing of it may stay on screen or in the notification centre.
    if (!alreadySeen && message.event && eventEnds(message.event, message.senderId, this.userID)) {
      this.queue.apply({ type: "left", conversation: message.conversationId }, log);
      log.append({ type: "clear", conversation: message.conversationId });
      this.bursts.end(message.conversationId);
      this.posted = this.posted.filter((posted) => JSON.parse(posted.key)[0] !== message.conversationId);
      this.held = this.held.filter((held) => JSON.parse(held.key)[0] !== message.conversationId);
    }
    if (!alreadySeen && isAmendment(message.event)) {
      this.follow(incoming, JSON.stringify([message.conversationId, message.event.messageId]), log);
    }
    const kind = incoming.conversation.kind;
    const decision = delivery(message, kind, this.userID, this.device, alreadySeen);
    const shows = decision === "banner" || decision === "local" || decision === "quietLocal";
    if (shows && this.pushed.has(key)) {
      // Shown by its push already (the server said so before the message came: a catch-up).
      log.append({ type: "skip", message: message.id, reason: "pushed" });
    } else if (decision === "banner") {
      const banner = bannerFor(incoming, this.formatter, this.userID);
      banner.mention = namesUser(message, this.userID);
      // It may have been pushed while this device was frozen or cut off: the server's word follows it. (One behind a
      // held banner waits too: banners show in the order their messages came.)
      const behindHeld = this.held.some((held) => held.banner);
      if ((late || behindHeld) && this.localHold > 0) this.hold({ banner }, key, banner.mention);
      else this.queue.enqueue(banner, log);
    } else if (decision === "local" || decision === "quietLocal") {
      const notification = notificationFor(incoming, this.formatter, this.userID);
      if (decision === "quietLocal") notification.silent = true;
      if (this.localHold > 0) {
        this.hold({ notification }, key, namesUser(message, this.userID));
      } else {
        log.append({ type: "local", notification: this.posting(notification, key, namesUser(message, this.userID), this.queue.now) });
      }
    } else {
      log.append({ type: "skip", message: message.id, reason: decision.skip });
    }
  }

  /** What an edit or a deletion (`amendment`) of the message named by `key` changes on this device: the banner
   *  showing it, a held banner or system notification of it, and the posted one whose latest words are its. */
  follow(amendment, key, log) {
    const [conversation, target] = JSON.parse(key);
    const postedIndex = this.posted.findLastIndex((posted) => posted.key === key);
    if (amendment.message.event.type === "message_deleted") {
      this.queue.apply({ type: "deleted", conversation, message: target }, log);
      this.held = this.held.filter((held) => held.key !== key);
      if (postedIndex >= 0) {
        log.append({ type: "withdraw", notification: notificationIdentifier(this.posted[postedIndex].notification) });
        this.posted.splice(postedIndex, 1);
      }
      return;
    }
    // The edited message as its sender now has it (an edit's entry carries its new text and mentions).
    const { event, ...fields } = amendment.message;
    const message = { ...fields, id: target, conversationId: conversation, imageURL: null, edited: true };
    delete message.seq;
    const edited = { ...amendment, message };
    this.queue.apply({ type: "edited", conversation, message: target, body: messagePreview(message, this.formatter) }, log);
    const words = notificationFor(edited, this.formatter, this.userID);
    for (const held of this.held) {
      if (held.key !== key) continue;
      if (held.banner) {
        held.banner.body = messagePreview(message, this.formatter);
      } else {
        held.notification.title = words.title;
        held.notification.body = words.body;
      }
    }
    if (postedIndex >= 0) {
      const notification = { ...this.posted[postedIndex].notification, title: words.title, body: words.body, silent: true, onlyIfDelivered: true };
      this.posted[postedIndex].notification = notification;
      log.append({ type: "local", notification: { ...notification } });
    }
  }

  /** `notification` as it is posted at `now` (`inBurst`), remembered as the latest words under its identifier. */
  posting(notification, key, namesMember, now) {
    const posted = this.inBurst(notification, namesMember, now);
    const identifier = notificationIdentifier(posted);
    this.posted = this.posted.filter((entry) => notificationIdentifier(entry.notification) !== identifier);
    this.posted.push({ key, notification: { ...posted } });
    if (this.posted.length > Notifier.followedLimit) this.posted.shift();
    return posted;
  }

  /** `notification` as it is posted at `now`: inside a conversation's burst, it replaces the burst's first silently
   *  (unless it names the member) and carries the count. */
  inBurst(notification, namesMember, now) {
    const burst = this.bursts.decide(notification.thread, notificationIdentifier(notification), namesMember, now);
    if (burst.count > 1) {
      notification.replaces = burst.identifier;
      notification.count = burst.count;
      if (!burst.alerts) notification.silent = true;
    }
    return notification;
  }
}
