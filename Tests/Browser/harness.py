"""What the browser tests stand on: a live `herald serve --demo`, the demo people's API, and headless Chromium.

Every wait is bounded; a failure names what it waited for.
"""
import http.server
import json
import os
import re
import shutil
import signal
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERALD = os.environ.get("HERALD_EXECUTABLE") or os.path.join(ROOT, "Server", ".build", "debug", "herald")

# Injected before the page's own scripts (DevTools bypasses the page's CSP): records CSP violations, and every system
# notification the page posts, while still posting it through the real API.
SPIES = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
window.__notifications = [];
window.__closedNotifications = [];
if ('Notification' in window) {
  const Real = window.Notification;
  const Spy = function (title, options) {
    window.__notifications.push({title, body: options && options.body, tag: options && options.tag, silent: !!(options && options.silent)});
    const shown = new Real(title, options);
    window.__lastNotification = shown;
    const close = shown.close.bind(shown);
    shown.close = () => { window.__closedNotifications.push(options && options.tag); close(); };
    return shown;
  };
  Object.defineProperty(Spy, 'permission', {get: () => Real.permission});
  window.__permissionRequests = 0;
  Spy.requestPermission = (...args) => { window.__permissionRequests += 1; return Real.requestPermission(...args); };
  Spy.prototype = Real.prototype;
  window.Notification = Spy;
}
window.__bannersShown = [];
new MutationObserver((records) => {
  for (const record of records) for (const node of record.addedNodes) {
    if (node.classList && node.classList.contains('banner')) {
      window.__bannersShown.push({id: node.dataset.id, at: performance.timeOrigin + performance.now()});
    }
  }
}).observe(document, {childList: true, subtree: true});
"""


class Server:
    """`herald serve --demo` on a database of its own; restartable on the same port and file."""

    def __init__(self, environment=None):
        self.folder = tempfile.mkdtemp(prefix="herald-browser-")
        self.database = os.path.join(self.folder, "herald.sqlite")
        self.environment = environment or {}
        self.port = 0
        self.process = None
        self.start()

    def start(self):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/root"),
            "HERALD_LIMIT_POSTS_PER_SECOND": "1000",
            "HERALD_LIMIT_POST_BURST": "1000",
            **self.environment,
        }
        self.process = subprocess.Popen(
            [HERALD, "serve", "--demo", "--port", str(self.port), "--database", self.database],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True, start_new_session=True,
        )
        first = _read_line(self.process.stdout, timeout=30)
        match = re.match(r"Open http://127\.0\.0\.1:(\d+)/ in a browser$", first or "")
        if not match:
            self.kill()
            raise AssertionError(f"herald serve did not start with the page's address; it printed {first!r}")
        self.port = int(match.group(1))
        self.first_line = first.strip()
        # Keep reading, so the server never blocks on a full pipe.
        threading.Thread(target=_drain, args=(self.process.stdout,), daemon=True).start()

    def ensure_running(self):
        if self.process is None or self.process.poll() is not None:
            self.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def stop(self):
        """SIGTERM, then waits (at most 15 s) for it to end."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def close(self):
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    # The API, as the demo people.
    def request(self, method, path, token=None, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url.rstrip("/") + path, data=data, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read().decode()
                return response.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read().decode() or "null")

    def token(self, user):
        status, body = self.request("POST", "/v1/demo/tokens", body={"user": user})
        assert status == 200, body
        return body["token"]

    def mint(self, user, name, picture=None):
        """A token for anyone, signed with the server's secret (`herald token`)."""
        arguments = [HERALD, "token", user, "--name", name, "--database", self.database]
        if picture:
            arguments += ["--picture", picture]
        return subprocess.run(arguments, capture_output=True, text=True, timeout=30, check=True).stdout.strip()

    def direct(self, token, other):
        status, body = self.request("POST", "/v1/conversations", token, {"kind": "direct", "members": [other]})
        assert status in (200, 201), body
        return body["id"]

    def post(self, token, conversation, text, message_id=None, image_url=None):
        body = {"text": text} if text else {}
        if message_id:
            body["id"] = message_id
        if image_url:
            body["imageURL"] = image_url
        status, answer = self.request("POST", f"/v1/conversations/{conversation}/messages", token, body)
        assert status in (200, 201), answer
        return answer


    def backdate(self, message_ids, days):
        """Moves messages `days` into the past in the server's database, as if sent then (sqlite3 beside the running
        server, which reads them from the file on its next query)."""
        import sqlite3
        with sqlite3.connect(self.database, timeout=10) as database:
            database.executemany("UPDATE messages SET created_at = created_at - ? WHERE id = ?",
                                 [(days * 86400, message_id) for message_id in message_ids])


def _drain(stream):
    for _ in stream:
        pass
    stream.close()


def _read_line(stream, timeout):
    result = []
    reader = threading.Thread(target=lambda: result.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else None


class BrowserPushService:
    """Stands in for Chromium's own push service (Google's GCM check-in and registration), which a machine without
    the internet cannot reach: with it, `pushManager.subscribe` hands out a real subscription (the browser's own
    keys; an endpoint on the push service's host, where nothing is ever sent: tests deliver pushes to the service
    worker through the DevTools protocol). It answers a check-in with a device id and security token (protobuf
    fields 7 and 8 of AndroidCheckinResponse) and a registration with a token; it records the requests."""

    def __init__(self):
        self.requests = []
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.requests.append((self.path, body))
                if self.path == "/checkin":
                    answer = b"\x08\x01" + b"\x39" + struct.pack("<Q", 4242424242) + b"\x41" + struct.pack("<Q", 2424242424)
                elif self.path == "/register" and b"delete=true" in body:
                    answer = b"deleted=" + body.split(b"app=")[1].split(b"&")[0]
                elif self.path == "/register":
                    answer = f"token=browser-push-{len(service.requests)}".encode()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def switches(self):
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        return [f"--gcm-checkin-url={base}/checkin", f"--gcm-registration-url={base}/register"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class PushService:
    """A push service on loopback over HTTPS with a throwaway certificate, for a server run with
    `HERALD_PUSH_CA_FILE=<certificate>` and `HERALD_WEBPUSH_ALLOW_PRIVATE=1`: records each request (path, headers
    in lower case, body), answers 201 (or what `answer(path)` gives: a status and a JSON value, or None for 201);
    `wait_for` waits for a request to come."""

    def __init__(self, folder, answer=None):
        self.certificate = os.path.join(folder, "cert.pem")
        key = os.path.join(folder, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
             "-keyout", key, "-out", self.certificate],
            check=True, capture_output=True, timeout=30)
        self.requests = []
        self.arrived = threading.Condition()
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                request = (self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                with service.arrived:
                    service.requests.append(request)
                    service.arrived.notify_all()
                status, value = (answer(self.path) if answer else None) or (201, None)
                body = b"" if value is None else json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                if body:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificate, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, condition, timeout, what):
        """The requests so far once `condition(requests)` holds, woken by each request, within `timeout` seconds."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: condition(self.requests), timeout):
                raise AssertionError(f"the push service received {what} within {timeout} s: {self.requests}")
            return list(self.requests)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def worker_evaluate(driver, expression):
    """Runs `expression` (a promise) in the page's service worker (/sw.js), through a DevTools connection to its own
    target, and answers its value."""
    import websocket  # Selenium's own dependency
    address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
    deadline = time.monotonic() + 10
    while True:
        with urllib.request.urlopen(f"http://{address}/json/list", timeout=10) as answer:
            workers = [t for t in json.load(answer) if t["type"] == "service_worker" and t["url"].endswith("/sw.js")]
        if workers or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if not workers:
        raise AssertionError("no DevTools target of the service worker within 10 s")
    socket = websocket.create_connection(workers[0]["webSocketDebuggerUrl"], timeout=10, suppress_origin=True)
    try:
        socket.send(json.dumps({"id": 1, "method": "Runtime.evaluate",
                                "params": {"expression": expression, "awaitPromise": True, "returnByValue": True}}))
        while True:
            message = json.loads(socket.recv())
            if message.get("id") == 1:
                return message["result"]["result"].get("value")
    finally:
        socket.close()


def chromium(width=1280, height=900, reduced_motion=False, push_service=None, dark=False):
    """Headless Chromium at a window size, with the spies installed and console logs kept; with `push_service`
    (a BrowserPushService), its Web Push subscriptions come from that; with `dark`, the system's dark theme."""
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update",
                     *(push_service.switches if push_service else [])):
        options.add_argument(argument)
    # Debian's /usr/bin/chromium is a shell wrapper; the browser itself is beside it.
    if os.path.exists("/usr/lib/chromium/chromium"):
        options.binary_location = "/usr/lib/chromium/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    if width < 500:
        # A window is never narrower than 500 px; a phone's viewport is emulated instead.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": SPIES})
    features = ([{"name": "prefers-reduced-motion", "value": "reduce"}] if reduced_motion else []) \
        + ([{"name": "prefers-color-scheme", "value": "dark"}] if dark else [])
    if features:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": features})
    return driver


class DevTools:
    """A second DevTools connection to a page, for domains Selenium does not relay the events of (ServiceWorker).
    `call` waits (at most 10 s) for the command's answer and fails on an error; events are kept in order."""

    def __init__(self, driver):
        import websocket  # Selenium's own dependency
        address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json/list", timeout=10) as answer:
            targets = json.load(answer)
        page = next(target for target in targets if target["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10, suppress_origin=True)
        self.sequence = 0
        self.events = []

    def call(self, method, **params):
        self.sequence += 1
        self.socket.send(json.dumps({"id": self.sequence, "method": method, "params": params}))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.sequence:
                if "error" in message:
                    raise AssertionError(f"DevTools {method} failed: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
        raise AssertionError(f"DevTools {method} did not answer within 10 s")

    def next_event(self, method, condition=lambda params: True, timeout=10):
        """The first event `method` (kept or coming) whose params meet `condition`, within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event["method"] == method and condition(event["params"]):
                    del self.events[:index + 1]
                    return event["params"]
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no DevTools {method} event within {timeout} s")
            self.socket.settimeout(left)
            try:
                message = json.loads(self.socket.recv())
            except Exception:
                continue
            if "method" in message:
                self.events.append(message)

    def service_worker(self, origin):
        """The registration id of `origin`'s service worker (`/sw.js`), once its version is activated and running."""
        script = origin + "/sw.js"

        def running(params):
            return any(version["scriptURL"] == script and version["status"] == "activated"
                       and version["runningStatus"] == "running" for version in params["versions"])
        versions = self.next_event("ServiceWorker.workerVersionUpdated", running, timeout=15)["versions"]
        return next(version["registrationId"] for version in versions if version["scriptURL"] == script)

    def close(self):
        self.socket.close()



def reset_notifications(server, token):
    """The user's notification settings back to the defaults: a user who chose nothing."""
    status, _ = server.request("PUT", "/v1/me/notifications", token, {
        "defaultLevel": "all", "snoozeUntil": None, "timeZone": None, "quietHours": [],
        "mentionsDuringQuietHours": False, "badgeCountsMuted": False})
    assert status == 200, status

def wait(driver, condition, timeout, what):
    """Waits for `condition(driver)` to be truthy, polling every 20 ms, for at most `timeout` seconds. The page
    redraws its lists as messages arrive, so an element that went stale meanwhile is just looked up again."""
    return WebDriverWait(driver, timeout, poll_frequency=0.02,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(condition, message=f"waited {timeout} s for {what}")


def click_when(driver, find, timeout, what):
    """Clicks the first element `find(driver)` returns, once it returns one, within `timeout` seconds. Finding and
    clicking are one step, tried again together: a list the page redraws meanwhile (search results as the query
    grows, the chat list as messages arrive) leaves a found element stale, and the click then finds it anew."""
    def clicked(d):
        found = find(d)
        if not found:
            return False
        found[0].click()
        return True
    wait(driver, clicked, timeout, what)


def messages(driver):
    """The open chat's messages, read in one step: [{text, mine, state}] (state: pending, failed or stored)."""
    return driver.execute_script("""return [...document.querySelectorAll('#messages li.message')].map((m) => ({
        text: m.querySelector('.text')?.textContent ?? '', mine: m.classList.contains('mine'),
        state: m.classList.contains('pending') ? 'pending' : m.classList.contains('failed') ? 'failed' : 'stored'}))""")


def unread(driver, name):
    """The unread count the list shows for a chat (0 without a badge), read in one step."""
    return driver.execute_script("""for (const item of document.querySelectorAll('#conversations li')) {
        if (item.querySelector('.conversation-name').textContent === arguments[0]) {
          return Number(item.querySelector('.unread')?.textContent ?? 0);
        }
      }
      return null;""", name)


def list_item(driver, name):
    """What the list shows for a chat, read in one step: the list is redrawn as the stream brings news, and an element
    found a moment before may be gone the next (stale). Its whole text, its time, its unread badge (count, classes,
    computed background colour), whether it has the muted and the level marks; None when it is not in the list."""
    return driver.execute_script("""for (const item of document.querySelectorAll('#conversations li')) {
        if (item.querySelector('.conversation-name').textContent !== arguments[0]) continue;
        const badge = item.querySelector('.unread');
        return {
          text: item.textContent,
          time: item.querySelector('.conversation-time')?.textContent ?? null,
          unread: badge ? {count: Number(badge.textContent), classes: badge.className,
                           background: getComputedStyle(badge).backgroundColor} : null,
          muted: item.querySelector('.muted-mark') !== null,
          level: item.querySelector('.level-mark') !== null,
        };
      }
      return null;""", name)


def visible_banners(driver):
    return driver.find_elements(By.CSS_SELECTOR, "#banner-layer .banner:not(.leaving)")


def sign_in_as(driver, server, name):
    """Opens the page and presses "Continue as <name>"; returns once the stream is live."""
    driver.get(server.url)
    button = wait(driver, lambda d: [b for b in d.find_elements(By.CSS_SELECTOR, "#demo-people button")
                                     if b.text == f"Continue as {name}"], 10, f"the demo button for {name}")[0]
    button.click()
    wait(driver, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#conversations li"), 10, "the conversation list")


def open_settings(driver):
    """Opens the Settings sheet (the gear in the list's header), where the page's switches are."""
    if driver.find_element(By.ID, "settings").get_attribute("open") is None:
        driver.find_element(By.ID, "settings-button").click()
    wait(driver, lambda d: d.find_element(By.ID, "coalesce").is_displayed(), 2, "the settings to open")


def close_dialog(driver, dialog_id):
    """Closes a dialog with Escape, as a person would, and waits until it is closed."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(driver).send_keys(Keys.ESCAPE).perform()
    wait(driver, lambda d: d.find_element(By.ID, dialog_id).get_attribute("open") is None, 2, f"#{dialog_id} to close")


def choose_level(driver, level, span="always"):
    """Sets the open chat's notifications with its one control: the bell's menu, for `span`."""
    from selenium.webdriver.support.select import Select
    driver.find_element(By.ID, "level-button").click()
    wait(driver, lambda d: d.find_element(By.ID, "level-menu").is_displayed(), 2, "the menu to open")
    Select(driver.find_element(By.ID, "level-for")).select_by_value(span)
    driver.find_element(By.CSS_SELECTOR, f"#level-menu [data-level={level}]").click()


def level_label(driver):
    """What the open chat's notification control says."""
    return driver.find_element(By.ID, "level-label").get_attribute("textContent")


def confirm(driver, action):
    """Answers the page's question before something destructive by pressing `action`."""
    button = wait(driver, lambda d: d.find_element(By.ID, "confirm-ok") if d.find_element(By.ID, "confirm").get_attribute("open")
                  is not None else None, 3, "the question")
    if button.text != action:
        raise AssertionError(f"the question's button says {button.text!r}, not {action!r}")
    button.click()
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None, 2, "the question answered")


def conversation_item(driver, name):
    for item in driver.find_elements(By.CSS_SELECTOR, "#conversations li"):
        if item.find_element(By.CSS_SELECTOR, ".conversation-name").text == name:
            return item
    return None


def open_chat(driver, name):
    def button(d):
        item = conversation_item(d, name)
        return [item.find_element(By.TAG_NAME, "button")] if item else []
    click_when(driver, button, 10, f"{name} in the list")
    wait(driver, lambda d: d.find_element(By.ID, "chat-title").text == name, 5, f"{name}'s chat to open")
    wait(driver, lambda d: d.find_element(By.ID, "messages").get_attribute("aria-busy") == "false", 5, f"{name}'s messages")


def severe_console_lines(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
