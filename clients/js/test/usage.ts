// A typed app using the package as its README shows: `tsc --noEmit -p clients/js/test` checks the declarations
// (src/index.d.ts) against it, and the lines marked @ts-expect-error must stay errors.
import {
  API, APIError, HeraldClient, LiveNotifications, Notifier, SECOND, bannerConfig, confirmationInterval, defaultSettings,
  amended, findMentions, isAmendment, messagePreview, notificationIdentifier,
  type Banner, type Effect, type IncomingMessage, type Message, type NotificationCheck, type NotificationSettings,
  type TestNotification, PushDecryptionError, decryptPush, generatePushKeys, pushDecryptionAvailable, type DecryptedPush,
  type PushKeys,
} from "../src/index.js";

async function renewToken(used: string): Promise<string> {
  return `${used}-renewed`;
}

export async function app(token: string): Promise<void> {
  const client = new HeraldClient({ url: "https://chat.example.com", token, renew: renewToken, device: "phone-1" });
  const stop = client.on("message", ({ message, conversation, sender }: IncomingMessage) => {
    const words: string = `${sender.name} in ${conversation.title ?? conversation.id}: ${message.text ?? ""} (#${message.seq})`;
    void words;
  });
  client.on("member", ({ message }) => {
    const change: "member_added" | "member_removed" | "member_left" | "owner_added" | "owner_removed" | "renamed" | "deleted"
      = message.event.type;
    void change;
  });
  client.on("state", (state) => {
    const known: "connecting" | "live" | "reconnecting" | "paused" | "refused" | "closed" = state;
    void known;
  });
  client.on("level", ({ conversation, level, until }) => void [conversation, level, until]);
  client.on("notifications", (settings: NotificationSettings) => void settings.quietHours.length);
  client.on("tokenRefused", (frame) => void frame.code);
  client.connect();
  client.focus("c1");
  client.setAppState("background");
  const stored: { id: string; seq: number } = await client.send("c1", "@Bob lunch?", { mentions: ["bob"] });
  void stored.seq;
  stop();

  const api: API = client.api;
  const page = await api.conversations({ levelSet: true });
  for (const conversation of page.conversations) {
    const level: "all" | "mentions" | "nothing" | null = conversation.level;
    void [level, conversation.unreadCount, conversation.people[0]?.name];
  }
  const history = await api.messages("c1", { before: 100, limit: 20 });
  await api.markRead("c1", history[history.length - 1]?.seq ?? 0, "phone-1");
  await api.setLevel("c1", "mentions", new Date(Date.now() + 3_600_000));
  await api.snooze(null);
  await api.registerDevice("phone-1", "expo", "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]");
  const edited: Message = await api.editMessage("c1", "m1", { text: "fixed", mentions: ["bob"] });
  const gone: Message = await api.deleteMessage("c1", "m1");
  void [edited.edited, gone.deleted, messagePreview(gone), amended(edited, gone).deleted, isAmendment(gone.event)];
  await api.registerDevice("phone-1", "expo", "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]", { permission: "granted" });
  await api.reportPermission("phone-1", "not_asked");
  const test: TestNotification = await api.testDevice("phone-1");
  if (test.outcome === "no_provider" || test.outcome === "refused") void test.reason?.length;
  const check: NotificationCheck = await api.notificationCheck();
  for (const { id, state, title, action } of check.checks) void [id, state === "problem", title, action ?? ""];
  for (const device of check.devices) void [device.permission, device.confirms, device.lastPushes[0]?.step];
  const trail = await api.deliveries("c1", "m1");
  for (const member of trail.members) {
    const why: "own" | "silent" | "muted" | "unmentioned" | "snoozed" | "read" | "no_devices" | "pushed" | "confirmed"
      | "not_pushed" | "pending" = member.summary;
    void [why, member.devices.map(({ platform, steps }) => `${platform ?? "gone"} ${steps.map(({ step }) => step)}`)];
  }
  try {
    await api.removeDevice("phone-1");
  } catch (error) {
    if (error instanceof APIError) void [error.code, error.status, error.retryAfter];
  }

  const live = new LiveNotifications({ client, userID: "alice", config: bannerConfig({ coalesce: true }) });
  live.on("effect", (effect: Effect) => {
    switch (effect.type) {
      case "show": {
        const banner: Banner = effect.banner;
        void [banner.title, banner.subtitle, banner.body, banner.count];
        break;
      }
      case "navigate":
        void effect.conversation.length;
        break;
      case "local":
        void [effect.notification.silent, notificationIdentifier(effect.notification)];
        break;
      default:
        break;
    }
  });
  live.start();
  live.setAppState("background");
  client.pause();
  client.resume();
  client.on("pushed", ({ conversation, message, seq }) => void [conversation, message, seq + confirmationInterval]);
  void new LiveNotifications({ client, userID: "alice", inBackground: "keep" }).inBackground;
  live.open(null);
  live.gesture({ type: "swipe", dy: -80 });
  await live.setLevel("c1", null);
  live.stop();

  const notifier = new Notifier({ userID: "alice" });
  const effects = notifier.handle({ type: "settings", settings: defaultSettings() }, 2 * SECOND);
  void effects.map(({ instant, effect }) => `${instant} ${effect.type}`);
  void findMentions("@Bob", [{ id: "bob", name: "Bob" }]).ids;

  // A device's push keys, registered; an encrypted push read, its failure by code.
  const keys: PushKeys = await generatePushKeys();
  await api.registerDevice("phone-1", "expo", "ExponentPushToken[x]", { permission: "granted", keys });
  try {
    const push: DecryptedPush = await decryptPush({ encrypted: "…", conversationId: "c1", messageId: "m1" }, keys);
    void (push.title ?? push.data.conversationId);
  } catch (error) {
    if (error instanceof PushDecryptionError && error.code === "unsupported") void pushDecryptionAvailable();
  }

  // @ts-expect-error: an app state is foreground or background
  client.setAppState("asleep");
  // @ts-expect-error: a level is all, mentions or nothing
  await api.setLevel("c1", "loud");
  // @ts-expect-error: a permission is one of five words
  await api.reportPermission("phone-1", "default");
  // @ts-expect-error: the client has no such event
  client.on("typing", () => {});
}
