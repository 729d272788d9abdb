"""The page's service worker in headless Chromium: Web Push messages delivered to it through the DevTools protocol
(`ServiceWorker.deliverPushMessage`, as the browser does when its push service hands one over) become
notifications, once per message, and a read elsewhere closes them."""
import json
import time
import unittest
import urllib.request

import websocket

from harness import Server, chromium


class ServiceWorker(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.driver = chromium()
        self.driver.get(self.server.url)
        self.origin = self.server.url.rstrip("/")
        self.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.origin, "permissions": ["notifications"]})
        # A second DevTools connection to the page, for the ServiceWorker domain's events.
        address = self.driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        targets = json.load(urllib.request.urlopen(f"http://{address}/json/list", timeout=10))
        page = next(target for target in targets if target["type"] == "page")
        self.devtools = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10, suppress_origin=True)
        self.sequence = 0
        self.command("ServiceWorker.enable")

    def tearDown(self):
        self.devtools.close()
        self.driver.quit()
        self.server.close()

    def command(self, method, **params):
        self.sequence += 1
        self.devtools.send(json.dumps({"id": self.sequence, "method": method, "params": params}))
        return self.sequence

    def register(self):
        """Registers /sw.js at scope / and returns its registration id, from the DevTools events (within 10 s)."""
        state = self.driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          navigator.serviceWorker.register('/sw.js', {scope: '/'})
            .then(() => navigator.serviceWorker.ready).then(() => done('ready'), (error) => done('error: ' + error));
        """)
        self.assertEqual(state, "ready")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            message = json.loads(self.devtools.recv())
            if message.get("method") != "ServiceWorker.workerRegistrationUpdated":
                continue
            for registration in message["params"]["registrations"]:
                if registration["scopeURL"] == self.server.url and not registration.get("isDeleted"):
                    return registration["registrationId"]
        self.fail("no service worker registration was reported within 10 s")

    def deliver(self, registration, payload):
        self.command("ServiceWorker.deliverPushMessage", origin=self.origin, registrationId=registration,
                     data=json.dumps(payload))

    def notifications(self):
        return self.driver.execute_async_script("""
          const done = arguments[arguments.length - 1];
          navigator.serviceWorker.ready.then((r) => r.getNotifications())
            .then((shown) => done(shown.map((n) => ({title: n.title, body: n.body, tag: n.tag}))), () => done(null));
        """)

    def wait_for(self, condition, what, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.notifications()
            if condition(shown):
                return shown
            time.sleep(0.05)
        self.fail(f"{what} within {timeout} s; the notifications were {self.notifications()}")

    def test_a_push_shows_once_and_a_read_elsewhere_closes_it(self):
        registration = self.register()
        message = {"type": "message", "title": "New message from Alice Johnson", "body": "<b>Lunch</b> at one?",
                   "conversationId": "c-1", "messageId": "m-1", "seq": "7", "senderId": "alice", "badge": 1}
        self.deliver(registration, message)
        shown = self.wait_for(lambda shown: shown, "a notification")
        self.assertEqual(shown, [{"title": "New message from Alice Johnson", "body": "<b>Lunch</b> at one?", "tag": "m-1"}])

        # The same message again (a resent push): still one notification.
        self.deliver(registration, message)
        other = dict(message, conversationId="c-2", messageId="m-2", title="New message in Team Chat", body="Bob: hi")
        self.deliver(registration, other)
        shown = self.wait_for(lambda shown: len(shown) == 2, "the second conversation's notification")
        self.assertEqual(sorted(n["tag"] for n in shown), ["m-1", "m-2"])

        # Read on another device: that conversation's notifications close, the other's stay.
        self.deliver(registration, {"type": "read", "conversationId": "c-1", "seq": "7", "badge": 1})
        shown = self.wait_for(lambda shown: len(shown) == 1, "the read conversation's notification closed")
        self.assertEqual(shown[0]["tag"], "m-2")


if __name__ == "__main__":
    unittest.main()
