// Stand-ins for what only a phone has: expo-notifications, expo-device, React Navigation's container ref, React
// Native's AppState and expo-secure-store. Each records what the app asked of it.

/** expo-notifications: presented notifications, scheduled ones, dismissals, taps, permission and the push token. */
export class FakeNotifications {
  DEFAULT_ACTION_IDENTIFIER = "expo.modules.notifications.actions.DEFAULT";
  AndroidImportance = { HIGH: 4 };
  AndroidNotificationVisibility = { PRIVATE: 0 };

  constructor({ permission = "granted", canAsk = true, launchResponse = null } = {}) {
    this.permission = permission;
    this.canAsk = canAsk;
    this.launchResponse = launchResponse;
    this.presented = [];
    this.scheduled = [];
    this.dismissed = [];
    this.channels = new Map();
    this.handler = null;
    this.responseListeners = new Set();
    this.tokenListeners = new Set();
    this.tokenRequests = [];
    this.launchCleared = false;
    this.categories = new Map();
  }

  /** A notification as the system shows it, with `data` (a push's or a local one's). */
  static notification(identifier, data, { title = "", body = "" } = {}) {
    return { date: Date.now(), request: { identifier, content: { title, body, data }, trigger: null } };
  }

  /** A tap on `notification`, as a response. */
  response(notification) {
    return { actionIdentifier: this.DEFAULT_ACTION_IDENTIFIER, notification };
  }

  setNotificationHandler(handler) { this.handler = handler; }
  async setNotificationCategoryAsync(identifier, actions) { this.categories.set(identifier, actions); return { identifier, actions }; }
  async setNotificationChannelAsync(id, channel) { this.channels.set(id, channel); return channel; }
  async getPermissionsAsync() { return { status: this.permission }; }
  async requestPermissionsAsync() {
    if (this.canAsk) this.permission = "granted";
    return { status: this.permission };
  }
  async getExpoPushTokenAsync({ projectId }) {
    this.tokenRequests.push(projectId);
    return { type: "expo", data: `ExponentPushToken[${projectId}-0123456789abcdef]` };
  }
  addPushTokenListener(listener) {
    this.tokenListeners.add(listener);
    return { remove: () => this.tokenListeners.delete(listener) };
  }
  async scheduleNotificationAsync(request) {
    this.scheduled.push(request);
    this.presented.push(FakeNotifications.notification(request.identifier, request.content.data, request.content));
    return request.identifier;
  }
  async getPresentedNotificationsAsync() { return [...this.presented]; }
  async dismissNotificationAsync(identifier) {
    this.dismissed.push(identifier);
    this.presented = this.presented.filter((notification) => notification.request.identifier !== identifier);
  }
  addNotificationResponseReceivedListener(listener) {
    this.responseListeners.add(listener);
    return { remove: () => this.responseListeners.delete(listener) };
  }
  async getLastNotificationResponseAsync() { return this.launchCleared ? null : this.launchResponse; }
  async clearLastNotificationResponseAsync() { this.launchCleared = true; }

  /** The user presses the action `actionIdentifier` of `notification` (typing `userText` for a text field). */
  press(notification, actionIdentifier, userText) {
    for (const listener of [...this.responseListeners]) listener({ actionIdentifier, notification, ...(userText === undefined ? {} : { userText }) });
  }

  /** The user taps `notification` while the app runs. */
  tap(notification) {
    for (const listener of [...this.responseListeners]) listener(this.response(notification));
  }
}

/** React Navigation's container ref: ready or not, the current route, and every `navigate` asked for. */
export class FakeNavigation {
  constructor({ ready = false, route = { name: "Chats" } } = {}) {
    this.ready = ready;
    this.route = route;
    this.navigations = [];
  }
  isReady() { return this.ready; }
  getCurrentRoute() { return this.ready ? this.route : undefined; }
  navigate(name, params) {
    if (!this.ready) throw new Error("navigate before the container was ready");
    this.navigations.push({ name, params });
    this.route = { name, params };
  }
}

/** React Native's AppState. */
export class FakeAppState {
  constructor(state = "active") {
    this.currentState = state;
    this.listeners = new Set();
  }
  addEventListener(type, listener) {
    if (type !== "change") throw new Error(`AppState has no ${type} event here`);
    this.listeners.add(listener);
    return { remove: () => this.listeners.delete(listener) };
  }
  change(state) {
    this.currentState = state;
    for (const listener of [...this.listeners]) listener(state);
  }
}

/** expo-secure-store, in memory. */
export class MemoryStore {
  values = new Map();
  async getItemAsync(key) { return this.values.get(key) ?? null; }
  async setItemAsync(key, value) { this.values.set(key, value); }
  async deleteItemAsync(key) { this.values.delete(key); }
}
