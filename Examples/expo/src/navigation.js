// Which chat is on screen, and taps on notifications turned into opening their chat. Plain JavaScript: React
// Navigation's container ref and expo-notifications are handed in.

import { notificationData } from "./payload.js";

/** The route name of a chat, whose params carry `{conversationId, title}`. */
export const CHAT_ROUTE = "Chat";

/** The chat on screen (null: the list, sign-in or any other screen), from a React Navigation container ref. */
export function chatOnScreen(navigation) {
  if (!navigation.isReady()) return null;
  const route = navigation.getCurrentRoute();
  return route?.name === CHAT_ROUTE && typeof route.params?.conversationId === "string" ? route.params.conversationId : null;
}

/**
 * Taps on notifications, each opening its chat once. A tap that launched the app comes before navigation is ready,
 * and one may come before the user signed in: it is kept, and opened by `ready()` once a chat can be shown. The same
 * tap seen twice (the launch response, and the listener that may report it again) opens once.
 *
 * `navigation`: the container ref (`isReady`, `navigate`). `Notifications`: expo-notifications. `canOpen()`: whether
 * a chat can be shown now (by default, whether navigation is ready; the app adds "and someone is signed in").
 */
export class NotificationTaps {
  constructor({ navigation, Notifications, canOpen = () => navigation.isReady() }) {
    this.navigation = navigation;
    this.Notifications = Notifications;
    this.canOpen = canOpen;
    this.pending = null;
    this.seen = new Set();
  }

  /** Listens for taps while the app runs and reads the tap that launched it; returns the function that stops. */
  listen() {
    const subscription = this.Notifications.addNotificationResponseReceivedListener((response) => this.tapped(response));
    this.Notifications.getLastNotificationResponseAsync()
      .then((response) => {
        if (!response) return;
        this.tapped(response);
        // Handled: a reload of the app's JavaScript must not open it again.
        return this.Notifications.clearLastNotificationResponseAsync?.();
      })
      .catch(() => {});
    return () => subscription.remove();
  }

  /** A notification response: its chat opened now, or once navigation is ready. */
  tapped(response) {
    if (response?.actionIdentifier && response.actionIdentifier !== this.Notifications.DEFAULT_ACTION_IDENTIFIER) return;
    const notification = response?.notification;
    const conversationId = notificationData(notification)?.conversationId;
    if (!conversationId) return;
    const key = notification.request.identifier ?? `${conversationId}@${notification.date ?? ""}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (!this.canOpen()) {
      this.pending = conversationId;
      return;
    }
    this.open(conversationId);
  }

  /** A chat can be shown now (`<NavigationContainer onReady>`, or a sign-in): the tap kept meanwhile is opened. */
  ready() {
    if (!this.canOpen()) return;
    const conversationId = this.pending;
    this.pending = null;
    if (conversationId) this.open(conversationId);
  }

  open(conversationId) {
    this.navigation.navigate(CHAT_ROUTE, { conversationId });
  }
}
