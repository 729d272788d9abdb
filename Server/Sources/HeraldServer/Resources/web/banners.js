// The in-app banners of the page: the engine (the package's engine.js) on the real clock, and its effects drawn at the top of
// the page with their motion, gestures and accessibility (docs/behaviour.md §3).
import { Notifier, SECOND, announcement, bannerConfig, bannerInitials, generalBanner } from "/herald/engine.js";
import { localHold } from "/herald/live.js";
import { avatarColour, cleanText, safeImageURL } from "/herald/presentation.js";

/** An avatar: the picture when there is an http(s) one that loads, else initials on the sender's colour. */
export function avatar({ name, id, url, initials, className = "avatar" }) {
  const box = document.createElement("span");
  box.className = className;
  box.setAttribute("aria-hidden", "true");
  const showInitials = () => {
    box.replaceChildren(initials);
    box.style.backgroundColor = avatarColour(id ?? name);
  };
  const safe = safeImageURL(url);
  if (safe) {
    const image = document.createElement("img");
    image.alt = "";
    image.referrerPolicy = "no-referrer";
    image.addEventListener("error", showInitials, { once: true });
    image.src = safe;
    box.append(image);
  } else {
    showInitials();
  }
  return box;
}

const svgNS = "http://www.w3.org/2000/svg";
const tonePaths = {
  primary: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm1 15h-2v-6h2zm0-8h-2V7h2z",
  success: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm-2 15-5-5 1.4-1.4 3.6 3.6 7.6-7.6L19 8z",
  warning: "M1 21h22L12 2zm12-3h-2v-2h2zm0-4h-2v-4h2z",
  danger: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm1 15h-2v-2h2zm0-4h-2V7h2z",
  neutral: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm0 6a2 2 0 1 1 0 4 2 2 0 0 1 0-4z",
};

function toneIcon(tone) {
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "tone-icon");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(svgNS, "path");
  path.setAttribute("d", tonePaths[tone] ?? tonePaths.neutral);
  svg.append(path);
  return svg;
}

/** How far a pointer may move, and how long it may stay down, and still count as a tap. */
const tapSlop = 8;
const tapTime = 500;

/**
 * The engine on the real clock, drawing its banners into `layer`. `send(input)` hands an input to the engine;
 * `onNavigate(conversation)` opens a chat (a tapped banner); `onLocal(notification)` posts a system notification;
 * `onWithdraw(tag)` takes one away (its message was deleted).
 */
export class Banners {
  constructor({ layer, userID, coalesce = false, onNavigate, onLocal, onWithdraw = () => {} }) {
    this.layer = layer;
    this.onNavigate = onNavigate;
    this.onLocal = onLocal;
    this.onWithdraw = onWithdraw;
    this.elements = new Map();
    this.origin = performance.now();
    this.timer = null;
    this.generalCount = 0;
    this.notifier = new Notifier({ userID, config: bannerConfig({ coalesce }), localHold });
  }

  /** Now, in the engine's unit (microseconds since this view was made). */
  now() {
    return Math.round((performance.now() - this.origin) * 1000);
  }

  send(input) {
    this.apply(this.notifier.handle(input, this.now()));
  }

  /** Queues a general banner ("Connection lost") with one of the tones; returns its id. */
  general(message, tone, duration = 5 * SECOND) {
    this.generalCount += 1;
    const id = `general-${this.generalCount}`;
    this.send({ type: "show", banner: generalBanner({ id, message, tone, duration }) });
    return id;
  }

  /** The id of the banner on screen, or null. */
  get visibleID() {
    return this.notifier.queue.visible?.id ?? null;
  }

  /** Takes every banner away and stops the clock (sign-out). */
  close() {
    clearTimeout(this.timer);
    this.layer.replaceChildren();
    this.elements.clear();
  }

  apply(effects) {
    for (const { at, effect } of effects) {
      switch (effect.type) {
        case "show": this.draw(effect.banner, at); break;
        case "update": this.redraw(effect.banner); break;
        case "dismiss": this.remove(effect.banner, effect.reason); break;
        case "navigate": this.onNavigate(effect.conversation); break;
        case "local": this.onLocal(effect.notification); break;
        case "withdraw": this.onWithdraw(effect.notification); break;
        default: break; // drop and skip change nothing on screen
      }
    }
    clearTimeout(this.timer);
    const deadline = this.notifier.nextDeadline;
    if (deadline !== null) {
      this.timer = setTimeout(() => this.apply(this.notifier.advance(this.now())), Math.max(0, (deadline - this.now()) / 1000));
    }
  }

  fill(element, banner) {
    const isMessage = banner.tone === "message";
    element.dataset.tone = banner.tone;
    element.classList.toggle("general", !isMessage);
    const lead = isMessage
      ? avatar({ name: banner.title, id: banner.sender, url: banner.avatarURL, initials: bannerInitials(banner) })
      : toneIcon(banner.tone);
    const title = document.createElement("span");
    title.className = "banner-title";
    const name = document.createElement("strong");
    name.textContent = cleanText(banner.title);
    title.append(name);
    if (banner.subtitle) {
      const group = document.createElement("span");
      group.className = "banner-subtitle";
      group.textContent = ` ${cleanText(banner.subtitle)}`;
      title.append(group);
    }
    if (banner.count > 1) {
      const count = document.createElement("span");
      count.className = "banner-count";
      count.textContent = `${banner.count}`;
      count.setAttribute("aria-label", `${banner.count} messages`);
      title.append(count);
    }
    const text = document.createElement("span");
    text.className = "banner-text";
    text.append(title);
    if (banner.body !== null) {
      const body = document.createElement("span");
      body.className = "banner-body";
      body.textContent = cleanText(banner.body);
      text.append(body);
    }
    const close = document.createElement("button");
    close.type = "button";
    close.className = "banner-close";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "×";
    close.addEventListener("pointerdown", (event) => event.stopPropagation());
    close.addEventListener("click", (event) => {
      event.stopPropagation();
      this.gesture(element, { type: "close" });
    });
    element.replaceChildren(lead, text, close);
    const spoken = cleanText(announcement(banner));
    element.setAttribute("aria-label", isMessage ? `${spoken}. Press Enter to open, Escape to dismiss.` : spoken);
  }

  /** Draws `banner`, shown by the engine at instant `at`: a banner drawn late (its hold's timer fired late on a busy
   *  page) still leaves on the engine's time, so `data-due` notes, on the page's clock (`performance.now()`), when it
   *  was due. */
  draw(banner, at) {
    const element = document.createElement("div");
    element.className = "banner entering";
    element.dataset.id = banner.id;
    element.dataset.due = (this.origin + at / 1000).toFixed(1);
    element.setAttribute("role", "status");
    element.setAttribute("aria-live", "polite");
    element.tabIndex = 0;
    this.fill(element, banner);
    element.addEventListener("animationend", () => element.classList.remove("entering"), { once: true });
    this.wire(element);
    this.elements.set(banner.id, element);
    this.layer.append(element);
  }

  redraw(banner) {
    const element = this.elements.get(banner.id);
    if (element) this.fill(element, banner);
  }

  remove(id, reason) {
    const element = this.elements.get(id);
    if (!element) return;
    this.elements.delete(id);
    element.dataset.reason = reason;
    element.classList.remove("entering");
    element.classList.add("leaving");
    element.setAttribute("aria-hidden", "true");
    element.tabIndex = -1;
    const gone = () => element.remove();
    element.addEventListener("animationend", gone, { once: true });
    setTimeout(gone, 1000); // in case no animation runs (a hidden tab)
  }

  /** A gesture on a banner, if it is still the visible one. */
  gesture(element, gesture) {
    if (this.elements.get(element.dataset.id) !== element) return;
    this.send({ type: "gesture", gesture });
  }

  wire(element) {
    let start = null;
    const offset = (y) => {
      const dy = y - start.y;
      return dy < 0 ? dy : dy / 5; // up follows the finger; down resists
    };
    element.addEventListener("pointerdown", (event) => {
      if (event.button !== 0 || start) return;
      start = { x: event.clientX, y: event.clientY, time: performance.now(), id: event.pointerId, moved: false };
      element.setPointerCapture(event.pointerId);
      element.classList.add("held");
      this.gesture(element, { type: "touchDown" });
    });
    element.addEventListener("pointermove", (event) => {
      if (!start || event.pointerId !== start.id) return;
      if (Math.hypot(event.clientX - start.x, event.clientY - start.y) > tapSlop) start.moved = true;
      element.style.setProperty("--drag", `${offset(event.clientY)}px`);
    });
    const release = (event, cancelled) => {
      if (!start || event.pointerId !== start.id) return;
      const dy = event.clientY - start.y;
      const tap = !cancelled && !start.moved && performance.now() - start.time < tapTime;
      start = null;
      element.classList.remove("held");
      this.gesture(element, { type: "touchUp" });
      if (tap) {
        this.gesture(element, { type: "tap" });
      } else if (!cancelled && dy !== 0) {
        this.gesture(element, { type: "swipe", dy });
      }
      if (this.elements.get(element.dataset.id) === element) element.style.setProperty("--drag", "0px");
    };
    element.addEventListener("pointerup", (event) => release(event, false));
    element.addEventListener("pointercancel", (event) => release(event, true));
    element.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        this.gesture(element, { type: "tap" });
      } else if (event.key === "Escape") {
        event.preventDefault();
        this.gesture(element, { type: "close" });
      }
    });
  }
}
