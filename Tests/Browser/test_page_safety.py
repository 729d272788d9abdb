"""The web client in headless Chromium against a live `herald serve --demo`: Hostile text, and the page's figures. Run by scripts/browser-tests."""
import os
import statistics
import time
import unittest
import urllib.parse
import uuid

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import (ROOT, Server, chromium, choose_level, click_when, close_dialog, confirm, conversation_item, level_label, list_item,
                     messages, open_chat, open_settings,
                     severe_console_lines, sign_in_as, unread, visible_banners, wait)
from page_case import SCREENSHOTS, PageTestCase, banner_text, pick, shot


class SafetyTests(PageTestCase):
    HOSTILE = "<img src=x onerror=alert(1)>"

    def test_network_text_is_shown_as_text(self):
        alice = self.alice_in_bobs_chat()
        evil = self.server.mint("mallory", self.HOSTILE, picture="javascript:alert(1)")
        status, group = self.server.request("POST", "/v1/conversations", evil,
                                            {"kind": "group", "title": self.HOSTILE, "members": ["alice"]})
        self.assertEqual(status, 201, group)
        self.server.post(evil, group["id"], self.HOSTILE)
        banner = self.wait_for_banner(alice, self.HOSTILE, 2)
        self.assertIn(f"in {self.HOSTILE}", banner_text(banner))
        self.assertEqual(banner.find_elements(By.TAG_NAME, "img"), [], "the avatar URL is not http(s), so nothing loads")
        self.assertEqual(banner.find_element(By.CSS_SELECTOR, ".avatar").get_attribute("textContent"), "<O")
        wait(alice, lambda d: conversation_item(d, self.HOSTILE), 3, "the hostile group in the list")
        banner.click()
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == self.HOSTILE, 3, "the hostile group's chat")
        wait(alice, lambda d: self.HOSTILE in [m["text"] for m in messages(d)], 3, "the hostile message, as text")
        self.assertEqual(alice.find_elements(By.CSS_SELECTOR, "img[src='x'], #messages img, #conversations img"), [])
        try:
            alert = alice.switch_to.alert
            self.fail(f"a script ran: {alert.text}")
        except NoAlertPresentException:
            pass
        self.assertEqual(severe_console_lines(alice), [])

    def test_no_console_errors_no_csp_violations_nothing_from_elsewhere(self):
        alice = self.alice_in_bobs_chat()
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Clean?")
        self.wait_for_banner(alice, "Clean?", 3).click()
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == "Charlie Davis", 3, "Charlie's chat")
        self.assertEqual(severe_console_lines(alice), [])
        self.assertEqual(alice.execute_script("return window.__violations"), [])
        origin = self.server.url.rstrip("/")
        resources = alice.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        self.assertTrue(resources)
        self.assertEqual([r for r in resources if not r.startswith(origin + "/")], [])


class Figures(PageTestCase):
    """Page weight and the time from a post to its banner, printed (not asserted: a benchmark, not a timed test)."""

    def test_print_page_weight_and_post_to_banner_latency(self):
        folder = os.path.join(ROOT, "Server", "Sources", "HeraldServer", "Resources", "web")
        sizes = {name: os.path.getsize(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}
        alice = self.alice_in_bobs_chat()
        loaded = alice.execute_script(
            "return performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))"
            ".filter(e => !new URL(e.name).pathname.startsWith('/v1/')).map(e => [e.name, e.decodedBodySize, e.transferSize])")
        # The JavaScript package's modules the page imports (served at /herald/ from clients/js/src).
        package = os.path.join(ROOT, "clients", "js", "src")
        for name in sorted({urllib.parse.urlparse(url).path.split("/")[-1] for url, _, _ in loaded
                            if urllib.parse.urlparse(url).path.startswith("/herald/")}):
            sizes[f"herald/{name}"] = os.path.getsize(os.path.join(package, name))
        chat = self.chat_with("charlie", "alice")
        samples = []
        for index in range(60):
            message_id = f"latency-{uuid.uuid4()}"
            before = alice.execute_script("return performance.timeOrigin + performance.now()")
            self.server.post(self.tokens["charlie"], chat, f"Latency {index}", message_id)
            banner = wait(alice, lambda d: [b for b in d.execute_script("return window.__bannersShown") if b["id"] == message_id],
                          2, f"banner {index}")[0]
            samples.append(banner["at"] - before)
            alice.execute_script("document.querySelector('#banner-layer .banner:not(.leaving)')"
                                 ".dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
            time.sleep(0.3)  # the exit gap before the next banner may show
        samples.sort()
        p50 = statistics.median(samples)
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        print(f"\nweb page: {sum(sizes.values()):,} bytes uncompressed in {len(sizes)} files "
              f"({', '.join(f'{n} {s:,}' for n, s in sizes.items())}); the browser loaded "
              f"{sum(s for _, s, _ in loaded):,} bytes of them in {len(loaded)} requests, "
              f"{sum(t for _, _, t in loaded):,} bytes on the wire (gzip, with the headers)")
        print(f"post to banner on loopback ({len(samples)} posts, each an HTTP POST then the banner in the page): "
              f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {samples[-1]:.1f} ms")


if __name__ == "__main__":
    unittest.main()
