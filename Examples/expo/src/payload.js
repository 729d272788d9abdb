// Herald's data out of what expo-notifications hands the app. The same push reaches JavaScript in different shapes
// on iOS and Android, and in a background task differently again: Expo puts its `data` in the APNs payload's `body`
// and in the FCM data message's `body` as a JSON string; some versions hand a notification's data over as a string
// (`dataString`). Everything here came over the network: only plain objects are taken, anything else is null.

function object(value) {
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return null;
    }
  }
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
}

/** Whether `data` is Herald's: it names a conversation. */
function herald(data) {
  return data && typeof data.conversationId === "string" && data.conversationId.length > 0 ? data : null;
}

/** The data of a notification (`Notification`, as listeners and `getPresentedNotificationsAsync` give it), or null. */
export function notificationData(notification) {
  const content = notification?.request?.content;
  return herald(object(content?.data)) ?? herald(object(content?.dataString));
}

/** The data of a background notification task's payload (`TaskManager.defineTask`'s `data`), or null. */
export function backgroundData(payload) {
  const root = object(payload);
  if (!root) return null;
  const candidates = [
    root.data?.body, // Android: the FCM data message Expo sent, its `body` a JSON string
    root.body, // iOS: the APNs payload, Expo's data under `body`
    root.data?.dataString,
    root.data,
    root.notification?.request?.content?.data,
    root.notification?.request?.content?.dataString,
    root,
  ];
  for (const candidate of candidates) {
    const data = herald(object(candidate));
    if (data) return data;
  }
  return null;
}
