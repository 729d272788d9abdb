// "Why didn't my phone ring?" through the package's API against a real `herald serve` whose Expo is a local stand-in:
// a device's reported permission, a test notification and what its push service answered, the troubleshooter's
// checks, and a message's delivery trail for one's own devices.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { API, APIError } from "../src/index.js";
import { eventually, fakeExpo, suiteServer, token } from "./harness.mjs";

/** The checks the troubleshooter answers, in its order. */
const checkIDs = ["devices", "permission", "level", "snooze", "quiet_hours", "pushes", "confirmations"];

/** An Expo token for a device id (the server takes only Expo's own form). */
const expoToken = (device) => `ExponentPushToken[${device}-0123456789abcdef]`;

/** `promise`'s refusal, which must be an `APIError`. */
async function refusal(promise) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof APIError, `an APIError, not ${error}`);
    return error;
  }
  assert.fail("it was answered, not refused");
}

describe("Why a phone did not ring, on a real server", async () => {
  const expo = await fakeExpo();
  const server = suiteServer(() => {}, () => ({ HERALD_EXPO_URL: expo.url, HERALD_PUSH_BURST_WINDOW: "0" }));
  after(() => expo.close());
  const apiFor = (user) => new API({ url: server.url, token: token(user) });

  test("a device registered with its permission, then reporting a change: the device list says it; other words and others' devices are refused", async () => {
    const kim = apiFor("kim");
    await kim.registerDevice("kim-phone", "expo", expoToken("kim-phone"), { permission: "not_asked" });
    let [phone] = await kim.devices();
    assert.equal(phone.id, "kim-phone");
    assert.equal(phone.permission, "not_asked");
    assert.ok(!Number.isNaN(Date.parse(phone.lastSeen)), `lastSeen is a time: ${phone.lastSeen}`);

    assert.equal(await kim.reportPermission("kim-phone", "granted"), null);
    [phone] = await kim.devices();
    assert.equal(phone.permission, "granted");

    const wrong = await refusal(kim.reportPermission("kim-phone", "default"));
    assert.deepEqual([wrong.status, wrong.code], [400, "invalid_request"]);
    const notHers = await refusal(apiFor("lee").reportPermission("kim-phone", "denied"));
    assert.deepEqual([notHers.status, notHers.code], [404, "not_found"]);
    [phone] = await kim.devices();
    assert.equal(phone.permission, "granted", "a refused report changes nothing");
  });

  test("a test notification goes to the device now, and the answer says what its push service did", async () => {
    const max = apiFor("max");
    await max.registerDevice("max-phone", "expo", expoToken("max-phone"), { permission: "granted" });
    const answer = await max.testDevice("max-phone");
    assert.equal(answer.device, "max-phone");
    assert.equal(answer.platform, "expo");
    assert.equal(answer.outcome, "sent", `the answer: ${JSON.stringify(answer)}`);
    assert.equal(answer.reason ?? null, null, "no reason: it was sent (a field without a value is left out)");

    // Answered after the push service took it: it is there already.
    const pushes = expo.pushes.filter((push) => push.to === expoToken("max-phone"));
    assert.equal(pushes.length, 1, `the pushes to Max's phone: ${JSON.stringify(pushes)}`);
    assert.equal(pushes[0].title, "Herald");
    assert.equal(pushes[0].body, "Test notification: notifications reach this device.");
    assert.equal(pushes[0].data?.type, "test");

    const notHis = await refusal(apiFor("ned").testDevice("max-phone"));
    assert.deepEqual([notHis.status, notHis.code], [404, "not_found"]);
    assert.equal(expo.pushes.filter((push) => push.to === expoToken("max-phone")).length, 1, "nothing sent for another");
  });

  test("more than five test notifications a minute are refused, with when to try again", async () => {
    const ola = apiFor("ola");
    await ola.registerDevice("ola-phone", "expo", expoToken("ola-phone"));
    for (let sent = 0; sent < 5; sent += 1) assert.equal((await ola.testDevice("ola-phone")).outcome, "sent");
    const limited = await refusal(ola.testDevice("ola-phone"));
    assert.deepEqual([limited.status, limited.code], [429, "rate_limited"]);
    assert.ok(limited.retryAfter > 0 && limited.retryAfter <= 60, `Retry-After: ${limited.retryAfter}`);
    assert.equal(expo.pushes.filter((push) => push.to === expoToken("ola-phone")).length, 5);
  });

  test("the troubleshooter lists its checks in order, in words, and finds a muted default level and a snooze", async () => {
    const pia = apiFor("pia");
    const empty = await pia.notificationCheck();
    assert.deepEqual(empty.checks.map(({ id }) => id), checkIDs);
    assert.ok(!Number.isNaN(Date.parse(empty.checkedAt)));
    assert.deepEqual(empty.devices, []);
    assert.notEqual(empty.checks[0].state, "ok", "no device: nothing can ring");
    for (const check of empty.checks) {
      assert.ok(["ok", "warning", "problem"].includes(check.state), JSON.stringify(check));
      assert.ok(check.title.trim() && check.detail.trim(), `words for people: ${JSON.stringify(check)}`);
      assert.ok(check.action == null || check.action.trim(), JSON.stringify(check));
    }

    await pia.registerDevice("pia-phone", "expo", expoToken("pia-phone"), { permission: "denied" });
    await pia.changeNotificationSettings({ defaultLevel: "nothing" });
    await pia.snooze(new Date(Date.now() + 3_600_000));
    const found = await pia.notificationCheck();
    const state = Object.fromEntries(found.checks.map((check) => [check.id, check]));
    assert.equal(state.devices.state, "ok", JSON.stringify(state.devices));
    for (const id of ["permission", "level", "snooze"]) {
      assert.notEqual(state[id].state, "ok", `${id}: ${JSON.stringify(state[id])}`);
      assert.ok(state[id].action?.trim(), `what to do about ${id}`);
    }
    const [device] = found.devices;
    assert.deepEqual([device.id, device.platform, device.permission, device.connected, device.confirms ?? null],
      ["pia-phone", "expo", "denied", false, null]);
    assert.deepEqual(device.lastPushes, []);

    await pia.changeNotificationSettings({ defaultLevel: "all", snoozeUntil: null });
    await pia.reportPermission("pia-phone", "granted");
    const fixed = Object.fromEntries((await pia.notificationCheck()).checks.map((check) => [check.id, check.state]));
    assert.deepEqual([fixed.permission, fixed.level, fixed.snooze], ["ok", "ok", "ok"]);
  });

  test("a message's delivery trail shows the reader's own devices: pushed, and the push service's step", async () => {
    const conversation = await server.chat("direct", "quin", ["rae"]);
    const rae = apiFor("rae");
    await rae.registerDevice("rae-phone", "expo", expoToken("rae-phone"), { permission: "granted" });
    const posted = await server.post("quin", conversation, "Ring, please");
    await eventually("the push to Rae's phone", () => expo.of(posted.id).length === 1);

    let trail;
    await eventually("the trail saying it was pushed", async () => {
      trail = await rae.deliveries(conversation, posted.id);
      return trail.members.some((member) => member.user === "rae" && member.summary === "pushed");
    }, { detail: () => JSON.stringify(trail) });
    assert.equal(trail.conversation, conversation);
    assert.deepEqual([trail.message.id, trail.message.seq, trail.message.sender], [posted.id, posted.seq, "quin"]);
    assert.ok(trail.trailHours > 0);
    const herself = trail.members.find((member) => member.user === "rae");
    assert.equal(herself.read, false);
    const [phone] = herself.devices;
    assert.deepEqual([phone.id, phone.platform, phone.confirmed], ["rae-phone", "expo", false]);
    assert.ok(phone.steps.some(({ step }) => step === "sent"), `its steps: ${JSON.stringify(phone.steps)}`);
    for (const step of [...herself.steps, ...phone.steps]) {
      assert.ok(!Number.isNaN(Date.parse(step.at)) && Array.isArray(step.reasons), JSON.stringify(step));
    }
    assert.ok(trail.members.every((member) => member.devices.every((device) => device.id === "rae-phone")),
      "no one else's devices");

    // The troubleshooter lists that push among the phone's last.
    const [checked] = (await rae.notificationCheck()).devices;
    assert.equal(checked.lastPushes[0]?.message, posted.id, JSON.stringify(checked.lastPushes));
    assert.equal(checked.lastPushes[0].conversation, conversation);

    // Refused as the rest of the API refuses them: someone outside the conversation, a message there is not.
    const outsider = await refusal(apiFor("sam").deliveries(conversation, posted.id));
    assert.deepEqual([outsider.status, outsider.code], [403, "not_a_member"]);
    const unknown = await refusal(rae.deliveries(conversation, "no-such-message"));
    assert.deepEqual([unknown.status, unknown.code], [404, "message_not_found"]);
  });
});
