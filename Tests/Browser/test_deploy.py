"""docs/deploy.md's nginx configuration: `nginx -t` accepts the file as the guide prints it (only the certificate,
pid and log paths moved to a temporary folder), and the same file, pointed at two live nodes sharing one
PostgreSQL, carries real traffic: TLS, the WebSocket upgrade, no sticky sessions, /metrics kept from outside."""
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
import uuid

import websocket  # Selenium's own dependency

from harness import ROOT, Server

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CERTIFICATE = "/etc/letsencrypt/live/chat.example.com/fullchain.pem"
PRIVATE_KEY = "/etc/letsencrypt/live/chat.example.com/privkey.pem"


def guide_configuration():
    """The one ```nginx block of docs/deploy.md."""
    with open(os.path.join(ROOT, "docs", "deploy.md"), encoding="utf-8") as file:
        blocks = re.findall(r"```nginx\n(.*?)```", file.read(), re.S)
    assert len(blocks) == 1, f"docs/deploy.md should have one nginx block, it has {len(blocks)}"
    return blocks[0]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def psql(url, statement):
    """Runs one statement with PostgreSQL's own client (installed with the server by scripts/postgres)."""
    programs = subprocess.run([os.path.join(ROOT, "scripts", "postgres"), "bin"],
                              check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    binary = os.path.join(programs, "psql")
    subprocess.run([binary, url, "-v", "ON_ERROR_STOP=1", "-q", "-c", statement],
                   check=True, capture_output=True, text=True, timeout=60)


class DeployGuide(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="herald-nginx-")
        for name in ("logs", "certificates"):
            os.mkdir(os.path.join(self.folder, name))
        self.certificate = os.path.join(self.folder, "certificates", "fullchain.pem")
        self.private_key = os.path.join(self.folder, "certificates", "privkey.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
             "-subj", "/CN=chat.example.com", "-keyout", self.private_key, "-out", self.certificate],
            check=True, capture_output=True, timeout=30)

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def write(self, configuration):
        """The configuration with its files moved into the test's folder, written there; its path."""
        for old, new in ((CERTIFICATE, self.certificate), (PRIVATE_KEY, self.private_key),
                         ("/run/nginx.pid", os.path.join(self.folder, "nginx.pid")),
                         ("/var/log/nginx/", os.path.join(self.folder, "logs") + "/")):
            self.assertIn(old, configuration)
            configuration = configuration.replace(old, new)
        path = os.path.join(self.folder, "nginx.conf")
        with open(path, "w", encoding="utf-8") as file:
            file.write(configuration)
        return path

    def test_nginx_accepts_the_guides_configuration(self):
        path = self.write(guide_configuration())
        checked = subprocess.run([NGINX, "-t", "-p", self.folder, "-c", path], capture_output=True, text=True,
                                 timeout=30)
        self.assertEqual(checked.returncode, 0, checked.stderr)
        self.assertIn("syntax is ok", checked.stderr)
        self.assertIn("test is successful", checked.stderr)

    def test_it_carries_two_nodes_traffic(self):
        base = os.environ.get("HERALD_TEST_POSTGRES_URL")
        if not base:
            if os.environ.get("CI"):
                self.fail("PostgreSQL is tested in CI: scripts/test sets HERALD_TEST_POSTGRES_URL")
            self.skipTest("HERALD_TEST_POSTGRES_URL is not set (scripts/test starts a throwaway PostgreSQL)")
        name = "herald_nginx_" + uuid.uuid4().hex
        psql(base, f"CREATE DATABASE {name}")
        self.addCleanup(psql, base, f"DROP DATABASE {name} WITH (FORCE)")
        url = urllib.parse.urlunsplit(urllib.parse.urlsplit(base)._replace(path="/" + name))
        environment = {"HERALD_POSTGRES_URL": url, "HERALD_JWT_SECRET": uuid.uuid4().hex + uuid.uuid4().hex}
        nodes = []
        for _ in range(2):
            nodes.append(Server(environment))
            self.addCleanup(nodes[-1].close)

        # The guide's file, with its three nodes replaced by these two, its ports by free ones on loopback, and
        # one worker (round robin is kept per worker: with one, two streams go to two nodes for certain).
        configuration = guide_configuration()
        upstream = re.findall(r"^( *)server 10\.0\.0\.\d+:8080(.*)$", configuration, re.M)
        self.assertEqual(len(upstream), 3, "the guide's upstream has three nodes")
        configuration = re.sub(r"^ *server 10\.0\.0\.\d+:8080.*\n", "", configuration, flags=re.M)
        configuration = configuration.replace("upstream herald {\n", "upstream herald {\n" + "".join(
            f"{upstream[0][0]}server 127.0.0.1:{node.port}{upstream[0][1]}\n" for node in nodes))
        http_port, https_port = free_port(), free_port()
        configuration = configuration.replace("listen 80;", f"listen 127.0.0.1:{http_port};")
        configuration = configuration.replace("listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl")
        configuration = configuration.replace("worker_processes auto;", "worker_processes 1;")
        path = self.write(configuration)
        proxy = subprocess.Popen([NGINX, "-p", self.folder, "-c", path, "-g", "daemon off;"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        def stop_proxy():
            proxy.terminate()
            proxy.wait(timeout=10)
            proxy.stderr.close()
        self.addCleanup(stop_proxy)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", https_port), timeout=1).close()
                break
            except OSError:
                self.assertIsNone(proxy.poll(), f"nginx ended: {proxy.stderr.read() if proxy.stderr else ''}")
                self.assertLess(time.monotonic(), deadline, "nginx did not listen within 10 s")
                time.sleep(0.05)

        tls = ssl.create_default_context(cafile=self.certificate)
        tls.check_hostname = False
        origin = f"https://127.0.0.1:{https_port}"

        def request(method, path, token=None, body=None):
            data = None if body is None else json.dumps(body).encode()
            call = urllib.request.Request(origin + path, data=data, method=method,
                                          headers={"Host": "chat.example.com"})
            if token:
                call.add_header("Authorization", f"Bearer {token}")
            if data is not None:
                call.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(call, timeout=10, context=tls) as answer:
                    return answer.status, answer.headers, answer.read().decode()
            except urllib.error.HTTPError as error:
                return error.code, error.headers, error.read().decode()

        status, headers, body = request("GET", "/health")
        self.assertEqual((status, json.loads(body)), (200, {"status": "ok", "database": "reachable"}))
        self.assertEqual(headers["Strict-Transport-Security"], "max-age=63072000")
        status, _, _ = request("GET", "/metrics")
        self.assertEqual(status, 403, "/metrics is kept from outside at the proxy")
        # Every other spelling is no alias of it: the proxy passes them on, and Herald answers 404.
        for path in ("/metrics/", "//metrics", "/metrics/.", "/./metrics/"):
            status, _, body = request("GET", path)
            self.assertIn(status, (403, 404), f"{path}: {status}")
            self.assertNotIn("herald_", body, f"{path} serves the metrics")

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *arguments):
                return None
        try:
            urllib.request.build_opener(NoRedirect).open(f"http://127.0.0.1:{http_port}/health", timeout=10)
            self.fail("plain HTTP was answered")
        except urllib.error.HTTPError as error:
            self.assertEqual(error.code, 301)
            self.assertEqual(error.headers["Location"], "https://127.0.0.1/health")

        _, _, alice = request("POST", "/v1/demo/tokens", body={"user": "alice"})
        _, _, bob = request("POST", "/v1/demo/tokens", body={"user": "bob"})
        alice, bob = json.loads(alice)["token"], json.loads(bob)["token"]
        status, _, chat = request("POST", "/v1/conversations", alice, {"kind": "direct", "members": ["bob"]})
        self.assertIn(status, (200, 201), chat)
        chat = json.loads(chat)["id"]

        # Two streams of Bob's through the proxy: round robin puts one on each node, no stickiness asked for.
        streams = []
        for _ in range(2):
            stream = websocket.create_connection(
                f"wss://127.0.0.1:{https_port}/v1/stream?token={bob}", timeout=10, suppress_origin=True,
                host="chat.example.com", sslopt={"context": tls})
            self.addCleanup(stream.close)
            deadline = time.monotonic() + 10
            while json.loads(stream.recv())["type"] != "ready":
                self.assertLess(time.monotonic(), deadline, "no ready frame")
            streams.append(stream)
        for node in nodes:
            with urllib.request.urlopen(node.url + "metrics", timeout=10) as answer:
                scraped = answer.read().decode()
            self.assertRegex(scraped, r"(?m)^herald_connections_open 1(\.0)?$", f"node {node.port} has one stream")

        # Alice posts through the proxy, to whichever node; both of Bob's streams have it.
        for index in range(3):
            status, _, body = request("POST", f"/v1/conversations/{chat}/messages", alice,
                                      {"text": f"through nginx {index}", "id": f"nginx-{index}"})
            self.assertIn(status, (200, 201), body)
        for stream in streams:
            texts = []
            while len(texts) < 3:
                frame = json.loads(stream.recv())
                if frame["type"] == "message":
                    texts.append(frame["message"]["text"])
            self.assertEqual(texts, [f"through nginx {index}" for index in range(3)])


if __name__ == "__main__":
    unittest.main()
