"""Web Push on the page, in headless Chromium: the "Notify me when this tab is closed" switch subscribes (a real
`pushManager.subscribe`, against a stand-in for the browser's push service) and registers a `webpush` device; pushes
delivered to the service worker through the DevTools protocol (`ServiceWorker.deliverPushMessage`, as the browser
does when its push service hands one over) become notifications, once per message; a read elsewhere closes them;
switching off or signing out takes the subscription and the device away."""
import base64
import json
import time
import unittest

from selenium.webdriver.common.by import By

from harness import BrowserPushService, DevTools, Server, chromium, open_settings, sign_in_as, wait, worker_evaluate


class WebPush(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.push_service = BrowserPushService()
        self.driver = chromium(push_service=self.push_service)
        self.origin = self.server.url.rstrip("/")
        self.devtools = DevTools(self.driver)
        self.devtools.call("ServiceWorker.enable")

    def tearDown(self):
        self.devtools.close()
        self.driver.quit()
        self.push_service.close()
        self.server.close()

    # What the browser holds, read in one step each.
    def subscription(self):
        return self.driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          navigator.serviceWorker.getRegistration('/')
            .then((r) => r ? r.pushManager.getSubscription() : null)
            .then((s) => done(s ? {json: s.toJSON(), key: btoa(String.fromCharCode(...new Uint8Array(s.options.applicationServerKey)))} : null),
                  (error) => done('error: ' + error));
        """)

    def notifications(self):
        return self.driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          navigator.serviceWorker.getRegistration('/').then((r) => r ? r.getNotifications() : [])
            .then((shown) => done(shown.map((n) => ({title: n.title, body: n.body, tag: n.tag, icon: n.icon}))), (e) => done('error: ' + e));
        """)

    def webpush_devices(self, token):
        status, body = self.server.request("GET", "/v1/devices", token)
        self.assertEqual(status, 200, body)
        return [device for device in body["devices"] if device["platform"] == "webpush"]

    def switch(self):
        """The switch, in the Settings (opened when they are closed)."""
        open_settings(self.driver)
        return self.driver.find_element(By.ID, "push-switch")

    def turn_on(self, token):
        """Clicks the switch and waits for the device to be registered; returns the browser's subscription."""
        self.switch()
        self.assertTrue(self.driver.find_element(By.ID, "push-setting").is_displayed())
        self.assertFalse(self.switch().is_selected())
        requests = self.driver.execute_script("return window.__permissionRequests")
        self.switch().click()
        wait(self.driver, lambda d: self.webpush_devices(token), 30, "a webpush device registered by the switch")
        wait(self.driver, lambda d: not self.switch().get_attribute("disabled"), 10, "the switch to settle")
        self.assertTrue(self.switch().is_selected())
        # Permission was asked for by the click, not before.
        self.assertEqual(self.driver.execute_script("return window.__permissionRequests"), requests + 1)
        return self.subscription()

    def worker(self):
        """The page's service worker registration id, once it runs."""
        return self.devtools.service_worker(self.origin)

    def deliver(self, registration, payload):
        self.devtools.call("ServiceWorker.deliverPushMessage", origin=self.origin, registrationId=registration,
                           data=json.dumps(payload))

    def wait_for_notifications(self, condition, what, timeout=10):
        """Polls `getNotifications()` until `condition` holds. First it lets a second pass: Chromium's
        getNotifications() drops (for good) a notification whose `showNotification` has resolved but which the
        platform has not listed as displayed yet, so reading right after a delivery would lose the very
        notification it looks for."""
        time.sleep(1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.notifications()
            if isinstance(shown, list) and condition(shown):
                return shown
            time.sleep(0.05)
        self.fail(f"{what} within {timeout} s; the notifications were {self.notifications()}")

    def test_the_switch_subscribes_and_pushes_show_once(self):
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        alice = self.server.token("alice")
        bob = self.server.token("bob")
        subscription = self.turn_on(alice)

        # The browser subscribed with the server's key, and that subscription is the device the server has.
        status, key = self.server.request("GET", "/v1/webpush/key", alice)
        self.assertEqual(status, 200)
        self.assertEqual(base64.urlsafe_b64encode(base64.b64decode(subscription["key"])).decode().rstrip("="), key["publicKey"])
        [device] = self.webpush_devices(alice)
        registered = json.loads(device["token"])
        self.assertEqual(registered["endpoint"], subscription["json"]["endpoint"])
        self.assertEqual(registered["keys"], subscription["json"]["keys"])
        self.assertTrue(any(path == "/register" for path, _ in self.push_service.requests))
        self.assertEqual(self.webpush_devices(bob), [])

        # A push, as the server sends it to this subscription: one notification, its text as plain text.
        registration = self.worker()
        message = {"type": "message", "title": "New message from Bob Smith", "body": "<b>Lunch</b> at one?",
                   "conversationId": "c-1", "messageId": "m-1", "seq": "7", "notificationId": "herald-7",
                   "senderId": "bob", "senderName": "Bob Smith", "senderAvatarURL": "https://example.com/bob.png",
                   "category": "HERALD_MESSAGE", "isGroup": "false", "badge": 1}
        self.deliver(registration, message)
        shown = self.wait_for_notifications(lambda shown: shown, "a notification")
        # Tagged with the identifier the page's own notification of the message has: one replaces the other; the
        # sender's picture is its icon.
        self.assertEqual(shown, [{"title": "New message from Bob Smith", "body": "<b>Lunch</b> at one?", "tag": "herald-7",
                                  "icon": "https://example.com/bob.png"}])

        # The same message again (a resent push): still one. Another conversation's message with the same id (ids are
        # unique only within a conversation) is another notification.
        self.deliver(registration, message)
        other = dict(message, conversationId="c-2", seq="8", notificationId="herald-8", title="New message in Team Chat",
                     body="Bob: hi", senderAvatarURL="javascript:alert(1)")
        self.deliver(registration, other)
        shown = self.wait_for_notifications(lambda shown: len(shown) == 2, "the second conversation's notification")
        self.assertEqual(sorted(n["tag"] for n in shown), ["herald-7", "herald-8"])
        self.assertEqual(next(n["icon"] for n in shown if n["tag"] == "herald-8"), "", "a picture that is not http(s) is no icon")

        # Read on another device: that conversation's notifications close, the other's stay.
        self.deliver(registration, {"type": "read", "conversationId": "c-1", "seq": "7", "badge": 1})
        shown = self.wait_for_notifications(lambda shown: len(shown) == 1, "the read conversation's notification closed")
        self.assertEqual(shown[0]["tag"], "herald-8")

        # An edit's follow-up: the notification still shown takes the new words under its tag; one for a notification
        # no longer shown posts nothing. A deletion's closes it.
        edit = dict(other, type="message_edited", body="Bob: hello", quiet="true", silent=True)
        self.deliver(registration, edit)
        shown = self.wait_for_notifications(lambda shown: shown and shown[0]["body"] == "Bob: hello", "the edited words")
        self.assertEqual([n["tag"] for n in shown], ["herald-8"])
        self.deliver(registration, dict(edit, messageId="m-gone", seq="9", notificationId="herald-9", body="Bob: gone"))
        self.deliver(registration, {"type": "message_deleted", "conversationId": "c-2", "messageId": "m-1", "seq": "8",
                                    "notificationId": "herald-8", "badge": 0})
        shown = self.wait_for_notifications(lambda shown: shown == [], "the deleted message's notification closed")

        # Off: the device is removed and the browser unsubscribed.
        self.switch().click()
        wait(self.driver, lambda d: not self.webpush_devices(alice), 10, "the webpush device removed")
        wait(self.driver, lambda d: self.subscription() is None, 10, "the subscription dropped")
        self.assertFalse(self.switch().is_selected())

    def declarative(self, data, navigate, tag):
        """A push as the server sends an alert: a declarative push message (docs/push.md, "Web Push")."""
        return {"web_push": 8030, "app_badge": data.get("badge", 0), "mutable": True,
                "notification": {"title": data["title"], "body": data["body"], "navigate": navigate, "tag": tag,
                                 "silent": False, "data": data, "mutable": True}}

    def test_declarative_pushes_are_shaped_by_the_worker(self):
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        alice = self.server.token("alice")
        self.turn_on(alice)
        # The subscription registered names the page, where a declarative push's click goes.
        [device] = self.webpush_devices(alice)
        self.assertEqual(json.loads(device["token"])["page"], self.origin + "/")

        registration = self.worker()
        data = {"type": "message", "title": "New message from Bob Smith", "body": "<i>declared</i>", "conversationId": "c-9",
                "messageId": "m-9", "seq": "9", "notificationId": "herald-9", "senderName": "Bob Smith",
                "senderAvatarURL": "https://example.com/bob.png", "category": "HERALD_MESSAGE", "badge": 1}
        self.deliver(registration, self.declarative(data, self.origin + "/#chat=c-9", "herald-9"))
        shown = self.wait_for_notifications(lambda shown: shown, "the declarative push's notification")
        self.assertEqual(shown, [{"title": "New message from Bob Smith", "body": "<i>declared</i>", "tag": "herald-9",
                                  "icon": "https://example.com/bob.png"}])
        actions = self.worker_evaluate("self.registration.getNotifications().then((n) => n[0].actions.map((a) => a.action))")
        self.assertEqual(actions, ["reply", "read"], "the worker's own notification, not the bare declared one")
        # A clear stays the plain JSON, and still closes it.
        self.deliver(registration, {"type": "read", "conversationId": "c-9", "seq": "9", "badge": 0})
        self.wait_for_notifications(lambda shown: shown == [], "the read conversation's notification closed")

    def test_a_declarative_push_without_the_workers_push_handler(self):
        """With the worker's push handler left out (`/sw.js?push=off`), a browser with Declarative Web Push shows
        the push's notification by itself. Chromium without it shows nothing: the test says so and skips."""
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        self.turn_on(self.server.token("alice"))
        self.worker()
        outcome = self.driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          navigator.serviceWorker.register('/sw.js?push=off', { scope: '/' })
            .then((r) => new Promise((resolve) => {
              const worker = r.installing || r.waiting || r.active;
              if (worker.state === 'activated') return resolve(r);
              worker.addEventListener('statechange', () => { if (worker.state === 'activated') resolve(r); });
            }))
            .then((r) => done(r.active.scriptURL), (error) => done('error: ' + error));
        """)
        self.assertTrue(outcome.endswith("/sw.js?push=off"), outcome)
        script = self.origin + "/sw.js?push=off"
        versions = self.devtools.next_event(
            "ServiceWorker.workerVersionUpdated",
            lambda params: any(v["scriptURL"] == script and v["status"] == "activated" for v in params["versions"]),
            timeout=15)["versions"]
        registration = next(v["registrationId"] for v in versions if v["scriptURL"] == script)
        support = self.driver.execute_script(
            "return {window: 'pushManager' in window, event: typeof PushEvent !== 'undefined' && 'notification' in PushEvent.prototype,"
            " version: navigator.userAgent.match(/Chrom(e|ium)\\/([0-9.]+)/)[2]}")
        data = {"type": "message", "title": "Declared by the server", "body": "no worker needed", "conversationId": "c-5",
                "messageId": "m-5", "seq": "5", "notificationId": "herald-5", "badge": 1}
        self.deliver(registration, self.declarative(data, self.origin + "/#chat=c-5", "herald-5"))
        if not (support["window"] or support["event"]):
            # Read once the push was handed over (the worker has no handler: nothing of Herald's can still come).
            self.skipTest(f"Chromium {support['version']} has no Declarative Web Push (no window.pushManager, no "
                          f"PushEvent.notification): the declarative push with no push handler showed {self.notifications()}; "
                          "the worker's path is tested by test_declarative_pushes_are_shaped_by_the_worker")
        shown = self.wait_for_notifications(lambda shown: shown, "the declared notification, shown by the browser")
        self.assertEqual([(n["title"], n["body"], n["tag"]) for n in shown], [("Declared by the server", "no worker needed", "herald-5")])

    def test_signing_out_unsubscribes_and_removes_the_device(self):
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        alice = self.server.token("alice")
        self.turn_on(alice)

        # A reload keeps the switch on (and the tab signed in: the token is kept while pushes are on).
        self.driver.get(self.server.url)
        wait(self.driver, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
        wait(self.driver, lambda d: self.switch().is_selected(), 10, "the switch still on after a reload")
        self.assertEqual(len(self.webpush_devices(alice)), 1)

        # Where a notification's click sends a new window: `/#chat=<id>` opens that chat, signed in.
        bob_chat = self.server.direct(alice, "bob")
        self.driver.get("about:blank")
        self.driver.get(self.server.url + "#chat=" + bob_chat)
        wait(self.driver, lambda d: d.find_element(By.ID, "chat-title").text == "Bob", 10, "Bob's chat opened from the address")
        self.assertEqual(self.driver.execute_script("return location.hash"), "")

        open_settings(self.driver)
        self.driver.find_element(By.ID, "sign-out").click()
        wait(self.driver, lambda d: not self.webpush_devices(alice), 10, "the webpush device removed at sign-out")
        wait(self.driver, lambda d: self.subscription() is None, 10, "the subscription dropped at sign-out")
        self.assertIsNone(self.driver.execute_script("return localStorage.getItem('herald.token')"))

    def worker_evaluate(self, expression):
        return worker_evaluate(self.driver, expression)

    def click_action(self, tag, action):
        """What the browser does when the notification `tag`'s button `action` is clicked: the worker's
        `notificationclick`, with that action (DevTools cannot press a notification's button)."""
        outcome = self.worker_evaluate(f"""(async () => {{
          const [shown] = await self.registration.getNotifications({{ tag: {json.dumps(tag)} }});
          if (!shown) return "no notification";
          try {{
            self.dispatchEvent(new NotificationEvent("notificationclick", {{ notification: shown, action: {json.dumps(action)} }}));
          }} catch (error) {{
            // waitUntil refuses an event the browser did not make; the handler's work is under way all the same.
          }}
          return "clicked";
        }})()""")
        self.assertEqual(outcome, "clicked")

    def test_mark_as_read_needs_no_window_and_reply_opens_the_composer(self):
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        alice = self.server.token("alice")
        bob = self.server.token("bob")
        self.turn_on(alice)
        registration = self.worker()
        chat = self.server.direct(alice, "bob")
        seqs = []
        for text in ("Lunch?", "At one?"):
            status, posted = self.server.request("POST", f"/v1/conversations/{chat}/messages", bob, {"text": text})
            self.assertEqual(status, 201, posted)
            seqs.append(posted["seq"])

        def summary():
            status, body = self.server.request("GET", "/v1/conversations", alice)
            self.assertEqual(status, 200, body)
            return next(c for c in body["conversations"] if c["id"] == chat)
        wait(self.driver, lambda d: summary()["unreadCount"] == 2, 10, "two unread")

        # Both messages pushed while Alice's tab is elsewhere; each notification offers Reply and Mark as read.
        for seq, text in zip(seqs, ("Lunch?", "At one?")):
            self.deliver(registration, {"type": "message", "title": "New message from Bob", "body": text,
                                        "conversationId": chat, "messageId": f"m-{seq}", "seq": str(seq),
                                        "notificationId": f"herald-{seq}", "senderId": "bob", "badge": 2,
                                        "category": "HERALD_MESSAGE"})
        self.wait_for_notifications(lambda shown: len(shown) == 2, "both notifications")
        actions = self.worker_evaluate(
            f"self.registration.getNotifications({{ tag: 'herald-{seqs[1]}' }}).then((n) => n[0].actions.map((a) => a.action))")
        self.assertEqual(actions, ["reply", "read"])
        windows = len(self.driver.window_handles)

        # Mark as read on the second: the marker moves to it as Alice, from this browser; no window opens; the
        # conversation's notifications close.
        self.click_action(f"herald-{seqs[1]}", "read")
        wait(self.driver, lambda d: summary()["readUpTo"] == seqs[1], 10, "the read marker moved by the worker")
        self.assertEqual(summary()["unreadCount"], 0)
        self.wait_for_notifications(lambda shown: shown == [], "the conversation's notifications closed")
        self.assertEqual(len(self.driver.window_handles), windows, "no window opened")

        # Reply: the open tab shows the chat with the composer focused.
        self.deliver(registration, {"type": "message", "title": "New message from Bob", "body": "Still there?",
                                    "conversationId": chat, "messageId": "m-x", "seq": str(seqs[1] + 1),
                                    "notificationId": f"herald-{seqs[1] + 1}", "senderId": "bob", "badge": 1})
        self.wait_for_notifications(lambda shown: len(shown) == 1, "the third notification")
        self.click_action(f"herald-{seqs[1] + 1}", "reply")
        wait(self.driver, lambda d: d.find_element(By.ID, "chat-title").text == "Bob", 10, "Bob's chat opened by Reply")
        wait(self.driver, lambda d: d.execute_script("return document.activeElement && document.activeElement.id") == "composer-text",
             10, "the composer focused")

        # Pushes off (or signed out): what the worker kept is forgotten.
        self.switch().click()
        wait(self.driver, lambda d: not self.webpush_devices(alice), 10, "the device removed")
        self.assertIsNone(self.worker_session())

    def worker_session(self):
        return self.driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          const opening = indexedDB.open("herald-worker", 1);
          opening.onupgradeneeded = () => opening.result.createObjectStore("session");
          opening.onerror = () => done("error");
          opening.onsuccess = () => {
            const database = opening.result;
            const reading = database.transaction("session").objectStore("session").get("current");
            reading.onsuccess = () => { database.close(); done(reading.result ?? null); };
            reading.onerror = () => { database.close(); done("error"); };
          };
        """)

    def test_a_refused_permission_leaves_the_switch_off(self):
        self.driver.execute_cdp_cmd("Browser.setPermission", {"origin": self.origin, "permission": {"name": "notifications"},
                                                              "setting": "denied"})
        sign_in_as(self.driver, self.server, "Alice Johnson")
        alice = self.server.token("alice")
        self.switch().click()
        wait(self.driver, lambda d: any("blocked" in b.text for b in d.find_elements(By.CSS_SELECTOR, "#banner-layer .banner")),
             10, "a banner saying notifications are blocked")
        self.assertFalse(self.switch().is_selected())
        self.assertEqual(self.webpush_devices(alice), [])
        self.assertIsNone(self.subscription())


if __name__ == "__main__":
    unittest.main()
