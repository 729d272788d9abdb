// The system's notifications: the Android channel, permission and the Expo push token registered as a Herald device,
// local notifications for the engine's `local` effects, a notification's Reply and Mark as read, and a chat's
// notifications cleared when it was read on another device or the user left it. Plain JavaScript: expo-notifications and expo-device are handed in.

import {
  decryptPush, markReadAction, notificationAnswer, notificationCategory, notificationIdentifier, pushDecryptionAvailable,
  replyAction,
} from "@herald-chat/client";
import { backgroundData, notificationData } from "./payload.js";

/** The Android channel Herald's notifications go to. Herald's Expo pushes name no channel: app.json makes this one
 *  expo-notifications' `defaultChannel`, so they land here; made with a high importance, so a message pops up. */
export const CHANNEL_ID = "default";

/**
 * Once, at start: how a notification arriving in the foreground is shown (not as a system banner: Herald's own banner
 * showed it, or the chat is on screen), and the Android channel (Android 13 asks for the permission only once a
 * channel exists, so this comes before `registerForPushes`).
 */
export async function setUpNotifications({ Notifications, platform }) {
  Notifications.setNotificationHandler({
    handleNotification: async () => ({ shouldShowBanner: false, shouldShowList: true, shouldPlaySound: false, shouldSetBadge: true }),
  });
  // Herald's category (its pushes carry `categoryId`, and so do the local notifications below): Reply with a text
  // field and Mark as read, both answered without opening the app (`answerNotifications`).
  await Notifications.setNotificationCategoryAsync(notificationCategory, [
    { identifier: replyAction, buttonTitle: "Reply", textInput: { submitButtonTitle: "Send", placeholder: "Message" },
      options: { opensAppToForeground: false } },
    { identifier: markReadAction, buttonTitle: "Mark as read", options: { opensAppToForeground: false } },
  ]);
  if (platform === "android") {
    await Notifications.setNotificationChannelAsync(CHANNEL_ID, {
      name: "Messages",
      importance: Notifications.AndroidImportance.HIGH,
      sound: "default",
      vibrationPattern: [0, 250, 250, 250],
      lockscreenVisibility: Notifications.AndroidNotificationVisibility.PRIVATE,
    });
  }
}

/**
 * Asks for the permission, and registers this phone's Expo push token as the Herald device `deviceID` of the signed-in
 * user. Resolves to `{status}`: "registered" (with `token`), "denied", or "simulator" (no push token there). The
 * engine is told whether notifications may be posted. `projectId` is the EAS project's (`eas init` writes it into
 * app.json's `extra.eas.projectId`); without it Expo cannot make a token, and this says so.
 */
export async function registerForPushes({ live, deviceID, Notifications, Device, projectId, keys = null, keepDeviceKey = null }) {
  let { status } = await Notifications.getPermissionsAsync();
  if (status !== "granted") ({ status } = await Notifications.requestPermissionsAsync());
  const granted = status === "granted";
  live.setPermission(granted);
  if (!granted) return { status: "denied" };
  if (!Device.isDevice) return { status: "simulator" };
  if (!projectId) throw new Error("no EAS project id: run `eas init` (it writes extra.eas.projectId into app.json)");
  const { data: token } = await Notifications.getExpoPushTokenAsync({ projectId });
  // With this install's push keys (session.js `pushKeys`, null without Web Crypto) the server can encrypt its pushes.
  const pushKeys = await keys; // a promise of them is taken too
  const { deviceKey } = await live.client.api.registerDevice(deviceID, "expo", token, pushKeys ? { keys: pushKeys } : {});
  // The device key reads what a push withheld, or what this install could not decrypt (session.js `keepDeviceKey`).
  if (keepDeviceKey) await keepDeviceKey(deviceKey);
  return { status: "registered", token };
}

/** Registers again whenever the system gives the app a new push token; returns the function that stops. */
export function followPushTokenChanges(options) {
  const subscription = options.Notifications.addPushTokenListener(() => {
    registerForPushes(options).catch(() => {
      // Not now (offline, signed out): the next start registers again.
    });
  });
  return () => subscription.remove();
}

/** At sign-out, before the client is stopped: no more pushes to this phone for that user. */
export async function unregister(live, deviceID) {
  try {
    await live.client.api.removeDevice(deviceID);
  } catch {
    // Offline: the server removes a token the push service reports dead; a later sign-in replaces it.
  }
}

/**
 * Carries out the engine's system-notification effects: `local` is posted under its identifier (the one the
 * message's push would have, so the two are one notification), `clear` removes that chat's notifications. Returns the
 * function that stops.
 */
export function postEffects(live, Notifications) {
  return live.on("effect", (effect) => {
    if (effect.type === "local") {
      const { title, body, thread, message, silent, seq } = effect.notification;
      const data = { conversationId: thread, messageId: message, ...(typeof seq === "number" ? { seq: String(seq) } : {}) };
      Notifications.scheduleNotificationAsync({
        identifier: notificationIdentifier(effect.notification),
        content: { title, body, sound: silent ? false : "default", categoryIdentifier: notificationCategory, data },
        trigger: null,
      }).catch(() => {});
    } else if (effect.type === "clear") {
      clearConversation(Notifications, effect.conversation).catch(() => {});
    }
  });
}

/**
 * Answers a notification's Reply and Mark as read as the signed-in user, from this phone (`deviceID`: the server then
 * clears the user's other devices): `notificationAnswer` decides, from the action and the notification's data (a
 * push's or a local one's), and a reply's id comes from the notification and the text, so a retry is stored once.
 * Returns the function that stops. A tap is `NotificationTaps`' (navigation.js).
 */
export function answerNotifications(live, deviceID, Notifications) {
  const subscription = Notifications.addNotificationResponseReceivedListener((response) => {
    answerNotification(live, deviceID, response).catch(() => {
      // Offline or signed out: the notification stays, and the chat shows what is true when opened.
    });
  });
  return () => subscription.remove();
}

/** Carries out one response's Reply or Mark as read; resolves to what was done (`notificationAnswer`'s), or null. */
export async function answerNotification(live, deviceID, response) {
  const answer = notificationAnswer(response?.actionIdentifier, notificationData(response?.notification), response?.userText);
  if (answer?.type === "reply") {
    await live.client.api.postReply(answer.conversationId, { id: answer.messageId, text: answer.text });
  } else if (answer?.type === "read") {
    await live.client.api.markRead(answer.conversationId, answer.seq, deviceID);
  }
  return answer;
}

/** Removes every notification of a chat from the notification centre; resolves to how many. */
export async function clearConversation(Notifications, conversationId) {
  const presented = await Notifications.getPresentedNotificationsAsync();
  const ofChat = presented.filter((notification) => notificationData(notification)?.conversationId === conversationId);
  await Promise.all(ofChat.map((notification) => Notifications.dismissNotificationAsync(notification.request.identifier)));
  return ofChat.length;
}

/** The background task's name (index.js defines it at the top level, as expo-task-manager requires). */
export const BACKGROUND_TASK = "herald-background-notification";

/**
 * A push that reached the app in the background (the task's payload): the silent "read" push (`data.type` "read",
 * sent when the chat was read on another of the user's devices) clears that chat's notifications here; a message's
 * edit (`message_edited`, with its new `title` and `body`) replaces the words of its notification if it is still
 * shown, silently; its deletion (`message_deleted`) removes it. Resolves to how many notifications it changed.
 */
export async function handleBackgroundPush(payload, Notifications, { keys = null, readWithheld = null } = {}) {
  let data = backgroundData(payload);
  const withheld = ["encrypted", "none", "sender"].includes(data?.withheld);
  if (withheld) {
    // The system shows "New message" (or the sender alone); the words are put on that notification here: decrypted
    // with this install's keys (HERALD_PUSH_CONTENT=encrypted, where Web Crypto exists), else fetched with the
    // device key (`readWithheld`, session.js `withheldReader`). A clear or a deletion needs only its clear ids.
    const clear = data;
    data = (clear.withheld === "encrypted" ? await openEncrypted(clear, keys) : null)
      ?? (clear.type === "read" || clear.type === "message_deleted" ? clear : await fetchWithheld(clear, readWithheld));
    if (!data) return 0;
  }
  if (data?.type === "read") return clearConversation(Notifications, data.conversationId);
  // A message's words arrive here only when they were withheld (a full alert is the system's to show).
  if (!(data?.type === "message" && withheld) && data?.type !== "message_edited" && data?.type !== "message_deleted") return 0;
  if (typeof data.notificationId !== "string") return 0;
  const presented = await Notifications.getPresentedNotificationsAsync();
  const of = presented.filter((notification) => notificationData(notification)?.notificationId === data.notificationId
    || notification.request.identifier === data.notificationId);
  for (const notification of of) {
    if (data.type === "message_deleted") {
      await Notifications.dismissNotificationAsync(notification.request.identifier);
    } else {
      // The same identifier replaces it; no sound: an edit is not news, and a decrypted alert already rang.
      const { content } = notification.request;
      await Notifications.dismissNotificationAsync(notification.request.identifier);
      await Notifications.scheduleNotificationAsync({
        identifier: notification.request.identifier,
        content: { ...content, title: String(data.title ?? content.title ?? ""), body: String(data.body ?? ""), sound: null },
        trigger: null,
      });
    }
  }
  return of.length;
}

/** The fields of an encrypted push, decrypted with `keys` and checked against its clear ids (`data.title`,
 *  `data.body` the words), or null when it cannot be read here. */
/** A withheld message's words fetched with the device key, as an opened push's data (`type` and `notificationId` the
 *  clear ones: an edit's replaces the notification it names); null when there is no reader, the message is not
 *  this device's to read, or the answer is about another message. */
export async function fetchWithheld(clear, readWithheld) {
  if (!readWithheld || !["message", "message_edited"].includes(clear?.type) || typeof clear.messageId !== "string") return null;
  try {
    const pushed = await readWithheld(clear.conversationId, clear.messageId);
    if (pushed?.data?.conversationId !== clear.conversationId || pushed?.data?.messageId !== clear.messageId) return null;
    const words = { body: String(pushed.body ?? "") };
    if (typeof pushed.title === "string") words.title = pushed.title;
    return { ...pushed.data, type: clear.type, notificationId: clear.notificationId, ...words };
  } catch {
    return null;
  }
}

export async function openEncrypted(data, keys) {
  if (!keys || !pushDecryptionAvailable()) return null;
  try {
    const plaintext = await decryptPush(data, keys);
    const words = {};
    if (typeof plaintext.title === "string") words.title = plaintext.title;
    if (typeof plaintext.body === "string") words.body = [plaintext.summary, plaintext.body].filter((part) => typeof part === "string").join("\n");
    return { ...plaintext.data, ...words };
  } catch {
    return null;
  }
}
