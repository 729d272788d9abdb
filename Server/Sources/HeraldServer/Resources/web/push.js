// Web Push for the page: the "Notify me when this tab is closed" switch. Turning it on (from a click: browsers ask
// for permission only then) registers the service worker (/sw.js, scope /), subscribes with the server's VAPID key
// and registers the subscription as this browser's `webpush` device; turning it off, or signing out, takes all of
// that back. docs/push.md, "Web Push", says what the server does with it. The server also hears whether the browser
// lets the page notify (the troubleshooter reads it): with each registration, and whenever it changes.

const deviceKey = "herald.device";
const ownerKey = "herald.webpush.user";

/** How long the browser's push service may take to hand out a subscription (it is a network round trip). */
const subscribeTimeout = 30_000;

/** This browser's device id: a random UUID kept in localStorage, the same for every tab. The stream and reads name
 *  it, so the server sends no push to a browser that has the page open. */
export function deviceID() {
  let id = localStorage.getItem(deviceKey);
  if (!id || !/^[0-9a-f-]{36}$/.test(id)) {
    id = crypto.randomUUID();
    localStorage.setItem(deviceKey, id);
  }
  return id;
}

/** Whether this browser can receive Web Push for the page (a secure context with service workers and PushManager). */
export function webPushSupported() {
  return window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/** The user this browser's subscription was registered for, or null. */
export function webPushOwner() {
  return localStorage.getItem(ownerKey);
}

/** What the browser says of notifications, as the server takes a device's permission ("default" is "not_asked"). */
export function browserPermission() {
  if (!("Notification" in window)) return "unknown";
  return { granted: "granted", denied: "denied", default: "not_asked" }[Notification.permission] ?? "unknown";
}

/** Tells the server what the browser says of notifications now, when this browser is `userID`'s registered device.
 *  Quiet: a failure (a device the server pruned meanwhile) is left for the next registration. */
export async function reportBrowserPermission(api, userID) {
  if (webPushOwner() !== userID) return;
  await api.reportPermission(deviceID(), browserPermission()).catch(() => {});
}

async function pageRegistration() {
  return (await navigator.serviceWorker.getRegistration("/")) ?? null;
}

/** Whether the switch is on for `userID`: this browser holds a subscription registered for them. */
export async function webPushIsOn(userID) {
  if (!webPushSupported() || webPushOwner() !== userID) return false;
  const registration = await pageRegistration();
  return Boolean(await registration?.pushManager.getSubscription());
}

/** Two VAPID keys the same: the subscription's (bytes) and the server's (base64url). */
function sameKey(bytes, base64url) {
  if (!bytes) return false;
  const given = btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return given === base64url;
}

function withTimeout(promise, milliseconds, message) {
  let timer;
  const expired = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(message)), milliseconds); });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** The device token of `subscription`: its JSON with this page's address (`page`), where a notification's click
 *  opens the chat (`navigate` of the server's declarative pushes, docs/push.md). */
function subscriptionToken(subscription) {
  return JSON.stringify({ ...subscription.toJSON(), page: location.origin + location.pathname });
}

/**
 * Turns pushes on for `userID`: asks for permission (call it from a click), registers the service worker,
 * subscribes with the server's key (a subscription made with another key is dropped first) and registers the
 * subscription with the server. Throws an Error whose message is for people.
 */
export async function turnWebPushOn(api, userID) {
  if (!webPushSupported()) throw new Error("This browser cannot receive notifications for a closed tab.");
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    throw new Error(permission === "denied"
      ? "Notifications are blocked for this site in the browser's settings."
      : "Notifications were not allowed.");
  }
  const key = await api.webPushKey();
  await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  const registration = await withTimeout(navigator.serviceWorker.ready, subscribeTimeout,
    "The notification worker did not start.");
  let subscription = await registration.pushManager.getSubscription();
  if (subscription && !sameKey(subscription.options.applicationServerKey, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  subscription ??= await withTimeout(
    registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }),
    subscribeTimeout, "The browser's push service did not answer.");
  await api.registerDevice(deviceID(), "webpush", subscriptionToken(subscription), { permission: browserPermission() });
  localStorage.setItem(ownerKey, userID);
}

const workerDatabase = "herald-worker";

/**
 * What the service worker needs to answer a notification with no tab open (Mark as read): the token and this
 * browser's device id, kept in IndexedDB while pushes are on (a service worker has no localStorage). `null` forgets
 * them (pushes off, signed out). Never throws: without IndexedDB, Mark as read opens the chat instead.
 */
export function keepForWorker(token) {
  return new Promise((resolve) => {
    if (typeof indexedDB === "undefined") return resolve();
    if (!token) {
      const removal = indexedDB.deleteDatabase(workerDatabase);
      removal.onsuccess = removal.onerror = removal.onblocked = () => resolve();
      return;
    }
    const opening = indexedDB.open(workerDatabase, 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore("session");
    opening.onerror = () => resolve();
    opening.onsuccess = () => {
      const database = opening.result;
      const transaction = database.transaction("session", "readwrite");
      transaction.objectStore("session").put({ token, device: deviceID() }, "current");
      transaction.oncomplete = transaction.onerror = transaction.onabort = () => {
        database.close();
        resolve();
      };
    };
  });
}

/** Registers this browser's subscription again (after sign-in: the server may have pruned it, the browser may have
 *  renewed it). Quiet: a failure leaves the switch as it was. */
export async function renewWebPush(api) {
  const registration = await pageRegistration();
  const subscription = await registration?.pushManager.getSubscription();
  if (!subscription) return;
  await api.registerDevice(deviceID(), "webpush", subscriptionToken(subscription), { permission: browserPermission() })
    .catch(() => {});
}

/**
 * Turns pushes off: removes the device from the server (when `api` can still reach it; otherwise the push service
 * answers the server's next push with 410 and the server removes it then), unsubscribes and unregisters the worker.
 */
export async function turnWebPushOff(api) {
  localStorage.removeItem(ownerKey);
  await keepForWorker(null);
  if (!webPushSupported()) return;
  if (api) await api.removeDevice(deviceID()).catch(() => {});
  const registration = await pageRegistration();
  const subscription = await registration?.pushManager.getSubscription();
  await subscription?.unsubscribe().catch(() => {});
  await registration?.unregister().catch(() => {});
}
