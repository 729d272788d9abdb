// Herald's service worker: shows a Web Push notification (with the sender's picture) when no tab of the page is
// open to show the message itself, opens the chat when one is clicked, and closes a conversation's notifications when the server says it
// was read on another device. Plain JavaScript, no build step; served from `/` so its scope is the whole page.
"use strict";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = {};
  }
  event.waitUntil(handlePush(data));
});

/** A message: a notification tagged with its identifier (`herald-<seq>`, the page's own notification of it has the
 *  same: either replaces the other, silently, as a resent push does); a read: the conversation's notifications
 *  closed. */
async function handlePush(data) {
  const conversationId = typeof data.conversationId === "string" ? data.conversationId : "";
  await showBadge(data.badge);
  if (data.type === "read") {
    for (const shown of await self.registration.getNotifications()) {
      if (shown.data && shown.data.conversationId === conversationId) shown.close();
    }
    return;
  }
  const messageId = typeof data.messageId === "string" ? data.messageId : "";
  // Notification text is plain text by definition: the title and body are never markup.
  await self.registration.showNotification(String(data.title || "New message"), {
    body: String(data.body || ""),
    tag: typeof data.notificationId === "string" ? data.notificationId : JSON.stringify([conversationId, messageId]),
    renotify: false,
    // Quiet hours: no sound, no vibration.
    silent: data.silent === true,
    data: { conversationId, messageId },
    ...picture(data.senderAvatarURL),
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
  event.notification.close();
  const conversationId = (event.notification.data && event.notification.data.conversationId) || "";
  event.waitUntil(openChat(conversationId));
});

/** Focuses an open tab of the page and tells it which chat to open, or opens one at that chat. */
async function openChat(conversationId) {
  const url = new URL("/", self.location.origin);
  if (conversationId) url.hash = "chat=" + encodeURIComponent(conversationId);
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of windows) {
    if (new URL(client.url).origin !== self.location.origin) continue;
    await client.focus();
    client.postMessage({ type: "open", conversationId });
    return;
  }
  await self.clients.openWindow(url.href);
}
