"""Encrypted pushes read by an implementation no one here wrote: a live `herald serve` with
`HERALD_PUSH_CONTENT=encrypted` pushes through APNs, FCM and Expo stand-ins on loopback (HTTPS); each raw payload is
checked for words, names and the sender, and its `encrypted` field is decrypted with PyPI's `http_ece` and the
device's private key and secret: a full push's fields, for the alert, the edit's follow-up and the deletion's."""
import base64
import json
import os
import tempfile
import unittest

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from harness import PushService, Server

SECRET = "the launch code is 4721"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Device:
    """A device's push keys: a P-256 key pair and a 16-byte secret, made here with `cryptography`."""

    def __init__(self, platform, token):
        self.platform, self.token = platform, token
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)

    def registration(self):
        p256dh = self.key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        return {"platform": self.platform, "token": self.token, "keys": {"p256dh": b64url(p256dh), "auth": b64url(self.auth)}}

    def open(self, data):
        """The plaintext of the push whose data (the fields beside `aps`, FCM's or Expo's `data`) is `data`."""
        return json.loads(http_ece.decrypt(unb64url(data["encrypted"]), private_key=self.key, auth_secret=self.auth,
                                           version="aes128gcm"))


class EncryptedPushInteroperability(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="herald-encrypted-")

        def answer(path):
            # FCM's OAuth token endpoint; Expo's tickets; the rest (APNs, FCM's send) answer 201, which is enough here.
            if path == "/token":
                return 200, {"access_token": "interop-token", "expires_in": 3600}
            if path.startswith("/--/api/v2/push/send"):
                return 200, {"data": [{"status": "ok", "id": "ticket-1"}]}
            return None

        self.service = PushService(self.folder, answer=answer)
        origin = f"https://127.0.0.1:{self.service.port}"
        apns_key = os.path.join(self.folder, "AuthKey.p8")
        with open(apns_key, "wb") as file:
            file.write(ec.generate_private_key(ec.SECP256R1()).private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        account = os.path.join(self.folder, "service-account.json")
        with open(account, "w") as file:
            json.dump({
                "project_id": "interop", "client_email": "push@interop.iam.gserviceaccount.com",
                "token_uri": origin + "/token",
                "private_key": rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
                    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(),
            }, file)
        self.server = Server({
            "HERALD_PUSH_CONTENT": "encrypted",
            "HERALD_PUSH_CA_FILE": self.service.certificate,
            "HERALD_APNS_KEY_FILE": apns_key, "HERALD_APNS_KEY_ID": "KEYID12345", "HERALD_APNS_TEAM_ID": "TEAMID6789",
            "HERALD_APNS_TOPIC": "app.herald.interop", "HERALD_APNS_URL": origin,
            "HERALD_FCM_SERVICE_ACCOUNT": account, "HERALD_FCM_URL": origin,
            "HERALD_EXPO_URL": origin,
        })

    def tearDown(self):
        self.server.close()
        self.service.close()

    def test_http_ece_opens_what_apns_fcm_and_expo_carry(self):
        phone = Device("apns", "ab" * 32)
        pixel = Device("fcm", "fcm-interop-pixel")
        expo = Device("expo", "ExponentPushToken[interop]")
        ann = self.server.mint("ann", "Ann Interop")
        ben = self.server.mint("ben", "Ben")
        for device_id, device in (("phone", phone), ("pixel", pixel), ("rn", expo)):
            status, body = self.server.request("PUT", f"/v1/devices/{device_id}", ben, device.registration())
            self.assertEqual(status, 200, body)
        status, group = self.server.request(
            "POST", "/v1/conversations", ann, {"kind": "group", "title": "Falcon Team", "members": ["ben"]})
        self.assertIn(status, (200, 201), group)
        self.server.post(ann, group["id"], SECRET, message_id="secret-1")

        def sent(requests, count):
            # Each service's pushes to Ben's devices, in order; (the demo's own people have devices of their own).
            apns = [r for r in requests if r[0] == f"/3/device/{phone.token}"]
            fcm = [r for r in requests if r[0].endswith("/messages:send") and pixel.token.encode() in r[2]]
            sends = [r for r in requests if r[0].startswith("/--/api/v2/push/send") and expo.token.encode() in r[2]]
            return (apns, fcm, sends) if min(len(apns), len(fcm), len(sends)) >= count else None

        def wait(count, what):
            self.service.wait_for(lambda requests: sent(requests, count) is not None, 30, what)
            return sent(self.service.requests, count)

        def data_of(service, request):
            body = json.loads(request[2])
            if service == "APNs":
                return body
            if service == "FCM":
                return body["message"]["data"]
            return next(message for message in body if message["to"] == expo.token)["data"]

        apns, fcm, sends = wait(1, "the alert on APNs, FCM and Expo")
        for service, request, device in (("APNs", apns[0], phone), ("FCM", fcm[0], pixel), ("Expo", sends[0], expo)):
            raw = request[2].decode()
            for secret in ("4721", "Ann Interop", "Falcon", '"ann"'):
                self.assertNotIn(secret, raw, f"{service} reads {secret!r}")
            data = data_of(service, request)
            self.assertEqual(data["withheld"], "encrypted", service)
            self.assertEqual(data["messageId"], "secret-1", service)
            opened = device.open(data)
            self.assertEqual(opened["title"], "New message in Falcon Team", service)
            self.assertEqual(opened["body"], "Ann Interop: " + SECRET, service)
            self.assertEqual(opened["data"]["senderName"], "Ann Interop", service)
            self.assertEqual(opened["data"]["senderId"], "ann", service)
            self.assertEqual(opened["data"]["conversationTitle"], "Falcon Team", service)
            self.assertEqual(opened["data"]["isGroup"], "true", service)
            self.assertEqual(opened["data"]["conversationId"], group["id"], service)
        self.assertEqual(json.loads(apns[0][2])["aps"]["alert"], {"body": "New message"})

        status, body = self.server.request(
            "PATCH", f"/v1/conversations/{group['id']}/messages/secret-1", ann, {"text": "the code is 9000"})
        self.assertEqual(status, 200, body)
        apns, fcm, sends = wait(2, "the edit's follow-up")
        for service, request, device in (("APNs", apns[1], phone), ("FCM", fcm[1], pixel), ("Expo", sends[1], expo)):
            self.assertNotIn("9000", request[2].decode(), service)
            opened = device.open(data_of(service, request))
            self.assertEqual(opened["data"]["type"], "message_edited", service)
            self.assertEqual(opened["body"], "Ann Interop: the code is 9000", service)

        status, body = self.server.request("DELETE", f"/v1/conversations/{group['id']}/messages/secret-1", ann)
        self.assertEqual(status, 200, body)
        apns, fcm, sends = wait(3, "the deletion's follow-up")
        for service, request, device in (("APNs", apns[2], phone), ("FCM", fcm[2], pixel), ("Expo", sends[2], expo)):
            opened = device.open(data_of(service, request))
            self.assertEqual(opened["data"]["type"], "message_deleted", service)
            self.assertEqual(opened["data"]["messageId"], "secret-1", service)


if __name__ == "__main__":
    unittest.main()
