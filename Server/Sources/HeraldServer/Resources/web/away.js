// Away from the page: visibility, system notifications, and Web Push when the tab is closed.

import { $, announce, tokenKey, page } from "./state.js";
import { cleanText } from "/herald/presentation.js";
import { markRead, openChat } from "./chat.js";
import { notificationIdentifier } from "/herald/engine.js";
import {
  keepForWorker, renewWebPush, reportBrowserPermission, turnWebPushOff, turnWebPushOn, webPushIsOn, webPushOwner,
  webPushSupported,
} from "./push.js";


export function notificationsPermitted() {
  return "Notification" in window && Notification.permission === "granted";
}

export function tellEngineAboutPermission() {
  page.session?.banners.send({ type: "permission", granted: notificationsPermitted() });
}

export function tellEngineAboutVisibility() {
  page.session?.banners.send({ type: "app", state: document.hidden ? "background" : "foreground" });
}

/** The browser's permission changed (asked here, or changed in its settings): the engine follows (background
 *  messages, or nothing), and so does the server's record of this browser's device. */
export function permissionChanged() {
  updateNotifyButton();
  tellEngineAboutPermission();
  if (page.session) reportBrowserPermission(page.session.api, page.session.me.id);
}

export function updateNotifyButton() {
  $("notify-button").hidden = !("Notification" in window) || Notification.permission !== "default";
}

export async function askNotificationPermission() {
  if (!("Notification" in window)) return;
  try {
    await Notification.requestPermission();
  } catch {
    // Refused or unsupported: nothing, silently.
  }
  permissionChanged();
}

/** The system notifications this page posted and that are still shown, by tag. */
const shownNotifications = new Map();

/** The engine's `withdraw` effect: the notification tagged `tag` goes (its message was deleted), whether this page
 *  or a Web Push posted it. */
export function withdrawSystemNotification(tag) {
  shownNotifications.get(tag)?.close();
  shownNotifications.delete(tag);
  navigator.serviceWorker?.getRegistration()
    .then((registration) => registration?.getNotifications({ tag }))
    .then((shown) => shown?.forEach((notification) => notification.close()))
    .catch(() => {});
}

/** The engine's `local` effect: a system notification, tagged as the message's Web Push is (`herald-<seq>`: one
 *  replaces the other); inside a burst, under the burst's first's tag, silently, its count first. */
export function postSystemNotification(notification) {
  if (!notificationsPermitted()) return;
  const tag = notificationIdentifier(notification);
  // An edit replaces a notification still shown, and posts nothing once it is gone.
  if (notification.onlyIfDelivered && !shownNotifications.has(tag)) return;
  try {
    const shown = new Notification(cleanText(notification.title), {
      body: (notification.count > 1 ? `${notification.count} new messages\n` : "") + cleanText(notification.body),
      silent: notification.silent === true, // quiet hours, a burst's later message, an edit
      tag,
      data: { conversation: notification.thread },
    });
    shownNotifications.set(tag, shown);
    shown.addEventListener("close", () => {
      if (shownNotifications.get(tag) === shown) shownNotifications.delete(tag);
    });
    shown.addEventListener("click", () => {
      window.focus();
      openChat(notification.thread);
      shown.close();
    });
  } catch {
    // Some browsers allow notifications only from a service worker: nothing, silently.
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Notified when the tab is closed: Web Push (push.js), and the service worker's clicks

/** Shows the switch where the browser can do Web Push, set as this browser is. While it is on, the token is kept in
 * localStorage (not only the tab's sessionStorage), so a window a notification opens is signed in. */
export async function showPushSwitch() {
  const current = page.session;
  const box = $("push-switch");
  $("push-setting").hidden = !webPushSupported();
  box.checked = false;
  announce("web push", false);
  if (!webPushSupported()) return;
  const owner = webPushOwner();
  if (owner !== null && owner !== current.me.id) {
    // Another person's subscription, left by a tab that was closed without signing out: not this user's to receive.
    await turnWebPushOff(null);
    localStorage.removeItem(tokenKey);
    return;
  }
  const on = await webPushIsOn(current.me.id);
  if (current !== page.session) return;
  box.checked = on;
  announce("web push", on);
  if (on) {
    localStorage.setItem(tokenKey, current.api.token);
    keepForWorker(current.api.token);
    renewWebPush(current.api);
  }
}

export async function pushSwitchChanged() {
  const current = page.session;
  if (!current) return;
  const box = $("push-switch");
  box.disabled = true;
  try {
    if (box.checked) {
      await turnWebPushOn(current.api, current.me.id);
      if (current === page.session) {
        localStorage.setItem(tokenKey, current.api.token);
        await keepForWorker(current.api.token);
      }
    } else {
      localStorage.removeItem(tokenKey);
      await turnWebPushOff(current.api);
    }
  } catch (error) {
    box.checked = false;
    await turnWebPushOff(current.api).catch(() => {});
    if (current === page.session) page.session.banners.general(`Could not turn on notifications: ${error.message}`, "danger");
  } finally {
    box.disabled = false;
    updateNotifyButton();
    tellEngineAboutPermission();
    if (current === page.session) announce("web push", box.checked);
  }
}

/** The service worker's notification was clicked (or its Reply) while a tab was open: that tab opens the chat. */
navigator.serviceWorker?.addEventListener("message", (event) => {
  const data = event.data;
  if (data?.type === "open" && typeof data.conversationId === "string") {
    openChat(data.conversationId, { compose: data.compose === true });
  }
});

document.addEventListener("visibilitychange", () => {
  if (!page.session) return;
  page.session.client.setAppState(document.hidden ? "background" : "foreground");
  tellEngineAboutVisibility();
  if (!document.hidden) markRead();
});
