"""An app's backend receiving Herald's webhooks: Python's standard library only, no Herald code.

    python3 webhook_receiver.py <secret> <log-file> <fail-flag-file>

Listens on 127.0.0.1 at a free port and prints it first thing. Each POST is checked as docs/integrate.md says: the
`Herald-Signature` header (`t=…,v1=…`) must be HMAC-SHA256 of `<t>.<body>` under the secret, and `t` within five
minutes of now; a bad one is answered 401. While the fail-flag file exists, every delivery is answered 500 (the
backend is down). Each request is logged as one JSON line: the status answered and the event's id, type, seq,
conversationId and data.
"""

import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET, LOG, FAIL_FLAG = sys.argv[1].encode(), sys.argv[2], sys.argv[3]
lock = threading.Lock()


def verified(header, body):
    """Whether `header` signs `body` with the secret, recently."""
    fields = dict(part.strip().split("=", 1) for part in (header or "").split(",") if "=" in part)
    if "t" not in fields or "v1" not in fields or not fields["t"].isdigit():
        return False
    if abs(time.time() - int(fields["t"])) > 300:
        return False
    expected = hmac.new(SECRET, fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"])


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verified(self.headers.get("Herald-Signature"), body):
            status = 401
        elif os.path.exists(FAIL_FLAG):
            status = 500
        else:
            status = 204
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        line = {"status": status, "id": event.get("id"), "type": event.get("type"), "seq": event.get("seq"),
                "conversationId": event.get("conversationId"), "data": event.get("data"),
                "headerId": self.headers.get("Herald-Event-Id"), "keys": sorted(event.keys()),
                "dataKeys": sorted((event.get("data") or {}).keys())}
        with lock, open(LOG, "a") as log:
            log.write(json.dumps(line) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *arguments):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
