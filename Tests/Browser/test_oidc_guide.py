"""docs/integrate.md's "Trying it with a local issuer", as a reader follows it: the guide's Python script (run with
the `cryptography` package from PyPI) prints an ID token and serves its issuer, `herald serve` runs with the guide's
settings, and the token signs Ada in; without HERALD_OIDC_ALLOW_PRIVATE the server refuses to start, naming it.
Only the port moves: the guide's 9400 becomes a free one."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.error
import urllib.request

from harness import HERALD, ROOT


def guide():
    """The issuer script (the ```python block that serves a discovery document) and the settings of the ```sh
    block that runs `herald serve`, from docs/integrate.md."""
    with open(os.path.join(ROOT, "docs", "integrate.md"), encoding="utf-8") as file:
        text = file.read()
    scripts = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "openid-configuration" in block]
    assert len(scripts) == 1, f"docs/integrate.md should have one issuer script, it has {len(scripts)}"
    commands = [block for block in re.findall(r"```sh\n(.*?)```", text, re.S)
                if "herald serve" in block and "HERALD_OIDC_ISSUER" in block]
    assert len(commands) == 1, f"docs/integrate.md should run herald serve with an issuer once, it does {len(commands)} times"
    settings = dict(re.findall(r"\b(HERALD_[A-Z_]+)=(\S+)", commands[0]))
    return scripts[0], settings


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def first_line(process, timeout):
    """The process's first line of standard output, or None if none came within `timeout` seconds; what it prints
    after it is read and dropped (until it ends), so the process never blocks on a full pipe."""
    lines, read = [], threading.Event()

    def reader():
        lines.append(process.stdout.readline())  # "" when it ended without a line
        read.set()
        for _ in process.stdout:
            pass

    process.reader = threading.Thread(target=reader, daemon=True)
    process.reader.start()
    read.wait(timeout)
    return lines[0].strip() if lines and lines[0] else None


class LocalIssuerGuide(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="herald-oidc-guide-")
        self.processes = []
        script, self.settings = guide()
        self.assertIn("9400", script)
        self.assertIn("HERALD_OIDC_ALLOW_PRIVATE", self.settings, "the guide's settings take a local issuer")
        port = str(free_port())
        self.settings = {name: value.replace("9400", port) for name, value in self.settings.items()}
        self.script = os.path.join(self.folder, "issuer.py")
        with open(self.script, "w", encoding="utf-8") as file:
            file.write(script.replace("9400", port))

    def tearDown(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=10)
            if hasattr(process, "reader"):
                process.reader.join(10)
            process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def start(self, arguments, environment=None):
        """A process of the test's, its standard error (its log) in the test's folder."""
        log = open(os.path.join(self.folder, f"{len(self.processes)}.log"), "w", encoding="utf-8")
        process = subprocess.Popen(
            arguments, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
                 **(environment or {})})
        log.close()
        self.processes.append(process)
        return process

    def herald(self, settings):
        return [HERALD, "serve", "--port", "0", "--database", os.path.join(self.folder, "herald.sqlite")], settings

    def test_the_guide_signs_ada_in(self):
        # The script, with this test's Python (its virtual environment has `cryptography`): the token, then it serves.
        issuer = self.start([sys.executable, self.script])
        token = first_line(issuer, timeout=60)
        self.assertIsNotNone(token, f"the issuer printed no token: {issuer.poll()}")
        self.assertEqual(token.count("."), 2, token)

        # Without HERALD_OIDC_ALLOW_PRIVATE, an issuer on this machine stops the start, and the line says why.
        arguments, settings = self.herald({k: v for k, v in self.settings.items() if k != "HERALD_OIDC_ALLOW_PRIVATE"})
        refused = subprocess.run(arguments, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **settings},
                                 capture_output=True, text=True, timeout=60)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("HERALD_OIDC_ALLOW_PRIVATE=1", refused.stderr)

        # With the guide's settings: the server starts, and the token signs Ada in.
        arguments, settings = self.herald(self.settings)
        server = self.start(arguments, settings)
        line = first_line(server, timeout=60) or ""
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        self.assertIsNotNone(match, f"herald serve did not say where it listens: {line!r}")
        url = f"http://127.0.0.1:{match.group(1)}"

        def request(method, path, body=None):
            data = None if body is None else json.dumps(body).encode()
            call = urllib.request.Request(url + path, data=data, method=method,
                                          headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(call, timeout=20) as response:
                    return response.status, json.loads(response.read() or b"null")
            except urllib.error.HTTPError as error:
                return error.code, json.loads(error.read() or b"null")

        status, listed = request("GET", "/v1/conversations")
        self.assertEqual(status, 200, listed)
        self.assertEqual(listed["conversations"], [], "she has none yet")
        # Her user is `ada`, named from the token: a group she makes names her so.
        status, group = request("POST", "/v1/conversations", {"kind": "group", "title": "Trying", "members": []})
        self.assertIn(status, (200, 201), group)
        self.assertEqual(group["members"], ["ada"])
        self.assertIn({"id": "ada", "name": "Ada Lovelace"}, [{k: p[k] for k in ("id", "name")} for p in group["people"]])


if __name__ == "__main__":
    unittest.main()
