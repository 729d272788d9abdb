"""docs/deploy.md's nginx configuration: `nginx -t` accepts the file as the guide prints it (only the certificate,
pid and log paths moved to a temporary folder), and the same file, pointed at two live nodes sharing one
PostgreSQL, carries real traffic: TLS, the WebSocket upgrade, no sticky sessions, /metrics kept from outside.
deploy/compose.yaml and its nginx.conf, the same way: three nodes with the compose file's settings (the database
replaced by the test's), behind its nginx configuration (the node names replaced by their loopback addresses)."""
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
import yaml

from harness import ROOT, Server

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
CERTIFICATE = "/etc/letsencrypt/live/chat.example.com/fullchain.pem"
PRIVATE_KEY = "/etc/letsencrypt/live/chat.example.com/privkey.pem"
with open(os.path.join(ROOT, "Server", "Sources", "HeraldServer", "Application", "HeraldVersion.swift"), encoding="utf-8") as source:
    VERSION = re.search(r'current = "([^"]+)"', source.read()).group(1)


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


class ProxyTest(unittest.TestCase):
    """A test with a folder of its own (a throwaway certificate in it), nodes and nginx in front of them."""

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

    def write_guides(self, configuration):
        """The guide's configuration with its files moved into the test's folder, written there; its path."""
        for old, new in ((CERTIFICATE, self.certificate), (PRIVATE_KEY, self.private_key),
                         ("/run/nginx.pid", os.path.join(self.folder, "nginx.pid")),
                         ("/var/log/nginx/", os.path.join(self.folder, "logs") + "/")):
            self.assertIn(old, configuration)
            configuration = configuration.replace(old, new)
        return self.write(configuration)

    def write(self, configuration):
        """The configuration written to the test's folder; its path."""
        path = os.path.join(self.folder, "nginx.conf")
        with open(path, "w", encoding="utf-8") as file:
            file.write(configuration)
        return path

    def database(self):
        """A database of its own on the test's PostgreSQL, dropped at the end: its URL."""
        base = os.environ.get("HERALD_TEST_POSTGRES_URL")
        if not base:
            if os.environ.get("CI"):
                self.fail("PostgreSQL is tested in CI: scripts/test sets HERALD_TEST_POSTGRES_URL")
            self.skipTest("HERALD_TEST_POSTGRES_URL is not set (scripts/test starts a throwaway PostgreSQL)")
        name = "herald_nginx_" + uuid.uuid4().hex
        psql(base, f"CREATE DATABASE {name}")
        self.addCleanup(psql, base, f"DROP DATABASE {name} WITH (FORCE)")
        return urllib.parse.urlunsplit(urllib.parse.urlsplit(base)._replace(path="/" + name))

    def proxy(self, path, port):
        """nginx running the configuration at `path`, once it listens on `port`."""
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
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                self.assertIsNone(proxy.poll(), f"nginx ended: {proxy.stderr.read() if proxy.stderr else ''}")
                self.assertLess(time.monotonic(), deadline, "nginx did not listen within 10 s")
                time.sleep(0.05)

    @staticmethod
    def requester(origin, tls=None):
        """request(method, path, token, body) through the proxy at `origin`: (status, headers, body)."""
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
        return request

    def carries_streams(self, request, stream_url, nodes, tls=None):
        """One of Bob's streams through the proxy per node (round robin, no stickiness asked for: one on each), and
        three posts of Alice's through the proxy reaching every one of them, in order."""
        _, _, alice = request("POST", "/v1/demo/tokens", body={"user": "alice"})
        _, _, bob = request("POST", "/v1/demo/tokens", body={"user": "bob"})
        alice, bob = json.loads(alice)["token"], json.loads(bob)["token"]
        status, _, chat = request("POST", "/v1/conversations", alice, {"kind": "direct", "members": ["bob"]})
        self.assertIn(status, (200, 201), chat)
        chat = json.loads(chat)["id"]
        streams = []
        for _ in nodes:
            stream = websocket.create_connection(
                f"{stream_url}/v1/stream?token={bob}", timeout=10, suppress_origin=True,
                host="chat.example.com", **({"sslopt": {"context": tls}} if tls else {}))
            self.addCleanup(stream.close)
            deadline = time.monotonic() + 10
            while json.loads(stream.recv())["type"] != "ready":
                self.assertLess(time.monotonic(), deadline, "no ready frame")
            streams.append(stream)
        for node in nodes:
            with urllib.request.urlopen(node.url + "metrics", timeout=10) as answer:
                scraped = answer.read().decode()
            self.assertRegex(scraped, r"(?m)^herald_connections_open 1(\.0)?$", f"node {node.port} has one stream")
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


class DeployGuide(ProxyTest):
    def test_nginx_accepts_the_guides_configuration(self):
        path = self.write_guides(guide_configuration())
        checked = subprocess.run([NGINX, "-t", "-p", self.folder, "-c", path], capture_output=True, text=True,
                                 timeout=30)
        self.assertEqual(checked.returncode, 0, checked.stderr)
        self.assertIn("syntax is ok", checked.stderr)
        self.assertIn("test is successful", checked.stderr)

    def test_it_carries_two_nodes_traffic(self):
        url = self.database()
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
        self.proxy(self.write_guides(configuration), https_port)

        tls = ssl.create_default_context(cafile=self.certificate)
        tls.check_hostname = False
        request = self.requester(f"https://127.0.0.1:{https_port}", tls)
        status, headers, body = request("GET", "/health")
        self.assertEqual((status, json.loads(body)), (200, {"status": "ok", "database": "reachable", "version": VERSION}))
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

        self.carries_streams(request, f"wss://127.0.0.1:{https_port}", nodes, tls)


class ComposeFile(ProxyTest):
    """deploy/compose.yaml: its three nodes' settings and its nginx configuration, with real nodes and nginx."""

    def test_compose_files_settings_and_proxy_carry_three_nodes(self):
        with open(os.path.join(ROOT, "deploy", "compose.yaml"), encoding="utf-8") as file:
            compose = yaml.safe_load(file)
        with open(os.path.join(ROOT, "scripts", "image"), encoding="utf-8") as file:
            built = re.search(r'^tag="([^"]+)"$', file.read(), re.M).group(1)
        services = compose["services"]
        names = sorted(name for name in services if name.startswith("node"))
        self.assertEqual(names, ["node1", "node2", "node3"])
        database_url = None
        for name in names:
            node = services[name]
            self.assertEqual(node["image"], f"${{HERALD_IMAGE:-{built}}}", "the nodes run the image scripts/image builds")
            self.assertEqual(node["depends_on"], {"db": {"condition": "service_healthy"}})
            self.assertEqual(node["environment"], services["node1"]["environment"], "every node has the same settings")
            database_url = node["environment"]["HERALD_POSTGRES_URL"]
        self.assertRegex(database_url, r"^postgres://herald:\$\{HERALD_DB_PASSWORD:\?[^}]+\}@db:5432/herald$")
        self.assertEqual(services["db"]["environment"]["POSTGRES_USER"], "herald")
        self.assertEqual(services["db"]["environment"]["POSTGRES_DB"], "herald")
        proxy = services["proxy"]
        self.assertEqual(proxy["ports"], ["${HERALD_HTTP_PORT:-8080}:80"])
        self.assertEqual(proxy["volumes"], ["./nginx.conf:/etc/nginx/nginx.conf:ro"])

        # The nodes: the compose file's settings, with the test's database for `db` and loopback for the network.
        environment = {key: str(value) for key, value in services["node1"]["environment"].items()}
        environment["HERALD_POSTGRES_URL"] = self.database()
        nodes = []
        for _ in names:
            nodes.append(Server(environment))
            self.addCleanup(nodes[-1].close)

        with open(os.path.join(ROOT, "deploy", "nginx.conf"), encoding="utf-8") as file:
            configuration = file.read()
        for index, node in enumerate(nodes, start=1):
            self.assertIn(f"server node{index}:8080 ", configuration)
            configuration = configuration.replace(f"server node{index}:8080 ", f"server 127.0.0.1:{node.port} ")
        port = free_port()
        self.assertIn("listen 80;", configuration)
        configuration = configuration.replace("listen 80;", f"listen 127.0.0.1:{port};")
        configuration = configuration.replace("worker_processes auto;", "worker_processes 1;")
        configuration = (f"pid {self.folder}/nginx.pid;\nerror_log {self.folder}/logs/error.log;\n" + configuration)
        configuration = configuration.replace("http {\n", f"http {{\n    access_log {self.folder}/logs/access.log;\n", 1)
        self.proxy(self.write(configuration), port)

        request = self.requester(f"http://127.0.0.1:{port}")
        status, _, body = request("GET", "/health")
        self.assertEqual((status, json.loads(body)), (200, {"status": "ok", "database": "reachable", "version": VERSION}))
        status, _, body = request("GET", "/metrics")
        self.assertEqual(status, 404, "/metrics is not served through the proxy")
        self.assertNotIn("herald_", body)
        self.carries_streams(request, f"ws://127.0.0.1:{port}", nodes)

if __name__ == "__main__":
    unittest.main()
