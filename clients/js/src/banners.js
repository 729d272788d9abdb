// The banner queue (docs/behaviour.md §3; HeraldCore's BannerQueue, BannerTimer and EffectLog), and the ids a device
// has seen.

import { bannerConfig } from "./config.js";
import { isQuiet } from "./policy.js";

/** The ids seen most recently, up to a limit: a set that forgets its oldest member when full. */
export class RecentIDs {
  constructor(limit) {
    this.limit = Math.max(1, limit);
    this.members = new Set();
    this.order = [];
    this.oldest = 0;
  }

  has(id) {
    return this.members.has(id);
  }

  /** Remembers `id`; false if it was already there. */
  insert(id) {
    if (this.members.has(id)) return false;
    this.members.add(id);
    if (this.order.length < this.limit) {
      this.order.push(id);
    } else {
      this.members.delete(this.order[this.oldest]);
      this.order[this.oldest] = id;
      this.oldest = (this.oldest + 1) % this.limit;
    }
    return true;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The banner queue (docs/behaviour.md §3; HeraldCore's BannerQueue, BannerTimer and EffectLog)

const rank = { dismiss: 0, navigate: 1, drop: 2, clear: 2, withdraw: 2, skip: 3, show: 4, update: 4, local: 5 };

/** Effects stamped with their instant; each input's effects put in their documented order when it ends. */
export class EffectLog {
  constructor() {
    this.entries = [];
    this.start = 0;
    this.instant = 0;
  }

  begin(instant) {
    this.start = this.entries.length;
    this.instant = instant;
  }

  append(effect) {
    this.entries.push({ at: this.instant, effect });
  }

  current() {
    return this.entries.slice(this.start);
  }

  end() {
    const { entries, start } = this;
    for (let index = start + 1; index < entries.length; index += 1) {
      const entry = entries[index];
      let slot = index;
      while (slot > start && rank[entries[slot - 1].effect.type] > rank[entry.effect.type]) {
        entries[slot] = entries[slot - 1];
        slot -= 1;
      }
      entries[slot] = entry;
    }
  }
}

/** The visible banner's life: its deadline, and the time left while a finger holds it. */
class BannerTimer {
  constructor(duration, now) {
    this.remaining = duration;
    this.deadline = now + duration;
  }

  pause(now) {
    if (this.deadline === null) return;
    this.remaining = Math.max(0, this.deadline - now);
    this.deadline = null;
  }

  resume(now) {
    if (this.deadline !== null) return;
    this.deadline = now + this.remaining;
  }

  restart(duration, now) {
    this.remaining = duration;
    if (this.deadline !== null) this.deadline = now + duration;
  }
}

function absorb(banner, later) {
  banner.mention = Boolean(banner.mention || later.mention);
  banner.count += later.count;
  banner.title = later.title;
  banner.subtitle = later.subtitle;
  banner.body = later.body;
  banner.avatarURL = later.avatarURL;
  banner.sender = later.sender;
  banner.shows = later.shows;
}

/** Whether a banner's words are those of the message `message` of `conversation`. */
function shows(banner, conversation, message) {
  return typeof banner.shows === "string" && banner.shows === message && banner.conversation === conversation;
}

/** Which banner is on screen, which wait, and when each goes. Instants never go backwards. */
export class BannerQueue {
  constructor(config = bannerConfig()) {
    this.config = config;
    this.visible = null;
    this.timer = null;
    this.waiting = [];
    this.quietUntil = null;
    this.now = 0;
  }

  /** When the queue next needs `advance`: the visible banner's timeout or the end of a gap; null when nothing is due. */
  get nextDeadline() {
    if (this.timer) return this.timer.deadline;
    return this.waiting.length === 0 ? null : this.quietUntil;
  }

  /** Fires every deadline up to and including `instant` into `log`, then makes `instant` the current one. */
  advanceInto(instant, log) {
    for (let deadline = this.nextDeadline; deadline !== null && deadline <= instant; deadline = this.nextDeadline) {
      this.now = Math.max(this.now, deadline);
      log.begin(this.now);
      if (this.timer) this.dismissVisible("timeout", log);
      this.showNextIfDue(log);
      log.end();
    }
    this.now = Math.max(this.now, instant);
  }

  /** Applies an input at `now`: {type: "enqueue", banner} | {type: "gesture", gesture} | {type: "opened", conversation} | {type: "left", conversation} | {type: "dismiss"} | {type: "dismissAll"} | {type: "edited", conversation, message, body} | {type: "deleted", conversation, message}. */
  apply(input, log) {
    switch (input.type) {
      case "enqueue":
        this.enqueue(input.banner, log);
        return;
      case "gesture":
        this.applyGesture(input.gesture, log);
        break;
      case "opened":
        this.conversationOpened(input.conversation, log);
        break;
      case "left":
        this.conversationGone(input.conversation, "removed", log);
        break;
      case "dismiss":
        this.dismissVisible("programmatic", log);
        break;
      case "dismissAll":
        this.dismissVisible("programmatic", log);
        for (const banner of this.waiting) log.append({ type: "drop", banner: banner.id, reason: "programmatic" });
        this.waiting = [];
        break;
      case "edited":
        // The banner showing the message (visible or waiting) takes its new words, keeping its place and its time.
        if (this.visible && shows(this.visible, input.conversation, input.message)) {
          this.visible.body = input.body;
          log.append({ type: "update", banner: { ...this.visible } });
        }
        for (const banner of this.waiting) if (shows(banner, input.conversation, input.message)) banner.body = input.body;
        break;
      case "deleted":
        if (this.visible && shows(this.visible, input.conversation, input.message)) this.dismissVisible("deleted", log);
        this.waiting = this.waiting.filter((banner) => {
          if (!shows(banner, input.conversation, input.message)) return true;
          log.append({ type: "drop", banner: banner.id, reason: "deleted" });
          return false;
        });
        break;
      default:
        throw new Error(`unknown queue input ${input.type}`);
    }
    this.showNextIfDue(log);
  }

  enqueue(banner, log) {
    if (this.config.coalesce && banner.conversation !== null) {
      const current = this.visible;
      if (current && current.conversation === banner.conversation) {
        absorb(current, banner);
        this.timer?.restart(current.duration ?? this.config.duration, this.now);
        log.append({ type: "update", banner: { ...current } });
        return;
      }
      const index = this.waiting.findIndex((candidate) => candidate.conversation === banner.conversation);
      if (index >= 0) {
        const waiting = this.waiting[index];
        absorb(waiting, banner);
        // A mention absorbed into a plain banner takes it ahead of the other plain ones.
        const plain = this.firstPlainSlot();
        if (waiting.mention && index > plain) this.waiting.splice(plain, 0, ...this.waiting.splice(index, 1));
        return;
      }
    }
    // Mentions wait ahead of banners that are not, behind earlier mentions.
    this.waiting.splice(banner.mention ? this.firstPlainSlot() : this.waiting.length, 0, { ...banner });
    const showsNow = !this.timer && !this.isQuiet;
    if (!showsNow && this.waiting.length > this.config.capacity) {
      // The oldest plain banner makes room; only mentions waiting, the oldest mention.
      const plain = this.firstPlainSlot();
      const [pushedOut] = this.waiting.splice(plain < this.waiting.length ? plain : 0, 1);
      log.append({ type: "drop", banner: pushedOut.id, reason: "capacity" });
    }
    this.showNextIfDue(log);
  }

  applyGesture(gesture, log) {
    const banner = this.visible;
    if (!banner) return;
    switch (gesture.type) {
      case "tap":
        this.dismissVisible("tap", log);
        if (banner.conversation !== null) {
          log.append({ type: "navigate", conversation: banner.conversation });
          this.conversationOpened(banner.conversation, log);
        }
        break;
      case "close":
        this.dismissVisible("close", log);
        break;
      case "swipe":
        if (-gesture.dy >= this.config.swipeThreshold) this.dismissVisible("swipe", log);
        break;
      case "touchDown":
        this.timer?.pause(this.now);
        break;
      case "touchUp":
        this.timer?.resume(this.now);
        break;
      default:
        throw new Error(`unknown gesture ${gesture.type}`);
    }
  }

  conversationOpened(conversation, log) {
    this.conversationGone(conversation, "opened", log);
  }

  /** Where the first waiting banner that is not a mention is (the end when there is none). */
  firstPlainSlot() {
    const index = this.waiting.findIndex((banner) => !banner.mention);
    return index < 0 ? this.waiting.length : index;
  }

  /** The banners of `conversation` go: the visible one dismissed, the waiting ones dropped, for `reason`. */
  conversationGone(conversation, reason, log) {
    if (this.visible && this.visible.conversation === conversation) this.dismissVisible(reason, log);
    this.waiting = this.waiting.filter((banner) => {
      if (banner.conversation !== conversation) return true;
      log.append({ type: "drop", banner: banner.id, reason });
      return false;
    });
  }

  dismissVisible(reason, log) {
    const banner = this.visible;
    if (!banner) return;
    this.visible = null;
    this.timer = null;
    this.quietUntil = this.now + this.config.gap;
    log.append({ type: "dismiss", banner: banner.id, reason });
  }

  get isQuiet() {
    return this.quietUntil !== null && this.now < this.quietUntil;
  }

  showNextIfDue(log) {
    if (this.timer || this.isQuiet || this.waiting.length === 0) return;
    const banner = this.waiting.shift();
    this.visible = banner;
    this.timer = new BannerTimer(banner.duration ?? this.config.duration, this.now);
    this.quietUntil = null;
    log.append({ type: "show", banner: { ...banner } });
  }
}
