// The Expo example's logic (Examples/expo/src), under Node against a real `herald serve` pushing to a local fake Expo,
// with fakes for what only a phone has (expo-notifications, navigation, AppState, the Keychain): the banner for
// another chat and none for the one on screen, the tap that launched the app opening its chat once navigation is
// ready, and the silent "read" push clearing that chat's notifications.

import assert from "node:assert/strict";
import { register } from "node:module";
import { after, describe, test } from "node:test";
import { eventually, fakeExpo, suiteServer, token } from "../../../clients/js/test/harness.mjs";
import { FakeAppState, FakeNavigation, FakeNotifications, MemoryStore } from "./fakes.mjs";

register("./resolve.mjs", import.meta.url);
const { SignInStore, checkSignIn, connect, demoPeople, followAppState, serverAddress, userOfToken } = await import("../src/session.js");
const { CHAT_ROUTE, NotificationTaps, chatOnScreen } = await import("../src/navigation.js");
const {
  CHANNEL_ID, answerNotification, answerNotifications, clearConversation, handleBackgroundPush, postEffects, registerForPushes,
  setUpNotifications,
} = await import("../src/notifications.js");
const { backgroundData, notificationData } = await import("../src/payload.js");
const { ChatList, chatTitle, lineOf, mergeMessages } = await import("../src/chats.js");
const { HeraldClient, bannerConfig } = await import("../../../clients/js/src/index.js");

/** Expo's push as the phone shows it: the notification its data makes. */
function shown(push) {
  return FakeNotifications.notification(push.data.notificationId, push.data, { title: push.title, body: push.body });
}

/** The same push as a background task receives it on each platform: iOS hands over the APNs payload (Expo's data
 *  under `body`), Android the FCM data message (Expo's data as a JSON string under `body`). */
function asBackgroundTask(push) {
  return {
    ios: { aps: { "content-available": 1 }, body: push.data, experienceId: "@example/herald-expo" },
    android: { data: { body: JSON.stringify(push.data), experienceId: "@example/herald-expo", scopeKey: "@example/herald-expo" } },
  };
}

describe("The Expo example", async () => {
  const expo = await fakeExpo();
  const lives = [];
  const server = suiteServer(() => lives.forEach((live) => live.stop()), () => ({ HERALD_EXPO_URL: expo.url, HERALD_CONFIRM_WITHIN: "3" }));
  after(() => expo.close());

  /** A signed-in phone of `user`: the app's wiring, as App.js does it, with fakes for the phone. */
  async function phone(user, { appState = "active", route = { name: "Chats" } } = {}) {
    const store = new SignInStore(new MemoryStore(), () => `${user}-install`);
    const signIn = await checkSignIn({ server: server.url, token: token(user) });
    await store.save(signIn);
    const deviceID = await store.deviceID();
    const live = connect({ ...(await store.load()), deviceID, config: bannerConfig({ duration: 60_000_000 }) });
    lives.push(live);
    const navigation = new FakeNavigation({ ready: true, route });
    const AppState = new FakeAppState(appState);
    const Notifications = new FakeNotifications();
    const effects = [];
    live.on("effect", (effect) => effects.push(effect));
    followAppState(live, AppState);
    postEffects(live, Notifications);
    live.start();
    live.open(chatOnScreen(navigation));
    return { live, deviceID, navigation, AppState, Notifications, effects, of: (type) => effects.filter((effect) => effect.type === type) };
  }

  test("sign-in: the token is checked with the server and kept, the device id made once", async () => {
    assert.equal(userOfToken(token("zoë")), "zoë");
    assert.equal(userOfToken("not a token"), null);
    assert.equal(serverAddress(" 192.168.1.20:8080/ "), "http://192.168.1.20:8080");
    // One token, minted once: two mints a second apart differ in their expiry.
    const yan = token("yan");
    const checked = await checkSignIn({ server: server.url, token: ` ${yan} ` });
    assert.deepEqual(checked, { server: server.url, token: yan, user: "yan" });
    await assert.rejects(checkSignIn({ server: server.url, token: token("yan", { secret: "another-secret-of-at-least-32-bytes!!!" }) }),
      /refused the token \(invalid_token\)/);
    await assert.rejects(checkSignIn({ server: "http://127.0.0.1:9", token: token("yan") }), /cannot be reached: is herald serve running with --host 0\.0\.0\.0/);
    await assert.rejects(checkSignIn({ server: server.url, token: "eyJ" }), /not a token/);
    assert.equal(await demoPeople(server.url), null, "a server without --demo offers no demo people");

    const store = new SignInStore(new MemoryStore(), () => "first");
    assert.equal(await store.load(), null);
    await store.save(checked);
    assert.deepEqual(await store.load(), checked);
    assert.equal(await store.deviceID(), "expo-first");
    store.makeID = () => "second";
    assert.equal(await store.deviceID(), "expo-first", "one id for the install, whoever signs in");
    await store.forget();
    assert.equal(await store.load(), null);
  });

  test("a banner for a message in another chat, none for the chat on screen", async () => {
    const direct = await server.chat("direct", "bob", ["alice"]);
    const group = await server.chat("group", "carol", ["alice", "bob"], "Team");
    const alice = await phone("alice", { route: { name: CHAT_ROUTE, params: { conversationId: direct } } });
    assert.equal(alice.live.client.openConversation, direct, "the chat on screen, told to the client");
    await eventually("live", () => alice.live.client.state === "live");

    await server.post("bob", direct, "in the open chat", { id: "open" });
    await eventually("skipped: on screen", () => alice.of("skip").some((effect) => effect.message === "open" && effect.reason === "active"));
    await server.post("carol", group, "Standup in 5", { id: "other" });
    await eventually("a banner", () => alice.of("show").length === 1);
    const [{ banner }] = alice.of("show");
    assert.deepEqual([banner.id, banner.title, banner.subtitle, banner.body], ["other", "Carol", "in Team", "Standup in 5"]);
    assert.equal(alice.of("show").filter((effect) => effect.banner.id === "open").length, 0);

    // Leaving the chat (the navigator's state changes): its next message is a banner too.
    alice.navigation.navigate("Chats");
    alice.live.open(chatOnScreen(alice.navigation));
    assert.equal(alice.live.client.openConversation, null);
    alice.live.gesture({ type: "close" });
    await server.post("bob", direct, "now elsewhere", { id: "elsewhere" });
    await eventually("a banner for the direct chat", () => alice.of("show").some((effect) => effect.banner.id === "elsewhere"));

    // The list the app shows: titles by name, lines as the engine words them, a new message moving its chat up.
    const list = new ChatList({ api: alice.live.client.api, me: "alice" });
    const chats = await list.load();
    assert.deepEqual(chats.map((chat) => chatTitle(chat, "alice")), ["Bob", "Team"]);
    assert.equal(lineOf(chats[1], chats[1].lastMessage, "alice"), "Carol: Standup in 5");
    const posted = await server.post("carol", group, "again", { id: "again" });
    assert.equal(list.apply({ message: posted, conversation: chats[1] }, null), true);
    assert.deepEqual([list.chats[0].id, list.chats[0].unreadCount], [group, chats[1].unreadCount + 1]);
    assert.deepEqual(mergeMessages([posted, chats[0].lastMessage], [posted]).map((message) => message.id), ["elsewhere", "again"]);
  });

  test("pushes: the channel and permission, the Expo token registered as a device, and what no project id means", async () => {
    const Notifications = new FakeNotifications({ permission: "undetermined" });
    await setUpNotifications({ Notifications, platform: "android" });
    assert.equal(Notifications.channels.get(CHANNEL_ID).importance, Notifications.AndroidImportance.HIGH);
    assert.equal((await Notifications.handler.handleNotification()).shouldShowBanner, false, "Herald's own banner shows it");

    const store = new SignInStore(new MemoryStore(), () => "erin-phone");
    const live = connect({ server: server.url, token: token("erin"), user: "erin", deviceID: await store.deviceID() });
    lives.push(live);
    const device = await store.deviceID();
    const result = await registerForPushes({ live, deviceID: device, Notifications, Device: { isDevice: true }, projectId: "proj-1" });
    assert.equal(result.status, "registered");
    const devices = await live.client.api.devices();
    assert.deepEqual(devices.map(({ id, platform }) => [id, platform]), [["expo-erin-phone", "expo"]]);
    assert.deepEqual(Notifications.tokenRequests, ["proj-1"]);

    await assert.rejects(registerForPushes({ live, deviceID: device, Notifications, Device: { isDevice: true }, projectId: undefined }), /eas init/);
    const denied = new FakeNotifications({ permission: "denied", canAsk: false });
    assert.deepEqual(await registerForPushes({ live, deviceID: device, Notifications: denied, Device: { isDevice: true }, projectId: "proj-1" }),
      { status: "denied" });
    assert.equal(live.notifier.device.notificationsPermitted, false, "the engine knows it may not post");
    assert.deepEqual(await registerForPushes({ live, deviceID: device, Notifications, Device: { isDevice: false }, projectId: "proj-1" }),
      { status: "simulator" });
  });

  test("a push it cannot decrypt, or that withheld its words, has them fetched with the device key registering kept; another's message is not read", async () => {
    const { keepDeviceKey, withheldReader } = await import("../src/session.js");
    const direct = await server.chat("direct", "uma", ["vic"]);
    const storage = new MemoryStore();
    const store = new SignInStore(storage, () => "vic-phone");
    await store.save({ server: server.url, token: token("vic") });
    const live = connect({ server: server.url, token: token("vic"), user: "vic", deviceID: await store.deviceID() });
    lives.push(live);
    const Notifications = new FakeNotifications();
    const registered = await registerForPushes({
      live, deviceID: await store.deviceID(), Notifications, Device: { isDevice: true }, projectId: "proj-1",
      keepDeviceKey: (key) => keepDeviceKey(storage, key),
    });
    assert.equal(registered.status, "registered");
    const readWithheld = await withheldReader(storage);
    assert.ok(readWithheld, "the device key was kept");
    await server.post("uma", direct, "fetched words", { id: "w1" });
    const ours = () => expo.of("w1").find((push) => push.to === registered.token);
    await eventually("Vic's push of w1", () => ours() !== undefined);
    const pushed = ours();
    // What an encrypted push looks like when this install cannot open it: ids in clear, a body for other keys.
    const clear = { type: "message", conversationId: direct, messageId: "w1", seq: pushed.data.seq,
      notificationId: pushed.data.notificationId, withheld: "encrypted", encrypted: "AAAA" };
    Notifications.presented = [FakeNotifications.notification("expo-w1", clear, { body: "New message" })];
    assert.equal(await handleBackgroundPush(asBackgroundTask({ data: clear }).android, Notifications, { keys: null, readWithheld }), 1);
    const content = Notifications.presented[0].request.content;
    assert.equal(content.body, "fetched words");
    assert.match(content.title, /^New message from /);
    // Not a message pushed to this device: nothing read, nothing changed.
    const other = { ...clear, messageId: "not-pushed", notificationId: "herald-0" };
    assert.equal(await handleBackgroundPush(asBackgroundTask({ data: other }).ios, Notifications, { readWithheld }), 0);
    await store.forget();
    assert.equal(await withheldReader(storage), null, "signed out: the key is gone");
  });

  test("a tapped push that launched the app opens its chat once navigation is ready, once, and only when signed in", async () => {
    const direct = await server.chat("direct", "gil", ["hal"]);
    const hal = await phone("hal", { appState: "background" });
    await hal.live.client.api.registerDevice(hal.deviceID, "expo", `ExponentPushToken[${hal.deviceID}-0123456789abcdef]`);
    await server.post("gil", direct, "tap me", { id: "tap-me" });
    await eventually("the push", () => expo.of("tap-me").length === 1, { within: 30_000 });
    const [push] = expo.of("tap-me");
    assert.equal(push.data.conversationId, direct);

    // The app starts from the tap: navigation not ready, nobody signed in yet.
    const Notifications = new FakeNotifications({ launchResponse: null });
    Notifications.launchResponse = Notifications.response(shown(push));
    const navigation = new FakeNavigation({ ready: false });
    let signedIn = false;
    const taps = new NotificationTaps({ navigation, Notifications, canOpen: () => navigation.isReady() && signedIn });
    taps.listen();
    await eventually("the launch tap read", () => Notifications.launchCleared);
    Notifications.tap(shown(push)); // the listener may report the same tap again
    navigation.ready = true;
    taps.ready(); // <NavigationContainer onReady>, before the sign-in was read
    assert.deepEqual(navigation.navigations, [], "not before someone is signed in");
    signedIn = true;
    taps.ready(); // signed in
    assert.deepEqual(navigation.navigations, [{ name: CHAT_ROUTE, params: { conversationId: direct } }]);
    taps.ready();
    assert.equal(navigation.navigations.length, 1, "opened once");

    // Another start, where navigation was ready before the launch tap was read and the listener reported it too.
    const again = new FakeNotifications();
    again.launchResponse = again.response(shown(push));
    const ready = new FakeNavigation({ ready: true });
    new NotificationTaps({ navigation: ready, Notifications: again }).listen();
    again.tap(shown(push));
    await eventually("the launch tap read", () => again.launchCleared);
    assert.deepEqual(ready.navigations, [{ name: CHAT_ROUTE, params: { conversationId: direct } }], "one tap, one chat opened");

    // The chat on screen is what the app tells Herald: no banner, no push for it.
    hal.navigation.navigate(CHAT_ROUTE, { conversationId: chatOnScreen(navigation) });
    hal.AppState.change("active");
    hal.live.open(chatOnScreen(hal.navigation));
    await eventually("live again", () => hal.live.client.state === "live");
    await server.post("gil", direct, "seen here", { id: "seen-here" });
    await eventually("skipped: on screen", () => hal.of("skip").some((effect) => effect.message === "seen-here" && effect.reason === "active"));

    // A tap while the app runs opens at once; a tap on something that is not Herald's, or on an action, does nothing.
    Notifications.tap(FakeNotifications.notification("herald-999", { conversationId: "c-other" }));
    Notifications.tap(FakeNotifications.notification("someone-else", { url: "https://example.com" }));
    Notifications.tap(FakeNotifications.notification("herald-1000", { conversationId: 42 }));
    assert.deepEqual(navigation.navigations.map((step) => step.params.conversationId), [direct, "c-other"]);
  });

  test("the silent read push removes that chat's notifications, and only that chat's", async () => {
    const first = await server.chat("direct", "ivy", ["jon"]);
    const second = await server.chat("group", "ivy", ["jon"], "Second");
    const jon = await phone("jon", { appState: "background" });
    await jon.live.client.api.registerDevice(jon.deviceID, "expo", `ExponentPushToken[${jon.deviceID}-0123456789abcdef]`);
    for (const [conversation, id] of [[first, "r1"], [first, "r2"], [second, "r3"]]) await server.post("ivy", conversation, id, { id });
    await eventually("three pushes", () => ["r1", "r2", "r3"].every((id) => expo.of(id).length === 1), { within: 30_000 });
    const Notifications = new FakeNotifications();
    Notifications.presented = ["r1", "r2", "r3"].map((id) => shown(expo.of(id)[0]));
    Notifications.presented.push(FakeNotifications.notification("not-herald", { url: "https://example.com" }));

    // Read on another of Jon's devices: the server sends this phone the silent clear.
    const lastSeq = expo.of("r2")[0].data.seq;
    await server.request("jon", "POST", `/v1/conversations/${first}/read`, { upTo: Number(lastSeq), device: "jon-laptop" });
    await eventually("the read push", () => expo.pushes.some((push) => push.data?.type === "read" && push.data.conversationId === first), { within: 30_000 });
    const read = expo.pushes.find((push) => push.data?.type === "read");
    assert.equal(read._contentAvailable, true, "a background push");
    assert.equal(read.title, undefined, "silent");

    const { ios, android } = asBackgroundTask(read);
    assert.deepEqual(backgroundData(ios), read.data);
    assert.deepEqual(backgroundData(android), read.data);
    assert.equal(await handleBackgroundPush(ios, Notifications), 2);
    assert.deepEqual(Notifications.presented.map((notification) => notification.request.identifier),
      [expo.of("r3")[0].data.notificationId, "not-herald"]);
    assert.equal(await handleBackgroundPush(android, Notifications), 0, "again: nothing left of that chat");
    assert.equal(await handleBackgroundPush({ data: { body: "{not json" } }, Notifications), 0);
    assert.equal(await handleBackgroundPush({ body: expo.of("r3")[0].data }, Notifications), 0, "a message push clears nothing");
    assert.equal(Notifications.presented.length, 2);
  });

  test("an edit's push replaces its notification's words, a deletion's removes it; one no longer shown stays gone", async () => {
    // Two chats: in one, the second message would be the first's burst, and its notification the one shown.
    const chat = await server.chat("direct", "kay", ["lou"]);
    const other = await server.chat("group", "kay", ["lou"], "Other");
    const lou = await phone("lou", { appState: "background" });
    await lou.live.client.api.registerDevice(lou.deviceID, "expo", `ExponentPushToken[${lou.deviceID}-0123456789abcdef]`);
    await server.post("kay", chat, "x1", { id: "x1" });
    await server.post("kay", other, "x2", { id: "x2" });
    await eventually("two pushes", () => ["x1", "x2"].every((id) => expo.of(id).length === 1), { within: 30_000 });
    const Notifications = new FakeNotifications();
    Notifications.presented = [shown(expo.of("x1")[0])];

    const kay = new HeraldClient({ url: server.url, token: token("kay") }).api;
    await kay.editMessage(chat, "x1", { text: "fixed" });
    await kay.editMessage(other, "x2", { text: "fixed too" });
    const follow = (id, type) => expo.pushes.find((push) => push.data?.type === type && push.data.messageId === id);
    await eventually("the edits' pushes", () => follow("x1", "message_edited") && follow("x2", "message_edited"), { within: 30_000 });
    const edit = follow("x1", "message_edited");
    assert.equal(edit.title, undefined, "data only: Expo cannot replace a notification");
    assert.equal(edit.data.body, "fixed");
    assert.equal(await handleBackgroundPush(asBackgroundTask(edit).ios, Notifications), 1);
    assert.deepEqual(Notifications.presented.map((n) => [n.request.identifier, n.request.content.body]),
      [[expo.of("x1")[0].data.notificationId, "fixed"]]);
    assert.equal(await handleBackgroundPush(asBackgroundTask(follow("x2", "message_edited")).android, Notifications), 0,
      "x2's notification is not shown: the edit brings nothing back");

    await kay.deleteMessage(chat, "x1");
    await eventually("the deletion's push", () => follow("x1", "message_deleted"), { within: 30_000 });
    assert.equal(await handleBackgroundPush(asBackgroundTask(follow("x1", "message_deleted")).android, Notifications), 1);
    assert.deepEqual(Notifications.presented, []);
  });

  test("a push's Reply and Mark as read, answered from the notification: a retried reply stored once, the read from this phone", async () => {
    const chat = await server.chat("direct", "max", ["nia"]);
    const nia = await phone("nia", { appState: "background" });
    await nia.live.client.api.registerDevice(nia.deviceID, "expo", `ExponentPushToken[${nia.deviceID}-0123456789abcdef]`);
    await setUpNotifications({ Notifications: nia.Notifications, platform: "ios" });
    assert.deepEqual(nia.Notifications.categories.get("HERALD_MESSAGE").map((action) => action.identifier), ["HERALD_REPLY", "HERALD_MARK_READ"]);
    assert.equal(nia.Notifications.categories.get("HERALD_MESSAGE")[0].options.opensAppToForeground, false);
    await server.post("max", chat, "Dinner at eight?", { id: "ask" });
    await eventually("the push", () => expo.of("ask").length === 1, { within: 30_000 });
    const push = expo.of("ask")[0];
    assert.equal(push.categoryId, "HERALD_MESSAGE");
    const notification = shown(push);

    // Reply, pressed twice (the system retried it): one message.
    const stop = answerNotifications(nia.live, nia.deviceID, nia.Notifications);
    const reply = await answerNotification(nia.live, nia.deviceID, { actionIdentifier: "HERALD_REPLY", notification, userText: " Sounds good " });
    nia.Notifications.press(notification, "HERALD_REPLY", " Sounds good ");
    assert.equal(reply.type, "reply");
    await eventually("the reply stored", async () =>
      (await nia.live.client.api.messages(chat)).some((message) => message.id === reply.messageId));
    const texts = async () => (await nia.live.client.api.messages(chat)).map((message) => message.text);
    await eventually("the retry answered", async () => (await texts()).length === 2);
    assert.deepEqual(await texts(), ["Dinner at eight?", "Sounds good"]);

    // Mark as read (on another message): the marker moves, as Nia from this phone.
    await server.post("max", chat, "Or nine?", { id: "ask-2" });
    await eventually("the second push", () => expo.of("ask-2").length === 1, { within: 30_000 });
    nia.Notifications.press(shown(expo.of("ask-2")[0]), "HERALD_MARK_READ");
    const seq = Number(expo.of("ask-2")[0].data.seq);
    await eventually("read", async () => (await nia.live.client.api.conversations()).conversations
      .find((summary) => summary.id === chat)?.readUpTo === seq);
    assert.equal(await answerNotification(nia.live, nia.deviceID, { actionIdentifier: "HERALD_REPLY", notification, userText: "  " }), null);
    stop();
  });

  test("leaving a chat clears its notifications; local notifications carry their push's identifier", async () => {
    const group = await server.chat("group", "kim", ["lea"], "Going");
    const lea = await phone("lea");
    await eventually("live", () => lea.live.client.state === "live");
    lea.Notifications.presented = [FakeNotifications.notification("herald-1", { conversationId: group }),
      FakeNotifications.notification("herald-2", { conversationId: "elsewhere" })];
    await server.request("kim", "DELETE", `/v1/conversations/${group}/members/lea`);
    await eventually("the clear effect", () => lea.of("clear").some((effect) => effect.conversation === group));
    await eventually("its notification gone", () => lea.Notifications.dismissed.includes("herald-1"));
    assert.deepEqual(lea.Notifications.presented.map((notification) => notification.request.identifier), ["herald-2"]);

    // A `local` effect (an app that keeps its stream in the background): posted under the push's identifier.
    const listeners = new Set();
    const fakeLive = { on: (name, listener) => { listeners.add(listener); return () => listeners.delete(listener); } };
    const Notifications = new FakeNotifications();
    postEffects(fakeLive, Notifications);
    for (const listener of listeners) {
      listener({ type: "local", notification: { message: "m1", title: "New message from Kim", body: "hi", thread: group, seq: 77, silent: true } });
    }
    await eventually("scheduled", () => Notifications.scheduled.length === 1);
    const [request] = Notifications.scheduled;
    assert.equal(request.identifier, "herald-77");
    assert.deepEqual(request.content, { title: "New message from Kim", body: "hi", sound: false, categoryIdentifier: "HERALD_MESSAGE",
      data: { conversationId: group, messageId: "m1", seq: "77" } });
    assert.equal(request.trigger, null);
    assert.equal(notificationData(Notifications.presented[0]).conversationId, group);
    assert.equal(await clearConversation(Notifications, group), 1);
  });
});

test("an encrypted push in the background: its words decrypted with this install's keys onto its notification; without keys, or refused, it stays \"New message\"", async () => {
  const { pushKeys, storedPushKeys } = await import("../src/session.js");
  const { base64URLEncode } = await import("../../../clients/js/src/index.js");
  const { encrypt } = await import("../../../clients/js/test/ece.mjs");
  const storage = new MemoryStore();
  const keys = await pushKeys(storage);
  assert.deepEqual(await pushKeys(storage), keys, "made once, kept");
  assert.deepEqual(await storedPushKeys(storage), keys);
  assert.equal(await storedPushKeys(new MemoryStore()), null);

  const words = { title: "New message from Ann", body: "hello", summary: "2 new messages", badge: 2,
    data: { type: "message", conversationId: "c1", messageId: "m1", seq: "12", notificationId: "herald-12" } };
  const clearData = (plaintext, ids = {}) => ({ type: "message", conversationId: "c1", messageId: "m1", seq: "12", notificationId: "herald-12",
    withheld: "encrypted", encrypted: base64URLEncode(encrypt(JSON.stringify(plaintext), keys)), ...ids });
  const push = (data) => ({ body: "New message", data });
  const fresh = () => {
    const Notifications = new FakeNotifications();
    Notifications.presented = [FakeNotifications.notification("expo-1", clearData(words), { body: "New message" })];
    return Notifications;
  };
  const bodies = (Notifications) => Notifications.presented.map((n) => [n.request.content.title, n.request.content.body]);

  for (const shape of ["ios", "android"]) {
    const Notifications = fresh();
    assert.equal(await handleBackgroundPush(asBackgroundTask(push(clearData(words)))[shape], Notifications, { keys }), 1, shape);
    assert.deepEqual(bodies(Notifications), [["New message from Ann", "2 new messages\nhello"]]);
  }
  const cases = [
    ["no keys (no Web Crypto)", clearData(words), null],
    ["another install's keys", clearData(words), await pushKeys(new MemoryStore())],
    ["words about another chat", clearData({ ...words, data: { ...words.data, conversationId: "c2" } }), keys],
    ["a changed body", { ...clearData(words), encrypted: clearData(words).encrypted.slice(0, -2) + "AA" }, keys],
  ];
  for (const [what, data, given] of cases) {
    const Notifications = fresh();
    assert.equal(await handleBackgroundPush(asBackgroundTask(push(data)).android, Notifications, { keys: given }), 0, what);
    assert.deepEqual(bodies(Notifications), [["", "New message"]], what);
  }
  // A clear's plaintext clears that chat.
  const Notifications = fresh();
  const read = { type: "read", conversationId: "c1", seq: "12", withheld: "encrypted",
    encrypted: base64URLEncode(encrypt(JSON.stringify({ badge: 0, data: { type: "read", conversationId: "c1", seq: "12" } }), keys)) };
  assert.equal(await handleBackgroundPush(asBackgroundTask({ data: read }).ios, Notifications, { keys }), 1);
  assert.deepEqual(Notifications.presented, []);
});
