// Suppression needs proof (docs/behaviour.md §1, rule 8), from the JavaScript side, against a real `herald serve`
// pushing to a local fake Expo: the client confirms what it takes in, few frames for a burst; a phone frozen with
// SIGSTOP (the device script in a Node process of its own) is pushed, and once woken does not notify what the server
// pushed meanwhile; LiveNotifications closes the stream in the background, so the server pushes at once.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";
import { HeraldClient, LiveNotifications, bannerConfig, confirmationInterval } from "../src/index.js";
import { eventually, fakeExpo, outboxDepth, suiteServer, token } from "./harness.mjs";

const deviceScript = fileURLToPath(new URL("../../../Tests/Web/device.mjs", import.meta.url));

/** Registers `user`'s Expo device `id`. */
async function registerPhone(server, user, id) {
  await server.request(user, "PUT", `/v1/devices/${id}`, { platform: "expo", token: `ExponentPushToken[${id}-0123456789abcdef]` });
}

/** The device script in a process of its own (in the background, or in the foreground with `open` on screen): what it
 *  prints, and SIGSTOP / SIGCONT. */
function startDevice(server, user, device, appState = "background", open = null) {
  // Node 20 has WebSocket behind this flag; 22 and later take it too.
  const child = spawn(process.execPath, ["--experimental-websocket", "--no-warnings", deviceScript, server.url, token(user), user,
    device, appState, ...(open ? [open] : [])], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = [];
  createInterface({ input: child.stdout }).on("line", (line) => lines.push(JSON.parse(line)));
  const effects = (type) => lines.filter((line) => line.effect?.type === type).map((line) => line.effect);
  return {
    lines,
    live: () => lines.some((line) => line.state === "live"),
    notified: () => effects("local").map((effect) => effect.notification.message),
    bannered: () => effects("show").map((effect) => effect.banner.id),
    skippedAsPushed: () => effects("skip").filter((effect) => effect.reason === "pushed").map((effect) => effect.message),
    freeze: () => child.kill("SIGSTOP"),
    wake: () => child.kill("SIGCONT"),
    stop: () => {
      child.kill("SIGCONT");
      child.kill("SIGTERM");
    },
  };
}

describe("Confirmations: a frozen phone", async () => {
  const expo = await fakeExpo();
  const devices = [];
  const server = suiteServer(() => devices.forEach((device) => device.stop()), () => ({
    HERALD_EXPO_URL: expo.url, HERALD_CONFIRM_WITHIN: "6", // time enough for a running phone to confirm on a loaded machine
    HERALD_PUSH_BURST_WINDOW: "0", // each message its own push: the test follows one message's collapse id
  }));
  after(() => expo.close());

  test("running, it confirms and is not pushed; frozen (SIGSTOP), it is pushed; woken, no notification of its own for that message, one for the next", async () => {
    const direct = await server.chat("direct", "erin", ["dave"]);
    await registerPhone(server, "dave", "dave-phone");
    const phone = startDevice(server, "dave", "dave-phone");
    devices.push(phone);
    await eventually("the phone live", phone.live);

    await server.post("erin", direct, "while running", { id: "running" });
    await eventually("its own notification", () => phone.notified().includes("running"));
    await eventually("the waiting push dropped", async () => (await outboxDepth(server)) === 0);
    assert.deepEqual(expo.of("running"), [], "no push for what it confirmed");

    phone.freeze();
    await server.post("erin", direct, "while frozen", { id: "frozen" });
    await eventually("the push of what the frozen phone never confirmed", () => expo.of("frozen").length === 1, { within: 30_000 });
    phone.wake();
    await eventually("the pushed message skipped", () => phone.skippedAsPushed().includes("frozen"), {
      detail: () => JSON.stringify(phone.lines),
    });
    await server.post("erin", direct, "after waking", { id: "after" });
    await eventually("the next one notified", () => phone.notified().includes("after"));
    await eventually("nothing waiting", async () => (await outboxDepth(server)) === 0);
    assert.deepEqual(phone.notified(), ["running", "after"], "never the pushed one");
    assert.equal(expo.of("frozen").length, 1, "pushed once");
    assert.equal(expo.of("frozen")[0].data.notificationId, `herald-${expo.of("frozen")[0].data.seq}`);
    assert.deepEqual(expo.of("after"), []);
  });

  test("in the foreground with another chat open, frozen: pushed; woken, no banner for it though its message frame comes first; live banners at once", async () => {
    const direct = await server.chat("direct", "ivy", ["jon"]);
    const other = await server.chat("group", "ivy", ["jon"], "Elsewhere");
    await registerPhone(server, "jon", "jon-phone");
    const phone = startDevice(server, "jon", "jon-phone", "foreground", other);
    devices.push(phone);
    await eventually("the phone live", phone.live);

    await server.post("ivy", direct, "while running", { id: "fg-running" });
    await eventually("its banner", () => phone.bannered().includes("fg-running"));
    await eventually("the waiting push dropped", async () => (await outboxDepth(server)) === 0);
    assert.deepEqual(expo.of("fg-running"), [], "no push for what it confirmed");

    phone.freeze();
    await server.post("ivy", direct, "while frozen", { id: "fg-frozen" });
    await eventually("the push of what the frozen phone never confirmed", () => expo.of("fg-frozen").length === 1, { within: 30_000 });
    phone.wake();
    await eventually("the pushed message skipped", () => phone.skippedAsPushed().includes("fg-frozen"), {
      detail: () => JSON.stringify(phone.lines),
    });
    const posted = Date.now();
    await server.post("ivy", direct, "after waking", { id: "fg-after" });
    await eventually("the next one's banner", () => phone.bannered().includes("fg-after"));
    assert.ok(Date.now() - posted < 5_000);
    assert.deepEqual(phone.bannered(), ["fg-running", "fg-after"], "never a banner for the pushed one");
    assert.deepEqual(phone.notified(), [], "nor a notification");
  });

  test("a burst is confirmed with a few frames, the last one through its last message", async () => {
    const group = await server.chat("group", "gil", ["hal"], "Burst");
    const sent = [];
    class CountingWebSocket extends WebSocket {
      send(data) {
        const frame = JSON.parse(data);
        if (frame.type === "received") sent.push({ at: Date.now(), through: frame.through });
        super.send(data);
      }
    }
    const client = new HeraldClient({ url: server.url, token: token("hal"), WebSocket: CountingWebSocket });
    const seen = [];
    client.on("message", ({ message }) => seen.push(message.seq));
    client.connect();
    try {
      await eventually("live", () => client.state === "live");
      const started = Date.now();
      let last = 0;
      for (let index = 0; index < 40; index += 1) last = (await server.post("gil", group, `burst ${index}`)).seq;
      await eventually("the last message confirmed", () => sent.at(-1)?.through === last);
      const during = sent.filter((frame) => frame.at >= started);
      const elapsed = sent.at(-1).at - started;
      assert.ok(during.length <= 2 + elapsed / confirmationInterval,
        `${during.length} received frames for 40 messages over ${elapsed} ms: at most one each ${confirmationInterval} ms`);
      assert.ok(during.every((frame, index) => index === 0 || frame.through > during[index - 1].through), "each one further");
    } finally {
      client.close();
    }
  });
});

describe("Confirmations: LiveNotifications in the background", async () => {
  const expo = await fakeExpo();
  const lives = [];
  // A grace period longer than the test: a push that comes says the server knew the phone was gone.
  const server = suiteServer(() => lives.forEach((live) => live.stop()), () => ({
    HERALD_EXPO_URL: expo.url, HERALD_CONFIRM_WITHIN: "300",
  }));
  after(() => expo.close());

  test("the stream closes in the background and the server pushes at once; back in the foreground, no banner for what it pushed", async () => {
    const direct = await server.chat("direct", "kim", ["lee"]);
    await registerPhone(server, "lee", "lee-phone");
    const client = new HeraldClient({ url: server.url, token: token("lee"), device: "lee-phone", backoff: { initial: 100, max: 400 } });
    const live = new LiveNotifications({ client, userID: "lee", config: bannerConfig({ duration: 60_000_000 }) });
    lives.push(live);
    const effects = [];
    live.on("effect", (effect) => effects.push(effect));
    live.start();
    await eventually("live", () => client.state === "live");

    live.setAppState("background");
    await eventually("paused", () => client.state === "paused");
    // "paused" is the client's word, set as it sends its close; the server decides by what it counts.
    await eventually("the server counts the stream gone", async () => {
      const check = await server.request("lee", "GET", "/v1/me/notifications/check");
      return check.devices.find((device) => device.id === "lee-phone")?.connected === false;
    });
    await server.post("kim", direct, "while away", { id: "away" });
    await eventually("pushed at once", () => expo.of("away").length === 1);

    live.setAppState("foreground");
    await eventually("live again", () => client.state === "live");
    await eventually("caught up: skipped as pushed", () => effects.some((effect) => effect.type === "skip" && effect.reason === "pushed"));
    assert.deepEqual(effects.filter((effect) => effect.type === "show" || effect.type === "local"), [], "no banner, no notification of it");
    assert.equal(live.visible, null);

    await server.post("kim", direct, "back on screen", { id: "back" });
    await eventually("a banner for the next", () => effects.some((effect) => effect.type === "show" && effect.banner.id === "back"));
    await eventually("its push dropped once confirmed", async () => (await outboxDepth(server)) === 0);
    assert.deepEqual(expo.of("back"), []);
  });
});
