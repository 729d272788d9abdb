// "Not getting notifications?" in the settings sheet: "Send a test notification" to this browser (shown while this
// browser's Web Push subscription is registered as a device; away.js announces "web push"), with what its push
// service said in plain words, and "Troubleshoot notifications": the server's checks (each one's title, state,
// what it found and what to do) and the user's devices with their last push. Everything the server says is shown
// as text. A part beside settings.js, which wires it.

import { $, listen, page, untilText } from "./state.js";
import { cleanText } from "/herald/presentation.js";
import { deviceID } from "./push.js";

/** What a test notification became, in words; `reason` (the push service's, or the server's) follows. */
const outcomeWords = {
  sent: "Sent. It should appear on this browser in a moment; if it does not, the browser or the system is holding it back.",
  logged: "This server writes notifications to its log instead of sending them (a demo server), so none will appear.",
  retry: "The browser's push service asked to try again later. Wait a minute and send another.",
  device_removed: "The browser's push service says this browser's subscription has ended, so the server forgot it. "
    + "Turn \u201cNotify me when this tab is closed\u201d off and on again.",
  refused: "The browser's push service refused it.",
  redirected: "The browser's push service answered with a redirect, which the server does not follow.",
  no_provider: "This server is not set up to send notifications to browsers.",
};

const stateWords = { ok: "OK", warning: "Warning", problem: "Problem" };

const platformWords = { apns: "iPhone or iPad", fcm: "Android", expo: "Phone app (Expo)", webpush: "Web browser" };

const permissionWords = {
  granted: "notifications allowed",
  denied: "notifications blocked",
  provisional: "delivered quietly",
  not_asked: "never asked to allow notifications",
  unknown: "permission unknown",
};

/** What happened to a push, as the device's line says it. */
const stepWords = {
  queued: "waiting",
  skipped: "not sent",
  confirmed: "shown live instead",
  read: "read before it went",
  dropped: "dropped",
  sent: "sent",
  logged: "written to the server's log",
  retried: "to be tried again",
  refused: "refused by the push service",
  device_removed: "its token had ended",
  redirected: "redirected",
  expired: "expired before it went",
  delivered: "delivered",
};

/** An element with its class and its text (text only: never markup). */
function element(tag, className, text = null) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== null) made.textContent = cleanText(text);
  return made;
}

/** A test notification's answer as a person reads it. */
export function testOutcomeText(answer) {
  const words = outcomeWords[answer.outcome] ?? `The server answered \u201c${answer.outcome}\u201d.`;
  return answer.reason ? `${words} (${answer.reason})` : words;
}

/** Why a test notification could not be asked for, in words. */
function testFailureText(error) {
  if (error?.code === "rate_limited") {
    return `Too many test notifications for now: try again ${error.retryAfter ? `in ${error.retryAfter} s` : "in a minute"}.`;
  }
  if (error?.code === "not_found") {
    return "The server no longer has this browser as a device. Turn \u201cNotify me when this tab is closed\u201d off and on again.";
  }
  return `Could not send: ${error?.message ?? error}`;
}

async function sendTestNotification() {
  const current = page.session;
  if (!current) return;
  const button = $("test-push");
  const outcome = $("test-push-outcome");
  button.disabled = true;
  outcome.dataset.outcome = "sending";
  outcome.textContent = "Sending\u2026";
  try {
    const answer = await current.api.testDevice(deviceID());
    if (current !== page.session) return;
    outcome.dataset.outcome = answer.outcome;
    outcome.textContent = cleanText(testOutcomeText(answer));
  } catch (error) {
    if (current !== page.session) return;
    outcome.dataset.outcome = "failed";
    outcome.textContent = cleanText(testFailureText(error));
  } finally {
    button.disabled = false;
  }
}

/** One check as the panel lists it. */
function checkItem(check) {
  const item = element("li", "check");
  item.dataset.check = String(check.id);
  const state = Object.hasOwn(stateWords, check.state) ? check.state : "warning";
  item.dataset.state = state;
  const body = element("div", "check-body");
  body.append(element("strong", "check-title", check.title ?? ""), element("p", "check-detail", check.detail ?? ""));
  if (check.action) body.append(element("p", "check-action", `What to do: ${check.action}`));
  item.append(element("span", "check-state", stateWords[state]), body);
  return item;
}

/** One device as the panel lists it: what it is, whether it may notify and is connected, its last push. */
function deviceItem(device) {
  const item = element("li", "check-device");
  item.dataset.device = String(device.id);
  const mine = device.id === deviceID() && device.platform === "webpush";
  const name = `${platformWords[device.platform] ?? String(device.platform)}${mine ? " (this browser)" : ""}`;
  const facts = [
    device.permission ? permissionWords[device.permission] ?? String(device.permission) : "has not said whether it may notify",
    device.connected ? "connected now" : "not connected",
  ];
  const [last] = device.lastPushes ?? [];
  facts.push(last
    ? `last push ${untilText(last.at)}: ${stepWords[last.step] ?? String(last.step)}${last.detail ? ` (${last.detail})` : ""}`
    : "no pushes lately");
  item.append(element("strong", "check-title", name), element("span", "device-id", device.id),
    element("p", "check-detail", facts.join(" \u00b7 ")));
  return item;
}

/** Runs the server's checks and lists them. */
async function troubleshoot() {
  const current = page.session;
  if (!current) return;
  const button = $("troubleshoot-button");
  const status = $("troubleshoot-status");
  $("troubleshoot").hidden = false;
  button.disabled = true;
  status.textContent = "Checking\u2026";
  try {
    const answer = await current.api.notificationCheck();
    if (current !== page.session) return;
    $("checks").replaceChildren(...answer.checks.map(checkItem));
    $("check-devices").replaceChildren(...answer.devices.map(deviceItem));
    $("check-devices-heading").hidden = answer.devices.length === 0;
    const problems = answer.checks.filter((check) => check.state !== "ok").length;
    status.textContent = problems === 0
      ? "Everything checked is fine."
      : `${problems} ${problems === 1 ? "thing" : "things"} to look at.`;
    button.textContent = "Check again";
  } catch (error) {
    if (current !== page.session) return;
    $("checks").replaceChildren();
    $("check-devices").replaceChildren();
    $("check-devices-heading").hidden = true;
    status.textContent = cleanText(`Could not check: ${error?.message ?? error}`);
  } finally {
    button.disabled = false;
  }
}

/** The part as a sheet opens: nothing said yet (what it said belongs to the moment it was asked). */
export function resetTroubleshooter() {
  $("test-push-outcome").textContent = "";
  delete $("test-push-outcome").dataset.outcome;
  $("troubleshoot").hidden = true;
  $("checks").replaceChildren();
  $("check-devices").replaceChildren();
  $("troubleshoot-status").textContent = "";
  $("troubleshoot-button").textContent = "Troubleshoot notifications";
}

export function wireTroubleshooter() {
  // This browser's pushes turned on or off: the test notification is offered only while they are on.
  listen("web push", (on) => {
    $("test-push-row").hidden = !on;
    if (!on) $("test-push-outcome").textContent = "";
  });
  $("test-push").addEventListener("click", sendTestNotification);
  $("troubleshoot-button").addEventListener("click", troubleshoot);
}
