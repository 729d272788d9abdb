""""Not getting notifications?" on the page, in headless Chromium: "Send a test notification" reaches this browser's
service worker through a real Web Push from the server, and the page says what became of it; the browser's
permission reaches the server with the registration and when it changes; "Troubleshoot notifications" lists the
server's checks (a muted default level and a snooze among them) and the devices, as text."""
import base64
import json
import os
import shutil
import tempfile
import unittest
import urllib.parse

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from harness import (BrowserPushService, DevTools, PushService, Server, chromium, open_settings, severe_console_lines,
                     reset_notifications, sign_in_as, wait, worker_evaluate)
from page_case import PageTestCase

TEST_BODY = "Test notification: notifications reach this device."
CHECK_IDS = ["devices", "permission", "level", "snooze", "quiet_hours", "pushes", "confirmations"]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def subscription_keys():
    """A subscription's keys as a browser makes them: an EC P-256 key pair and an auth secret. Answers the private
    key, the auth secret and the `keys` of `PushSubscription.toJSON()`."""
    key = ec.generate_private_key(ec.SECP256R1())
    p256dh = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    auth = os.urandom(16)
    return key, auth, {"p256dh": b64url(p256dh), "auth": b64url(auth)}


class TestNotification(unittest.TestCase):
    """The browser subscribes for real (against BrowserPushService, the stand-in for Chromium's push service), and
    the page registers that subscription. Chromium's subscription names an endpoint on Google's push service, which
    this machine cannot reach, so the test then gives the server, for the same device, a subscription whose push
    service is a local one (PushService) and whose keys are the test's: what the server sends there is decrypted
    with those keys and handed to the service worker as the browser does with a push (DevTools'
    `ServiceWorker.deliverPushMessage`). From the click to the notification shown, everything else is the page's,
    the server's and the worker's own."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="herald-test-push-")
        self.addCleanup(shutil.rmtree, self.folder, True)
        self.relay = PushService(self.folder)
        self.addCleanup(self.relay.close)
        self.server = Server({"HERALD_PUSH_CA_FILE": self.relay.certificate, "HERALD_WEBPUSH_ALLOW_PRIVATE": "1",
                              "HERALD_VAPID_SUBJECT": "mailto:troubleshoot@herald.example"})
        self.addCleanup(self.server.close)
        self.browser_push = BrowserPushService()
        self.addCleanup(self.browser_push.close)
        self.driver = chromium(push_service=self.browser_push)
        self.addCleanup(self.driver.quit)
        self.origin = self.server.url.rstrip("/")
        self.devtools = DevTools(self.driver)
        self.addCleanup(self.devtools.close)
        self.devtools.call("ServiceWorker.enable")

    def devices(self, token):
        status, body = self.server.request("GET", "/v1/devices", token)
        self.assertEqual(status, 200, body)
        return body["devices"]

    def worker_registration(self):
        """The page's service worker registration id, once it runs."""
        return self.devtools.service_worker(self.origin)

    def test_a_test_notification_reaches_this_browser_and_the_page_says_what_became_of_it(self):
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        alice = self.server.token("alice")
        open_settings(self.driver)
        # No subscription yet: nothing to test.
        self.assertFalse(self.driver.find_element(By.ID, "test-push-row").is_displayed())

        self.driver.find_element(By.ID, "push-switch").click()
        wait(self.driver, lambda d: [x for x in self.devices(alice) if x["platform"] == "webpush"], 30,
             "the browser registered as a webpush device")
        button = wait(self.driver, lambda d: d.find_element(By.ID, "test-push") if d.find_element(By.ID, "test-push-row").is_displayed()
                      else None, 10, "Send a test notification offered once pushes are on")
        [device] = [x for x in self.devices(alice) if x["platform"] == "webpush"]
        self.assertEqual(device["id"], self.driver.execute_script("return localStorage.getItem('herald.device')"))
        self.assertEqual(device["permission"], "granted", "the permission came with the registration")

        # The same device, reached through the local push service with the test's keys (see the class's words).
        key, auth, keys = subscription_keys()
        subscription = {"endpoint": f"https://127.0.0.1:{self.relay.port}/push/{device['id']}", "keys": keys}
        status, body = self.server.request("PUT", f"/v1/devices/{urllib.parse.quote(device['id'])}", alice,
                                           {"platform": "webpush", "token": json.dumps(subscription), "permission": "granted"})
        self.assertEqual(status, 200, body)
        registration = self.worker_registration()

        button.click()
        outcome = wait(self.driver, lambda d: d.find_element(By.ID, "test-push-outcome")
                       if d.find_element(By.ID, "test-push-outcome").get_attribute("data-outcome") not in (None, "sending") else None,
                       15, "the test's outcome")
        self.assertEqual(outcome.get_attribute("data-outcome"), "sent", outcome.text)
        self.assertTrue(outcome.text.startswith("Sent. It should appear on this browser"), outcome.text)

        # What the push service was given: the test notification, for this device.
        [(path, headers, encrypted)] = self.relay.wait_for(lambda requests: requests, 10, "the test notification")
        self.assertEqual(path, f"/push/{device['id']}")
        payload = http_ece.decrypt(encrypted, private_key=key, auth_secret=auth, version="aes128gcm").decode()
        pushed = json.loads(payload)
        self.assertEqual((pushed.get("type"), pushed.get("title"), pushed.get("body")), ("test", "Herald", TEST_BODY), pushed)

        # Handed to the service worker as the browser would: it shows it, tagged herald-test. The worker's
        # showNotification is watched (a promise kept in the worker, resolved when it has shown one), since reading
        # getNotifications() too soon after one makes Chromium forget it.
        watched = worker_evaluate(self.driver, """(() => {
          const registration = self.registration;
          const show = registration.showNotification.bind(registration);
          self.__shown = new Promise((resolve) => {
            registration.showNotification = (title, options) =>
              show(title, options).then(() => resolve({ title, body: options.body, tag: options.tag }));
          });
          return "watching";
        })()""")
        self.assertEqual(watched, "watching")
        self.devtools.call("ServiceWorker.deliverPushMessage", origin=self.origin, registrationId=registration, data=payload)
        shown = worker_evaluate(self.driver, """Promise.race([self.__shown,
          new Promise((resolve) => setTimeout(() => resolve("nothing shown within 10 s"), 10000))])""")
        self.assertEqual(shown, {"title": "Herald", "body": TEST_BODY, "tag": "herald-test"})

        # The browser's permission changes: the page tells the server, as the permission of this device.
        self.driver.execute_cdp_cmd("Browser.setPermission", {"origin": self.origin, "permission": {"name": "notifications"},
                                                              "setting": "prompt"})
        wait(self.driver, lambda d: [x["permission"] for x in self.devices(alice) if x["id"] == device["id"]] == ["not_asked"],
             10, "the browser's \"default\" reported as not_asked")
        self.assertEqual(severe_console_lines(self.driver), [])
        self.assertEqual(self.driver.execute_script("return window.__violations"), [])


class Troubleshooter(PageTestCase):
    """The troubleshooter's panel against a demo server (each demo person has a phone whose pushes are logged)."""

    HOSTILE = "<img src=x onerror=alert(1)>"

    def setUp(self):
        alice = self.tokens["alice"]
        reset_notifications(self.server, alice)

    def shown_checks(self, driver):
        """The checks as the panel shows them, read in one step."""
        return driver.execute_script("""return [...document.querySelectorAll('#checks li')].map((item) => ({
            id: item.dataset.check, state: item.dataset.state,
            stateText: item.querySelector('.check-state').textContent,
            title: item.querySelector('.check-title').textContent,
            detail: item.querySelector('.check-detail').textContent,
            action: item.querySelector('.check-action')?.textContent ?? null}))""")

    def run_checks(self, driver, before=None):
        """Presses the panel's button and waits for checks other than `before` (a list as shown) to be listed."""
        driver.find_element(By.ID, "troubleshoot-button").click()
        return wait(driver, lambda d: (lambda shown: shown if len(shown) == len(CHECK_IDS) and shown != before
                                       and not d.find_element(By.ID, "troubleshoot-button").get_attribute("disabled")
                                       else None)(self.shown_checks(d)), 10, "the checks listed")

    def test_the_checks_are_listed_with_what_to_do_and_follow_the_settings(self):
        alice = self.tokens["alice"]
        status, _ = self.server.request("PUT", "/v1/me/notifications", alice, {"defaultLevel": "nothing"})
        self.assertEqual(status, 200)
        driver = self.browser()
        sign_in_as(driver, self.server, "Alice Johnson")
        # A device whose id is markup, registered from elsewhere: listed as text.
        status, body = self.server.request("PUT", f"/v1/devices/{urllib.parse.quote(self.HOSTILE, safe='')}", alice,
                                           {"platform": "webpush", "permission": "denied", "token": json.dumps({
                                               "endpoint": "https://push.example.com/x", "keys": subscription_keys()[2]})})
        self.assertEqual(status, 200, body)
        self.addCleanup(self.server.request, "DELETE", f"/v1/devices/{urllib.parse.quote(self.HOSTILE, safe='')}", alice)

        open_settings(driver)
        Select(driver.find_element(By.ID, "snooze")).select_by_value("8h")
        wait(driver, lambda d: self.server.request("GET", "/v1/me/notifications", alice)[1]["snoozeUntil"], 5, "the snooze kept")
        self.assertFalse(driver.find_element(By.ID, "test-push-row").is_displayed(),
                         "no test notification offered: this browser has no subscription")
        self.assertFalse(driver.find_element(By.ID, "troubleshoot").is_displayed())
        shown = self.run_checks(driver)

        # What the server says, check by check, in its order: the title, the state in words, the detail and what to do.
        status, answer = self.server.request("GET", "/v1/me/notifications/check", alice)
        self.assertEqual(status, 200, answer)
        self.assertEqual([check["id"] for check in shown], CHECK_IDS)
        words = {"ok": "OK", "warning": "Warning", "problem": "Problem"}
        for check, expected in zip(shown, answer["checks"]):
            self.assertEqual((check["id"], check["state"], check["stateText"], check["title"], check["detail"]),
                             (expected["id"], expected["state"], words[expected["state"]], expected["title"], expected["detail"]))
            self.assertEqual(check["action"], f"What to do: {expected['action']}" if expected.get("action") else None)
        by_id = {check["id"]: check for check in shown}
        for muted in ("level", "snooze"):
            self.assertIn(by_id[muted]["state"], ("warning", "problem"), by_id[muted])
            self.assertTrue(by_id[muted]["action"], f"what to do about {muted}")
        self.assertIn("to look at", driver.find_element(By.ID, "troubleshoot-status").text)

        # The devices: the demo's phone and the one named with markup, shown as text; nothing of it loads.
        devices = driver.execute_script("""return [...document.querySelectorAll('#check-devices li')].map((item) =>
            ({id: item.querySelector('.device-id').textContent, text: item.textContent}))""")
        self.assertEqual(sorted(device["id"] for device in devices), sorted(device["id"] for device in answer["devices"]))
        hostile = next(device for device in devices if device["id"] == self.HOSTILE)
        self.assertIn("Web browser", hostile["text"])
        self.assertIn("notifications blocked", hostile["text"])
        self.assertEqual(driver.find_elements(By.CSS_SELECTOR, "#troubleshoot img, img[src='x']"), [])

        # Put right in the same sheet, and checked again: both are fine now.
        Select(driver.find_element(By.ID, "default-level")).select_by_value("all")
        wait(driver, lambda d: self.server.request("GET", "/v1/me/notifications", alice)[1]["defaultLevel"] == "all", 5,
             "the default level kept")
        Select(driver.find_element(By.ID, "snooze")).select_by_value("off")
        wait(driver, lambda d: self.server.request("GET", "/v1/me/notifications", alice)[1]["snoozeUntil"] is None, 5,
             "the snooze ended")
        self.assertEqual(driver.find_element(By.ID, "troubleshoot-button").text, "Check again")
        again = {check["id"]: check for check in self.run_checks(driver, before=shown)}
        self.assertEqual((again["level"]["state"], again["snooze"]["state"]), ("ok", "ok"))
        self.assertEqual((again["level"]["stateText"], again["snooze"]["stateText"]), ("OK", "OK"))

        # Closed and opened again, the sheet starts afresh: the checks belong to the moment they were asked.
        driver.find_element(By.CSS_SELECTOR, "#settings [data-close]").click()
        wait(driver, lambda d: d.find_element(By.ID, "settings").get_attribute("open") is None, 2, "the settings closed")
        open_settings(driver)
        self.assertFalse(driver.find_element(By.ID, "troubleshoot").is_displayed())
        self.assertEqual(driver.find_element(By.ID, "troubleshoot-button").text, "Troubleshoot notifications")
        self.assertEqual(severe_console_lines(driver), [])
        self.assertEqual(driver.execute_script("return window.__violations"), [])


if __name__ == "__main__":
    unittest.main()
