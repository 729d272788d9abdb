// Herald's service worker: shows a Web Push notification (pushes come as declarative push messages, which a browser
// that implements Declarative Web Push could show by itself; this worker still shapes them) (with the sender's picture) when no tab of the page is
// open to show the message itself, and a test notification (asked for in the settings) always; opens the chat when one is clicked (its Reply: with the composer focused); marks
// the conversation read from its Mark as read, without opening a window; and closes a conversation's notifications
// when the server says it was read on another device. Plain JavaScript, no build step; served from `/` so its scope
// is the whole page.
"use strict";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// `/sw.js?push=off` leaves the push handler out: the browser tests register it so to see what a browser shows of a
// declarative push by itself.
if (new URL(self.location.href).searchParams.get("push") !== "off") {
  self.addEventListener("push", (event) => {
    let data = {};
    try {
      data = event.data ? event.data.json() : {};
    } catch {
      data = {};
    }
    event.waitUntil(handlePush(pushFields(data)));
  });
}

/** Herald's fields of a push in either format: a declarative push message (`{"web_push": 8030, "notification":
 *  {title, body, navigate, tag, data}, "app_badge", "mutable": true}`: alerts, edits and the test notification;
 *  its `notification.data` holds them) or the plain JSON (clears, deletions, a server of an earlier version). */
function pushFields(pushed) {
  if (pushed === null || typeof pushed !== "object" || Array.isArray(pushed)) return {};
  const notification = pushed.web_push === 8030 ? pushed.notification : null;
  if (notification === null || typeof notification !== "object") return pushed;
  const data = notification.data !== null && typeof notification.data === "object" && !Array.isArray(notification.data) ? notification.data : {};
  return {
    ...data,
    title: typeof data.title === "string" ? data.title : notification.title,
    body: typeof data.body === "string" ? data.body : notification.body,
    badge: typeof data.badge === "number" ? data.badge : pushed.app_badge,
  };
}

/** A message: a notification tagged with its identifier (`herald-<seq>`, the page's own notification of it has the
 *  same: either replaces the other, silently, as a resent push does); a read: the conversation's notifications
 *  closed. */
async function handlePush(pushed) {
  let data = pushed;
  const conversationId = typeof data.conversationId === "string" ? data.conversationId : "";
  await showBadge(data.badge);
  if (data.type === "test") {
    // One at a time (a second replaces the first), and each one rings: it is there to see whether one does.
    await self.registration.showNotification(String(data.title || "Herald"), {
      body: String(data.body || ""),
      tag: "herald-test",
      renotify: true,
      data: { conversationId: "", messageId: "", seq: 0 },
    });
    return;
  }
  if (data.type === "read") {
    for (const shown of await self.registration.getNotifications()) {
      if (shown.data && shown.data.conversationId === conversationId) shown.close();
    }
    return;
  }
  const messageId = typeof data.messageId === "string" ? data.messageId : "";
  const seq = /^[0-9]{1,15}$/.test(String(data.seq)) ? Number(data.seq) : 0;
  // An edited or deleted message: its notification (by tag) takes the new words, silently, or closes; one that is
  // no longer shown stays gone.
  if (data.type === "message_edited" || data.type === "message_deleted") {
    const tag = typeof data.notificationId === "string" ? data.notificationId : "";
    const shown = tag ? await self.registration.getNotifications({ tag }) : [];
    if (data.type === "message_deleted" || shown.length === 0) {
      for (const notification of shown) notification.close();
      return;
    }
    data = { ...data, silent: true, summary: undefined };
  }
  // Notification text is plain text by definition: the title and body are never markup.
  await self.registration.showNotification(String(data.title || "New message"), {
    // Inside a burst, the count first ("3 new messages"), then the latest message.
    body: (typeof data.summary === "string" ? data.summary + "\n" : "") + String(data.body || ""),
    tag: typeof data.notificationId === "string" ? data.notificationId : JSON.stringify([conversationId, messageId]),
    renotify: false,
    // Quiet hours, or a later message of a burst: no sound, no vibration.
    silent: data.silent === true,
    data: { conversationId, messageId, seq },
    ...picture(data.senderAvatarURL),
    // Herald's message actions: Reply opens the chat ready to type; Mark as read needs the message's seq.
    actions: seq > 0
      ? [{ action: "reply", title: "Reply" }, { action: "read", title: "Mark as read" }]
      : [{ action: "reply", title: "Reply" }],
  });
}

/** The sender's picture as the notification's icon: an http(s) address only, anything else left out. */
function picture(address) {
  if (typeof address !== "string") return {};
  try {
    const url = new URL(address);
    return url.protocol === "https:" || url.protocol === "http:" ? { icon: url.href } : {};
  } catch {
    return {};
  }
}

/** The unread count on the installed app's icon, where the browser has one (the Badging API). */
async function showBadge(badge) {
  if (typeof badge !== "number" || !("setAppBadge" in self.navigator)) return;
  try {
    await (badge > 0 ? self.navigator.setAppBadge(badge) : self.navigator.clearAppBadge());
  } catch {
    // Not an installed app: no badge to set.
  }
}

self.addEventListener("notificationclick", (event) => {
  const data = event.notification.data || {};
  event.notification.close();
  const conversationId = typeof data.conversationId === "string" ? data.conversationId : "";
  if (event.action === "read") {
    // Marked read in the background; when that cannot be done (signed out, the token expired), the chat opens.
    event.waitUntil(markRead(conversationId, data.seq).then((done) => (done ? closeRead(conversationId, data.seq) : openChat(conversationId))));
    return;
  }
  event.waitUntil(openChat(conversationId, event.action === "reply"));
});

/** Focuses an open tab of the page and tells it which chat to open (with the composer focused for a Reply), or
 *  opens one at that chat. */
async function openChat(conversationId, compose = false) {
  const url = new URL("/", self.location.origin);
  if (conversationId) url.hash = "chat=" + encodeURIComponent(conversationId) + (compose ? "&compose=1" : "");
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of windows) {
    if (new URL(client.url).origin !== self.location.origin) continue;
    client.postMessage({ type: "open", conversationId, compose });
    // Allowed in a click's handler; where it is refused, the tab has the chat open all the same.
    await client.focus().catch(() => {});
    return;
  }
  await self.clients.openWindow(url.href);
}

/** Moves the read marker of `conversationId` to `seq` as the signed-in user, from this browser (so the server clears
 *  the user's other devices, not this one): with the token the page keeps for the worker while pushes are on.
 *  Whether it was done. */
async function markRead(conversationId, seq) {
  if (!conversationId || !(Number.isSafeInteger(seq) && seq > 0)) return false;
  const session = await workerSession();
  if (!session || typeof session.token !== "string") return false;
  try {
    const response = await fetch(`/v1/conversations/${encodeURIComponent(conversationId)}/read`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}`, "content-type": "application/json" },
      body: JSON.stringify({ upTo: seq, device: typeof session.device === "string" ? session.device : undefined }),
    });
    return response.ok;
  } catch {
    return false;
  }
}

/** Closes this browser's notifications of `conversationId` up to `seq`: they are read now. */
async function closeRead(conversationId, seq) {
  for (const shown of await self.registration.getNotifications()) {
    if (shown.data && shown.data.conversationId === conversationId && shown.data.seq <= seq) shown.close();
  }
}

/** What the page keeps for the worker in IndexedDB (`keepForWorker` in push.js): the token and the device id, or
 *  null. */
function workerSession() {
  return new Promise((resolve) => {
    const opening = indexedDB.open("herald-worker", 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore("session");
    opening.onerror = () => resolve(null);
    opening.onsuccess = () => {
      const database = opening.result;
      const reading = database.transaction("session").objectStore("session").get("current");
      reading.onsuccess = () => {
        database.close();
        resolve(reading.result ?? null);
      };
      reading.onerror = () => {
        database.close();
        resolve(null);
      };
    };
  });
}
