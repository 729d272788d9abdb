// LiveNotifications against a real `herald serve`: the stream through HeraldCore's rules (the engine, engine.js) and
// out as effects, as a React Native app's banner component and notification code get them.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { HeraldClient, LiveNotifications, bannerConfig } from "../src/index.js";
import { eventually, suiteServer, token } from "./harness.mjs";

describe("LiveNotifications on a real server", () => {
  const lives = [];
  const server = suiteServer(() => lives.forEach((live) => live.stop()));

  /** Alice's live notifications (a fresh user name per test), with every effect recorded. The stream stays open in the
   *  background (what it brings is what these tests are about; confirm.test.mjs has the default, which closes it). */
  function liveFor(user, options = {}) {
    const client = new HeraldClient({ url: server.url, token: token(user), backoff: { initial: 100, max: 400 }, ...options });
    const live = new LiveNotifications({ client, userID: user, config: bannerConfig({ duration: 60_000_000 }), inBackground: "keep" });
    const effects = [];
    live.on("effect", (effect) => effects.push(effect));
    lives.push(live);
    return { live, client, effects, of: (type) => effects.filter((effect) => effect.type === type) };
  }

  test("history caught up at the start does not notify; a message from elsewhere is a banner, the open chat's is not", async () => {
    const direct = await server.chat("direct", "bob", ["alice"]);
    const group = await server.chat("group", "carol", ["alice", "bob"], "Team");
    const old = await server.post("bob", direct, "from before");
    const { live, client, effects, of } = liveFor("alice", { after: old.seq - 1 });
    live.open(direct);
    live.start();
    await eventually("live", () => client.state === "live");
    assert.deepEqual(effects.filter((effect) => effect.type !== "skip"), [], "the first catch-up is history, not news");

    await server.post("bob", direct, "in the open chat");
    await eventually("the open chat's message skipped", () => of("skip").some((effect) => effect.reason === "active"));
    assert.equal(of("show").length, 0);

    const elsewhere = await server.post("carol", group, "Standup in 5");
    await eventually("a banner for the group", () => of("show").length === 1);
    const [{ banner }] = of("show");
    assert.equal(banner.id, elsewhere.id);
    assert.equal(banner.title, "Carol");
    assert.equal(banner.subtitle, "in Team");
    assert.equal(banner.body, "Standup in 5");
    assert.equal(live.visible.id, elsewhere.id);

    // Tapped: the banner goes, and its chat becomes the focus (the server is told too).
    live.gesture({ type: "tap" });
    assert.deepEqual(of("navigate").map((effect) => effect.conversation), [group]);
    assert.equal(client.openConversation, group);
    await server.post("bob", group, "now open here");
    await eventually("skipped as active", () => of("skip").filter((effect) => effect.reason === "active").length === 2);
  });

  test("in the background a message is a local notification; the user's levels, read from the server, are followed", async () => {
    const direct = await server.chat("direct", "erin", ["dave"]);
    const group = await server.chat("group", "erin", ["dave"], "Busy");
    await server.request("dave", "PUT", `/v1/conversations/${group}/notifications`, { level: "mentions" });
    const { live, client, of } = liveFor("dave");
    live.start();
    await eventually("live", () => client.state === "live");
    live.setAppState("background");
    await server.post("erin", group, "nobody named");
    await eventually("skipped: not mentioned", () => of("skip").some((effect) => effect.reason === "unmentioned"));
    await server.post("erin", group, "@Dave look", { mentions: ["dave"] });
    await server.post("erin", direct, "psst");
    await eventually("two local notifications", () => of("local").length === 2);
    assert.deepEqual(of("local").map(({ notification }) => [notification.title, notification.body]), [
      ["New message in Busy", "Erin: @Dave look"],
      ["New message from Erin", "psst"],
    ]);
    assert.equal(of("show").length, 0, "no banner in the background");

    // A level set here applies at once; one set on another device arrives on the stream.
    await live.setLevel(direct, "nothing");
    await server.post("erin", direct, "muted now");
    await eventually("skipped: muted", () => of("skip").some((effect) => effect.reason === "muted"));
    await server.request("dave", "PUT", `/v1/conversations/${direct}/notifications`, { level: null });
    await eventually("the level frame applied", () => client.state === "live" && live.notifier.device.levels.size === 1);
    await server.post("erin", direct, "back");
    await eventually("notified again", () => of("local").length === 3);
  });

  test("a snooze set elsewhere silences everything, and its end reaches a device that was away meanwhile", async () => {
    const direct = await server.chat("direct", "gil", ["fran"]);
    const { live, client, effects, of } = liveFor("fran");
    live.start();
    await eventually("live", () => client.state === "live");
    await server.request("fran", "PUT", "/v1/me/notifications", { snoozeUntil: new Date(Date.now() + 3_600_000).toISOString() });
    await eventually("the settings frame", () => live.notifier.device.settings.snoozeUntil !== null);
    await server.post("gil", direct, "shh");
    await eventually("skipped: snoozed", () => of("skip").some((effect) => effect.reason === "snoozed"), { detail: () => JSON.stringify(effects) });

    // The snooze ends on another device while this one is away: the change reaches it whichever comes first, the
    // settings read again at the reconnect, or the frame.
    await server.kill();
    await eventually("offline", () => client.state === "reconnecting");
    await server.start();
    await server.request("fran", "PUT", "/v1/me/notifications", { snoozeUntil: null });
    await eventually("live again", () => client.state === "live");
    await eventually("the snooze gone", () => live.notifier.device.settings.snoozeUntil === null);
    await server.post("gil", direct, "awake?");
    await eventually("a banner", () => of("show").some(({ banner }) => banner.body === "awake?"));
  });
});
