"""Web Push read by implementations no one here wrote: a live `herald serve` pushes to a local push service over
HTTPS; the payload is decrypted with PyPI's `http_ece` and the subscription's private key, and the VAPID token is
verified with PyJWT against the key the header names."""
import base64
import hashlib
import json
import os
import tempfile
import time
import unittest

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from harness import PushService, Server


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class WebPushInteroperability(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="herald-webpush-")
        self.service = PushService(self.folder)
        self.server = Server({
            "HERALD_PUSH_CA_FILE": self.service.certificate,
            "HERALD_WEBPUSH_ALLOW_PRIVATE": "1",
            "HERALD_VAPID_SUBJECT": "mailto:interop@herald.example",
        })

    def tearDown(self):
        self.server.close()
        self.service.close()

    def test_http_ece_decrypts_and_pyjwt_verifies(self):
        browser_key = ec.generate_private_key(ec.SECP256R1())
        p256dh = browser_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        auth = os.urandom(16)
        endpoint = f"https://127.0.0.1:{self.service.port}/push/bob-laptop"
        subscription = json.dumps({"endpoint": endpoint, "keys": {"p256dh": b64url(p256dh), "auth": b64url(auth)}})
        bob, alice = self.server.token("bob"), self.server.token("alice")
        status, body = self.server.request("PUT", "/v1/devices/laptop", bob, {"platform": "webpush", "token": subscription})
        self.assertEqual(status, 200, body)

        chat = self.server.direct(alice, "bob")
        self.server.post(alice, chat, "Interop check: ünïcödé ✓", message_id="interop-1")
        # The topic names the message in its conversation: the SHA-256 of both, base64url, its first 32 characters.
        # (The demo's own messages to Bob may reach the laptop too, when they are decided after it registered.)
        digest = hashlib.sha256(f"message\0{chat}\0interop-1".encode()).digest()
        ours = lambda: [request for request in self.service.requests if request[1].get("topic") == b64url(digest)[:32]]
        deadline = time.monotonic() + 15
        while not ours() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(ours(), f"the push service received no push of the message within 15 s: {self.service.requests}")
        path, headers, encrypted = ours()[0]
        self.assertEqual(path, "/push/bob-laptop")
        self.assertEqual(headers["content-encoding"], "aes128gcm")
        self.assertLessEqual(int(headers["ttl"]), 3600)

        payload = json.loads(http_ece.decrypt(encrypted, private_key=browser_key, auth_secret=auth, version="aes128gcm"))
        # A direct chat's message rings at once; when the demo's own messages to Bob went first, it is their burst's
        # silent replacement (with the count), which does not (docs/push.md, "How pushes rank").
        self.assertEqual(headers["urgency"], "normal" if "summary" in payload else "high")
        self.assertEqual(payload["title"], "New message from Alice Johnson")
        self.assertEqual(payload["body"], "Interop check: ünïcödé ✓")
        self.assertEqual(payload["conversationId"], chat)
        self.assertEqual(payload["messageId"], "interop-1")
        status, listed = self.server.request("GET", "/v1/conversations", bob)
        self.assertEqual(payload["badge"], sum(c["unreadCount"] for c in listed["conversations"]), "bob's unread, over all his chats")

        scheme, _, parameters = headers["authorization"].partition(" ")
        self.assertEqual(scheme, "vapid")
        fields = dict(part.strip().split("=", 1) for part in parameters.split(","))
        server_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(fields["k"]))
        claims = jwt.decode(fields["t"], server_key, algorithms=["ES256"], audience=f"https://127.0.0.1:{self.service.port}")
        self.assertEqual(claims["sub"], "mailto:interop@herald.example")
        self.assertLessEqual(claims["exp"] - time.time(), 24 * 3600)
        status, key = self.server.request("GET", "/v1/webpush/key", bob)
        self.assertEqual((status, key["publicKey"]), (200, fields["k"]))


if __name__ == "__main__":
    unittest.main()
