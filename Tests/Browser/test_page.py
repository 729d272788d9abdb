"""The web client in headless Chromium against a live `herald serve --demo`: banners, gestures, motion, two people
chatting, a server restart, and hostile text. Run by scripts/browser-tests (which scripts/test calls)."""
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

from harness import (ROOT, Server, chromium, click_when, conversation_item, list_item, messages, open_chat, open_settings,
                     severe_console_lines, sign_in_as, unread, visible_banners, wait)

# Set HERALD_UPDATE_SCREENSHOTS=1 to write the README's screenshots (docs/images) from the tests that take them.
SCREENSHOTS = os.environ.get("HERALD_UPDATE_SCREENSHOTS") == "1"


def pick(driver, query, name):
    """Types `query` in the new-chat search and picks the person called `name` from what it finds."""
    box = driver.find_element(By.ID, "people-search")
    box.clear()
    box.send_keys(query)
    click_when(driver, lambda d: [b for b in d.find_elements(By.CSS_SELECTOR, "#people-results .person")
                                  if b.find_element(By.TAG_NAME, "strong").text == name], 5, f"{name} found by {query!r}")
    wait(driver, lambda d: name in [c.text.rstrip("×").strip() for c in d.find_elements(By.CSS_SELECTOR, "#picked .chip")],
         3, f"{name} picked")


def banner_text(banner):
    return banner.get_attribute("textContent")


class PageTestCase(unittest.TestCase):
    """One demo server for the class; each test opens its own browsers, closed when it ends."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        cls.tokens = {user: cls.server.token(user) for user in ("alice", "bob", "charlie")}

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def browser(self, **options):
        driver = chromium(**options)
        self.addCleanup(driver.quit)
        return driver

    def chat_with(self, sender, receiver):
        """The direct chat between two demo people (the demo made it)."""
        return self.server.direct(self.tokens[sender], receiver)

    def alice_in_bobs_chat(self, **options):
        driver = self.browser(**options)
        sign_in_as(driver, self.server, "Alice Johnson")
        open_chat(driver, "Bob")
        return driver

    def wait_for_banner(self, driver, text, timeout, settled=True):
        """The banner showing `text`; with `settled`, once its entrance is over (mid-slide it is partly above the
        page, where WebDriver can neither click it nor see its text)."""
        banner = wait(driver, lambda d: [b for b in visible_banners(d) if text in banner_text(b)], timeout,
                      f"a banner with {text!r}")[0]
        if settled:
            wait(driver, lambda d: "entering" not in banner.get_attribute("class"), 2, f"the banner with {text!r} in place")
        return banner

    def assert_no_banner_for(self, driver, seconds, text):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.assertFalse([b for b in visible_banners(driver) if text in banner_text(b)], f"a banner showed {text!r}")
            time.sleep(0.05)


class BannerTests(PageTestCase):
    def test_a_message_from_someone_else_shows_a_banner_that_opens_their_chat(self):
        alice = self.alice_in_bobs_chat()
        posted = time.monotonic()
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Hey, are you there?")
        banner = self.wait_for_banner(alice, "Hey, are you there?", 1.0)
        self.assertLess(time.monotonic() - posted, 1.0)
        self.assertIn("Charlie Davis", banner_text(banner))
        self.assertEqual(banner.get_attribute("role"), "status")
        self.assertIn("Charlie Davis", banner.get_attribute("aria-label"))
        self.assertIn("Hey, are you there?", banner.get_attribute("aria-label"))
        time.sleep(0.35)  # the slide-in
        self.assertAlmostEqual(banner.rect["y"], 8, delta=1)
        self.assertAlmostEqual(banner.rect["height"], 64, delta=4)
        if SCREENSHOTS:
            alice.save_screenshot(os.path.join(ROOT, "docs", "images", "web-desktop.png"))
        banner.click()
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == "Charlie Davis", 2, "Charlie's chat to open")
        wait(alice, lambda d: not visible_banners(d), 1, "the tapped banner to go")
        wait(alice, lambda d: "Hey, are you there?" in [m["text"] for m in messages(d)], 3, "Charlie's message in the chat")

    def test_a_message_in_the_open_chat_shows_no_banner(self):
        alice = self.alice_in_bobs_chat()
        self.server.post(self.tokens["bob"], self.chat_with("bob", "alice"), "Already looking at it")
        wait(alice, lambda d: "Already looking at it" in d.find_element(By.ID, "messages").text, 2, "the message in the chat")
        self.assert_no_banner_for(alice, 1.0, "Already looking at it")

    def test_an_ignored_banner_goes_after_four_seconds(self):
        alice = self.alice_in_bobs_chat()
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Ignore me")
        banner = self.wait_for_banner(alice, "Ignore me", 1.0, settled=False)
        shown = time.monotonic()
        time.sleep(3.0)
        self.assertIn(banner, visible_banners(alice), "gone before its 4 s")
        wait(alice, lambda d: banner not in visible_banners(d), 2.0, "the banner to time out")
        self.assertAlmostEqual(time.monotonic() - shown, 4.0, delta=0.6)
        self.assertEqual(banner.get_attribute("data-reason"), "timeout")

    def test_three_messages_from_three_people_show_one_after_another(self):
        alice = self.alice_in_bobs_chat()
        team = [c["id"] for c in self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
                if c["kind"] == "group"][0]
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "First, from Charlie")
        self.server.post(self.tokens["bob"], team, "Second, from Bob in the team")
        dana = self.server.mint("dana", "Dana Li")
        self.server.post(dana, self.server.direct(dana, "alice"), "Third, from Dana")
        first = self.wait_for_banner(alice, "First, from Charlie", 1)
        self.assertEqual(len(visible_banners(alice)), 1)
        first.send_keys(Keys.ESCAPE)
        second = self.wait_for_banner(alice, "Second, from Bob", 1)
        self.assertIn("in Team Chat", banner_text(second))
        self.assertEqual(len(visible_banners(alice)), 1)
        second.find_element(By.CSS_SELECTOR, ".banner-close").click()
        third = self.wait_for_banner(alice, "Third, from Dana", 1)
        self.assertIn("Dana Li", banner_text(third))
        third.send_keys(Keys.ENTER)
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == "Dana Li", 2, "Dana's chat to open from the keyboard")

    def test_drags_and_a_held_press(self):
        alice = self.alice_in_bobs_chat()
        chat = self.chat_with("charlie", "alice")
        self.server.post(self.tokens["charlie"], chat, "Drag me a little")
        banner = self.wait_for_banner(alice, "Drag me a little", 1)
        time.sleep(0.35)
        ActionChains(alice).move_to_element(banner).click_and_hold().move_by_offset(0, -30).release().perform()
        time.sleep(0.4)
        self.assertIn(banner, visible_banners(alice), "a 30 px drag dismissed the banner")
        self.assertAlmostEqual(banner.rect["y"], 8, delta=1.5)  # sprang back

        # From near its bottom edge, so the pointer stays in the page (WebDriver moves nothing outside it).
        ActionChains(alice).move_to_element_with_offset(banner, 0, 26).click_and_hold().move_by_offset(0, -60).release().perform()
        wait(alice, lambda d: banner not in visible_banners(d), 1, "a 60 px drag to dismiss")
        self.assertEqual(banner.get_attribute("data-reason"), "swipe")
        self.assertEqual(alice.find_element(By.ID, "chat-title").text, "Bob", "a swipe must not open the chat")

        self.server.post(self.tokens["charlie"], chat, "Hold me")
        held = self.wait_for_banner(alice, "Hold me", 1)
        shown = time.monotonic()
        time.sleep(0.35)  # the slide-in
        ActionChains(alice).move_to_element(held).click_and_hold().pause(3.0).release().perform()
        time.sleep(max(0, 4.6 - (time.monotonic() - shown)))
        self.assertIn(held, visible_banners(alice), "a banner held for 3 s went at 4 s")
        self.assertEqual(alice.find_element(By.ID, "chat-title").text, "Bob", "a long press must not count as a tap")
        wait(alice, lambda d: held not in visible_banners(d), 3, "the held banner to go with its time left")
        self.assertEqual(held.get_attribute("data-reason"), "timeout")

    def test_reduced_motion_fades_instead_of_sliding(self):
        alice = self.alice_in_bobs_chat(reduced_motion=True)
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Gently")
        banner = self.wait_for_banner(alice, "Gently", 1, settled=False)
        self.assertEqual(banner.value_of_css_property("animation-name"), "banner-fade-in")
        banner.send_keys(Keys.ESCAPE)
        self.assertEqual(banner.value_of_css_property("animation-name"), "banner-fade-out")

        plain = self.alice_in_bobs_chat()
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Slide in")
        banner = self.wait_for_banner(plain, "Slide in", 1, settled=False)
        self.assertEqual(banner.value_of_css_property("animation-name"), "banner-slide-in")
        banner.send_keys(Keys.ESCAPE)
        self.assertEqual(banner.value_of_css_property("animation-name"), "banner-slide-out")

    def test_a_phone_sized_page(self):
        alice = self.browser(width=390, height=844)
        sign_in_as(alice, self.server, "Alice Johnson")
        self.assertLessEqual(alice.execute_script("return document.documentElement.scrollWidth"), 390)
        open_chat(alice, "Bob")
        self.assertFalse(alice.find_element(By.CSS_SELECTOR, ".sidebar").is_displayed(), "list and chat at once at 390 px")
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Hey, are you there?")
        banner = self.wait_for_banner(alice, "Hey, are you there?", 1)
        self.assertAlmostEqual(banner.rect["x"], 16, delta=1)
        self.assertAlmostEqual(banner.rect["width"], alice.execute_script("return innerWidth") - 32, delta=1)
        time.sleep(0.35)
        if SCREENSHOTS:
            alice.save_screenshot(os.path.join(ROOT, "docs", "images", "web-phone.png"))
        banner.send_keys(Keys.ESCAPE)
        wait(alice, lambda d: not visible_banners(d), 1, "the banner to go")
        alice.find_element(By.ID, "back").click()
        wait(alice, lambda d: d.find_element(By.CSS_SELECTOR, ".sidebar").is_displayed(), 2, "the list again")


class ChatTests(PageTestCase):
    def test_two_people_chat_both_ways_with_unread_counts(self):
        alice = self.browser()
        bob = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        sign_in_as(bob, self.server, "Bob")
        open_chat(alice, "Charlie Davis")
        open_chat(bob, "Charlie Davis")

        before = unread(bob, "Alice Johnson")
        composer = alice.find_element(By.ID, "composer-text")
        open_chat(alice, "Bob")
        composer.send_keys("Hi Bob,")
        composer.send_keys(Keys.SHIFT, Keys.ENTER)
        composer.send_keys("two lines")
        composer.send_keys(Keys.ENTER)
        wait(alice, lambda d: {"text": "Hi Bob,\ntwo lines", "mine": True, "state": "stored"} in messages(d), 3, "the ack")
        wait(bob, lambda d: unread(d, "Alice Johnson") == before + 1, 3, "Bob's unread count to go up")
        self.wait_for_banner(bob, "Hi Bob, two lines", 1)
        self.assertTrue(bob.title.startswith("("), bob.title)
        wait(bob, lambda d: conversation_item(d, "Alice Johnson").find_element(By.CSS_SELECTOR, ".conversation-preview").text
             == "Hi Bob, two lines", 1, "the preview in the list")

        open_chat(bob, "Alice Johnson")
        wait(bob, lambda d: unread(d, "Alice Johnson") == 0, 3, "Bob's unread count to clear when he reads")
        reply = bob.find_element(By.ID, "composer-text")
        reply.send_keys("Hello Alice!", Keys.ENTER)
        wait(alice, lambda d: "Hello Alice!" in d.find_element(By.ID, "messages").text, 3, "Bob's reply in Alice's chat")
        self.assertEqual(unread(alice, "Bob"), 0, "a message read in the open chat counts as unread")
        self.assertEqual([m["text"] for m in messages(alice)].count("Hello Alice!"), 1)
        # Alice has read it: the server's count for her says so too.
        conversations = self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
        with_bob = [c for c in conversations if c["kind"] == "direct" and "bob" in c["members"]][0]
        wait(alice, lambda d: self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
             and [c for c in self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
                  if c["id"] == with_bob["id"]][0]["unreadCount"] == 0, 3, "Alice's read marker on the server")

    def test_new_chats_mute_and_sign_out(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        alice.find_element(By.ID, "new-chat-button").click()
        alice.find_element(By.CSS_SELECTOR, "input[name=kind][value=group]").click()
        alice.find_element(By.ID, "new-chat-title").send_keys("Launch crew")
        pick(alice, "Bob", "Bob")
        pick(alice, "char", "Charlie Davis")
        alice.find_element(By.ID, "new-chat-start").click()
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == "Launch crew", 3, "the new group to open")
        group = [c for c in self.server.request("GET", "/v1/conversations", self.tokens["charlie"])[1]["conversations"]
                 if c.get("title") == "Launch crew"][0]
        self.assertEqual(sorted(group["members"]), ["alice", "bob", "charlie"])

        open_chat(alice, "Bob")
        alice.find_element(By.ID, "mute").click()
        wait(alice, lambda d: d.find_element(By.ID, "mute").text == "Unmute", 3, "the chat to be muted")
        open_chat(alice, "Launch crew")
        self.server.post(self.tokens["bob"], self.chat_with("bob", "alice"), "Muted, so quiet")
        wait(alice, lambda d: "Muted, so quiet" in conversation_item(d, "Bob").text, 3, "the muted chat's preview")
        self.assert_no_banner_for(alice, 1.0, "Muted, so quiet")
        open_chat(alice, "Bob")
        alice.find_element(By.ID, "mute").click()
        wait(alice, lambda d: d.find_element(By.ID, "mute").text == "Mute", 3, "the chat to be unmuted")

        alice.find_element(By.ID, "sign-out").click()
        wait(alice, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), 3, "the sign-in page")
        self.assertIsNone(alice.execute_script("return sessionStorage.getItem('herald.token')"))
        alice.refresh()
        wait(alice, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), 5, "still signed out after a reload")

    def test_a_token_in_the_address_signs_in_and_leaves_the_address(self):
        alice = self.browser()
        alice.get(self.server.url + "#token=" + self.tokens["alice"])
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
        self.assertEqual(alice.current_url, self.server.url)
        self.assertEqual(alice.find_element(By.ID, "me-name").text, "Alice Johnson")

        pasted = self.browser()
        pasted.get(self.server.url)
        wait(pasted, lambda d: d.find_element(By.ID, "token-input").is_displayed(), 5, "the token form")
        pasted.find_element(By.ID, "token-input").send_keys(self.tokens["bob"])
        pasted.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait(pasted, lambda d: d.find_element(By.ID, "me-name").text == "Bob", 5, "Bob signed in by a pasted token")

        refused = self.browser()
        refused.get(self.server.url + "#token=" + self.tokens["bob"][:-4] + "AAAA")
        wait(refused, lambda d: "invalid_token" in d.find_element(By.ID, "sign-in-error").text, 10, "a refused token's error")

    def test_notifications_while_hidden(self):
        alice = self.alice_in_bobs_chat()
        alice.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.server.url.rstrip("/"), "permissions": ["notifications"]})
        alice.refresh()
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
        self.assertTrue(alice.find_element(By.ID, "notify-button").get_attribute("hidden") is not None)
        alice.minimize_window()
        wait(alice, lambda d: d.execute_script("return document.hidden"), 5, "the page to be hidden")
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "While you were away")
        notifications = wait(alice, lambda d: d.execute_script("return window.__notifications"), 3, "a system notification")
        self.assertEqual(notifications[0]["title"], "New message from Charlie Davis")
        self.assertEqual(notifications[0]["body"], "While you were away")
        self.assertRegex(notifications[0]["tag"], r"^herald-\d+$", "tagged as the message's Web Push would be")
        self.assertFalse(visible_banners(alice), "a hidden page showed a banner as well")
        alice.execute_script("window.__lastNotification.dispatchEvent(new Event('click'))")
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").get_attribute("textContent") == "Charlie Davis", 3,
             "the notification to open the chat")
        alice.set_window_rect(width=1280, height=900)
        wait(alice, lambda d: not d.execute_script("return document.hidden"), 5, "the page to be shown again")
        wait(alice, lambda d: conversation_item(d, "Charlie Davis").find_elements(By.CSS_SELECTOR, ".unread") == [], 3,
             "the chat read once the page is seen")


class MoreChatTests(PageTestCase):
    def test_older_messages_load_on_scroll_up(self):
        bob = self.tokens["bob"]
        status, group = self.server.request("POST", "/v1/conversations", bob,
                                            {"kind": "group", "title": "Long history", "members": ["alice"]})
        self.assertEqual(status, 201)
        for index in range(120):
            self.server.post(bob, group["id"], f"History {index:03d}")
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Long history")

        def texts(driver):
            return driver.execute_script("return [...document.querySelectorAll('#messages li .text')].map(e => e.textContent)")
        self.assertEqual(len(texts(alice)), 50)
        self.assertEqual(texts(alice)[-1], "History 119")
        for expected in (100, 120):
            alice.execute_script("document.getElementById('messages').scrollTop = 0")
            wait(alice, lambda d: len(texts(d)) == expected, 5, f"{expected} messages after scrolling up")
        self.assertEqual(texts(alice), [f"History {index:03d}" for index in range(120)])
        time.sleep(0.3)
        alice.execute_script("document.getElementById('messages').scrollTop = 0")
        time.sleep(0.5)
        self.assertEqual(len(texts(alice)), 120, "the start of the chat loads nothing more")

    def test_a_refused_send_is_a_danger_banner_and_stays_unsent(self):
        alice = self.alice_in_bobs_chat()
        # Text with U+0000 is refused by the server (invalid_request); a keyboard cannot type it, a script can.
        alice.execute_script("document.getElementById('composer-text').value = 'bad\u0000text'")
        alice.find_element(By.CSS_SELECTOR, "#composer button").click()
        banner = self.wait_for_banner(alice, "Message not sent", 3)
        self.assertEqual(banner.get_attribute("data-tone"), "danger")
        wait(alice, lambda d: {"text": "badtext", "mine": True, "state": "failed"} in messages(d), 2, "the failed message")
        wait(alice, lambda d: "Not sent" in d.find_element(By.CSS_SELECTOR, "#messages li.failed .meta").text, 2, "Not sent")

    def test_coalescing_is_a_setting(self):
        alice = self.alice_in_bobs_chat()
        open_settings(alice)
        self.assertFalse(alice.find_element(By.ID, "coalesce").is_selected(), "coalescing is off by default")
        alice.find_element(By.ID, "coalesce").click()
        chat = self.chat_with("charlie", "alice")
        self.server.post(self.tokens["charlie"], chat, "One")
        self.wait_for_banner(alice, "One", 1)
        self.server.post(self.tokens["charlie"], chat, "Two, merged")
        banner = self.wait_for_banner(alice, "Two, merged", 1)
        # textContent: the banner may still be sliding in, partly above the page, where WebDriver sees no text.
        self.assertEqual(banner.find_element(By.CSS_SELECTOR, ".banner-count").get_attribute("textContent"), "2")
        self.assertEqual(len(visible_banners(alice)), 1)
        self.assertEqual(alice.execute_script("return localStorage.getItem('herald.coalesce')"), "1", "kept for next time")

    def test_notification_permission_is_asked_from_a_click_only(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        time.sleep(0.5)
        self.assertEqual(alice.execute_script("return window.__permissionRequests"), 0, "asked on load")
        button = alice.find_element(By.ID, "notify-button")
        self.assertTrue(button.is_displayed())
        button.click()
        wait(alice, lambda d: d.execute_script("return window.__permissionRequests") == 1, 3, "the permission request")
        self.assertEqual(severe_console_lines(alice), [])


class RestartTests(PageTestCase):
    def setUp(self):
        # A test that failed while the server was down must not take the next one with it.
        self.addCleanup(self.server.ensure_running)
    def test_the_page_keeps_working_across_a_server_restart(self):
        alice = self.alice_in_bobs_chat()
        chat = self.chat_with("bob", "alice")
        self.server.stop()
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "reconnecting", 5,
             "the page to notice")
        self.wait_for_banner(alice, "Connection lost", 2)
        self.server.start()
        missed = f"missed-{uuid.uuid4()}"
        self.server.post(self.tokens["bob"], chat, "Sent while you were reconnecting", missed)
        charlie = self.chat_with("charlie", "alice")
        self.server.post(self.tokens["charlie"], charlie, "Caught up after the restart")
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 15, "the page to reconnect")
        self.wait_for_banner(alice, "Back online", 6)
        wait(alice, lambda d: "Sent while you were reconnecting" in d.find_element(By.ID, "messages").text, 5, "the catch-up")
        self.wait_for_banner(alice, "Caught up after the restart", 12)
        composer = alice.find_element(By.ID, "composer-text")
        composer.send_keys("Still here", Keys.ENTER)
        wait(alice, lambda d: {"text": "Still here", "mine": True, "state": "stored"} in messages(d), 3, "the ack")
        time.sleep(0.5)
        texts = [m["text"] for m in messages(alice)]
        self.assertEqual(texts.count("Sent while you were reconnecting"), 1, texts)
        self.assertEqual(texts.count("Still here"), 1, texts)
        shown = [b["id"] for b in alice.execute_script("return window.__bannersShown")]
        self.assertEqual(len(shown), len(set(shown)), f"a banner showed twice: {shown}")

    def test_an_expired_token_is_renewed_and_the_page_goes_on_where_it_was(self):
        import jwt
        with open(self.server.database + ".secret") as kept:
            secret = kept.read().strip()
        # Taken for two more seconds (60 s of leeway after exp).
        expiring = jwt.encode({"sub": "alice", "name": "Alice Johnson", "exp": int(time.time()) - 58}, secret, algorithm="HS256")
        alice = self.browser()
        alice.get(self.server.url + "#token=" + expiring)
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
        time.sleep(3)
        chat = self.chat_with("bob", "alice")
        self.server.stop()
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "reconnecting", 5,
             "the page to notice")
        self.server.start()
        missed = f"missed-{uuid.uuid4()}"
        self.server.post(self.tokens["bob"], chat, "Sent while your token expired", missed)
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 15,
             "the page back, with a renewed token")
        self.assertFalse(alice.find_element(By.ID, "app").get_attribute("hidden"), "still signed in")
        self.assertNotEqual(alice.execute_script("return sessionStorage.getItem('herald.token')"), expiring)
        open_chat(alice, "Bob")
        wait(alice, lambda d: "Sent while your token expired" in [m["text"] for m in messages(d)], 5, "the catch-up")

    def test_sends_made_offline_go_out_once_when_back(self):
        alice = self.alice_in_bobs_chat()
        self.server.stop()
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "reconnecting", 5,
             "the page to notice")
        alice.find_element(By.ID, "composer-text").send_keys("Written offline", Keys.ENTER)
        self.assertEqual([m["text"] for m in messages(alice) if m["state"] == "pending"], ["Written offline"])
        self.server.start()
        wait(alice, lambda d: not d.find_elements(By.CSS_SELECTOR, "#messages li.pending"), 15, "the offline send to be stored")
        conversations = self.server.request("GET", "/v1/conversations", self.tokens["bob"])[1]["conversations"]
        with_alice = [c for c in conversations if c["kind"] == "direct" and "alice" in c["members"]][0]
        stored = self.server.request("GET", f"/v1/conversations/{with_alice['id']}/messages?limit=200", self.tokens["bob"])[1]
        self.assertEqual([m["text"] for m in stored["messages"]].count("Written offline"), 1)


def shot(driver, name):
    """Writes the screenshot docs/images/<name>.png when HERALD_UPDATE_SCREENSHOTS=1."""
    if SCREENSHOTS:
        driver.save_screenshot(os.path.join(ROOT, "docs", "images", f"{name}.png"))


class FirstHourTests(PageTestCase):
    """What a newcomer met in their first hour: people picked by name, dates, pictures, quiet muted chats, a token
    link in an open tab, and every screen at a desktop's and a phone's size."""

    def test_people_are_picked_by_name_never_typed_as_ids(self):
        for width, height, suffix in ((1280, 800, "desktop"), (390, 844, "phone")):
            alice = self.browser(width=width, height=height)
            sign_in_as(alice, self.server, "Alice Johnson")
            alice.find_element(By.ID, "new-chat-button").click()
            start = alice.find_element(By.ID, "new-chat-start")
            self.assertFalse(start.is_enabled(), "nothing to start with no one picked")
            box = alice.find_element(By.ID, "people-search")
            for typed in ("dave", "Charlie Davis Jr", "erin"):
                box.clear()
                box.send_keys(typed)
                wait(alice, lambda d: "No one found" in d.find_element(By.ID, "people-note").text, 5, f"nobody for {typed!r}")
                box.send_keys(Keys.ENTER)
                self.assertFalse(start.is_enabled(), f"{typed!r} is not a person to start a chat with")
            alice.find_element(By.CSS_SELECTOR, "input[name=kind][value=group]").click()
            pick(alice, "bob", "Bob")
            pick(alice, "davis", "Charlie Davis")
            self.assertTrue(start.is_enabled())
            shot(alice, f"web-new-chat-{suffix}")
            chip = [c for c in alice.find_elements(By.CSS_SELECTOR, "#picked .chip") if c.get_attribute("data-user") == "bob"][0]
            chip.find_element(By.CSS_SELECTOR, ".chip-remove").click()
            wait(alice, lambda d: [c.get_attribute("data-user") for c in d.find_elements(By.CSS_SELECTOR, "#picked .chip")]
                 == ["charlie"], 2, "Bob taken off again")
            alice.find_element(By.CSS_SELECTOR, "input[name=kind][value=direct]").click()
            start.click()
            wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == "Charlie Davis", 5, "the chat with Charlie")
            self.assertTrue(alice.find_element(By.ID, "new-chat").get_attribute("hidden") is not None)
        # The server refuses what the page would never send.
        status, body = self.server.request("POST", "/v1/conversations", self.tokens["alice"], {"kind": "direct", "members": ["dave"]})
        self.assertEqual((status, body["error"]["code"]), (400, "unknown_user"))

    def test_dates_pictures_and_quiet_muted_chats(self):
        alice_token, bob_token = self.tokens["alice"], self.tokens["bob"]
        status, group = self.server.request("POST", "/v1/conversations", bob_token,
                                            {"kind": "group", "title": "Holiday photos", "members": ["alice"]})
        self.assertEqual(status, 201, group)
        old = self.server.post(bob_token, group["id"], "Remember this trip?")
        yesterday = self.server.post(bob_token, group["id"], "Here are the photos from yesterday")
        self.server.backdate([old["id"]], 9)
        self.server.backdate([yesterday["id"]], 1)
        picture = self.server.url + "favicon.svg"
        self.server.post(bob_token, group["id"], None, image_url=picture)
        self.server.post(bob_token, group["id"], "The best one")
        for width, height, suffix in ((1280, 800, "desktop"), (390, 844, "phone")):
            alice = self.browser(width=width, height=height)
            sign_in_as(alice, self.server, "Alice Johnson")
            open_chat(alice, "Holiday photos")
            days = [d.text for d in alice.find_elements(By.CSS_SELECTOR, "#messages li.day")]
            self.assertEqual(len(days), 3, days)
            self.assertNotIn(days[0], ("Today", "Yesterday"), "nine days ago is a date")
            self.assertRegex(days[0], r"\d", "a date, with its day of the month")
            self.assertEqual(days[1:], ["Yesterday", "Today"])
            image = wait(alice, lambda d: d.find_elements(By.CSS_SELECTOR, "#messages .picture img"), 5, "the picture")[0]
            wait(alice, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image), 5,
                 "the picture loaded")
            self.assertEqual(image.get_attribute("src"), picture)
            if suffix == "desktop":  # on a phone the list is hidden while a chat is open
                stamp = list_item(alice, "Holiday photos")["time"]
                self.assertRegex(stamp, r"\d{1,2}:\d{2}", "today's last message shows its time in the list")
            shot(alice, f"web-chat-{suffix}")

        # A muted chat's unread count is grey, not the accent blue, and left out of the tab's total.
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Holiday photos")
        alice.find_element(By.ID, "mute").click()
        wait(alice, lambda d: d.find_element(By.ID, "mute").text == "Unmute", 3, "muted")
        open_chat(alice, "Bob")
        self.server.post(bob_token, group["id"], "Quiet, please")
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Loud and clear")
        wait(alice, lambda d: unread(d, "Holiday photos") == 1 and unread(d, "Charlie Davis") >= 1, 5, "both counted")
        muted, loud = list_item(alice, "Holiday photos"), list_item(alice, "Charlie Davis")
        self.assertIn("quiet", muted["unread"]["classes"].split())
        self.assertNotEqual(muted["unread"]["background"], loud["unread"]["background"])
        self.assertTrue(muted["muted"])
        loud_total = alice.execute_script(
            "return [...document.querySelectorAll('#conversations .unread:not(.quiet)')].reduce((n, b) => n + Number(b.textContent), 0)")
        self.assertEqual(alice.title, f"({loud_total}) Herald", "the muted chat is not in the total")
        shot(alice, "web-list-desktop")
        alice.find_element(By.ID, "mute").click()  # Bob's chat: a second mute, undone at once
        wait(alice, lambda d: d.find_element(By.ID, "mute").text == "Unmute", 3, "muted")
        alice.find_element(By.ID, "mute").click()
        open_chat(alice, "Holiday photos")
        alice.find_element(By.ID, "mute").click()
        wait(alice, lambda d: d.find_element(By.ID, "mute").text == "Mute", 3, "unmuted again")

    def test_a_token_link_opened_in_a_signed_in_tab_asks_before_it_signs_in_someone_else(self):
        def alert_text(tab):
            try:
                return tab.switch_to.alert.text
            except NoAlertPresentException:
                return None

        tab = self.browser()
        sign_in_as(tab, self.server, "Alice Johnson")
        # Someone else's link (login CSRF): asked first; declined, nothing changes but the address.
        tab.execute_script("location.hash = '#token=' + arguments[0]", self.tokens["bob"])
        wait(tab, lambda d: alert_text(d) is not None, 5, "asked before switching")
        self.assertIn("Bob", alert_text(tab))
        self.assertIn("Alice Johnson", alert_text(tab))
        tab.switch_to.alert.dismiss()
        wait(tab, lambda d: d.current_url == self.server.url, 5, "the token is gone from the address")
        self.assertEqual(tab.find_element(By.ID, "me-name").text, "Alice Johnson")
        # Accepted: Bob is signed in.
        tab.execute_script("location.hash = '#token=' + arguments[0]", self.tokens["bob"])
        wait(tab, lambda d: alert_text(d) is not None, 5, "asked again")
        tab.switch_to.alert.accept()
        wait(tab, lambda d: d.find_element(By.ID, "me-name").text == "Bob", 10, "Bob signed in by the link")
        wait(tab, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
        self.assertEqual(tab.current_url, self.server.url, "the token is gone from the address")
        # The same person's token: nothing to ask.
        tab.execute_script("location.hash = '#token=' + arguments[0]", self.tokens["bob"])
        wait(tab, lambda d: d.current_url == self.server.url, 5, "the same token again: the address cleaned, nothing else")
        self.assertIsNone(alert_text(tab))
        self.assertEqual(tab.find_element(By.ID, "me-name").text, "Bob")

    def test_every_screen_fits_at_a_desktop_and_a_phone(self):
        for width, height, suffix in ((1280, 800, "desktop"), (390, 844, "phone")):
            page = self.browser(width=width, height=height)
            page.get(self.server.url)
            wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#demo-people button"), 10, "the sign-in page")
            self.assertLessEqual(page.execute_script("return document.scrollingElement.scrollHeight"),
                                 page.execute_script("return innerHeight"), "the sign-in page does not scroll")
            self.assertLessEqual(page.execute_script("return document.scrollingElement.scrollWidth"), width)
            shot(page, f"web-sign-in-{suffix}")
            sign_in_as(page, self.server, "Alice Johnson")
            open_settings(page)
            for setting in page.find_elements(By.CSS_SELECTOR, ".setting"):
                if setting.is_displayed():
                    self.assertLess(setting.rect["height"], 48, f"{setting.text!r} fits on a line or two at {width} px")
            self.assertLessEqual(page.execute_script("return document.scrollingElement.scrollWidth"), width)
            if suffix == "phone":
                shot(page, "web-list-phone")


class GroupTests(PageTestCase):
    def panel_members(self, driver):
        """The group panel's members: {id: (name, owner, actions)}, read in one step."""
        return driver.execute_script("""const found = {};
            for (const item of document.querySelectorAll('#members li')) {
              found[item.dataset.user] = [item.querySelector('.member-name').textContent, !!item.querySelector('.owner-tag'),
                                          [...item.querySelectorAll('button')].map((b) => b.textContent)];
            }
            return found;""")

    def event_lines(self, driver):
        return [item.text for item in driver.find_elements(By.CSS_SELECTOR, "#messages li.event")]

    def member_action(self, driver, user, label):
        item = wait(driver, lambda d: [i for i in d.find_elements(By.CSS_SELECTOR, "#members li") if i.get_attribute("data-user") == user],
                    5, f"{user} in the panel")[0]
        [b for b in item.find_elements(By.TAG_NAME, "button") if b.text == label][0].click()

    def test_the_group_panel_adds_renames_makes_owners_removes_and_leaves(self):
        title = f"Panel {uuid.uuid4().hex[:6]}"
        status, group = self.server.request("POST", "/v1/conversations", self.tokens["alice"],
                                            {"kind": "group", "title": title, "members": ["bob"]})
        self.assertEqual(status, 201, group)
        alice, bob, charlie = self.browser(), self.browser(), self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        sign_in_as(bob, self.server, "Bob")
        sign_in_as(charlie, self.server, "Charlie Davis")
        open_chat(alice, title)
        open_chat(bob, title)
        alice.find_element(By.ID, "members-button").click()
        wait(alice, lambda d: self.panel_members(d) == {"alice": ["You", True, []], "bob": ["Bob", False, ["Make owner", "Remove"]]},
             5, "the members, Alice the owner")
        self.assertFalse(bob.find_element(By.ID, "members-button").get_attribute("hidden"), "Bob sees the panel too")
        bob.find_element(By.ID, "members-button").click()
        wait(bob, lambda d: self.panel_members(d)["bob"] == ["You", False, []], 5, "Bob's panel, without owner actions")
        self.assertFalse(bob.find_element(By.ID, "rename").is_displayed(), "only owners rename")

        # Alice adds Charlie, without the history; Charlie is told, Bob sees a quiet line.
        alice.find_element(By.ID, "add-members").click()
        alice.find_element(By.ID, "new-history").click()
        pick(alice, "davis", "Charlie Davis")
        alice.find_element(By.ID, "new-chat-start").click()
        banner = self.wait_for_banner(charlie, "added you to", 5)
        self.assertEqual(banner.find_element(By.CSS_SELECTOR, ".banner-title").text, "Alice Johnson")
        self.assertEqual(banner.find_element(By.CSS_SELECTOR, ".banner-body").text, f"added you to {title}")
        wait(charlie, lambda d: conversation_item(d, title), 5, "the group in Charlie's list at once")
        wait(bob, lambda d: "Alice Johnson added Charlie Davis" in self.event_lines(d), 5, "a quiet line for Bob")
        self.assert_no_banner_for(bob, 1, "added")
        open_chat(charlie, title)
        self.assertEqual([m["text"] for m in messages(charlie)], [], "no history for Charlie")
        self.assertEqual(self.event_lines(charlie), [f"Alice Johnson added you to {title}"])

        # Renamed, and Bob made an owner.
        renamed = f"{title} renamed"
        box = alice.find_element(By.ID, "rename-title")
        box.clear()
        box.send_keys(renamed, Keys.ENTER)
        wait(bob, lambda d: d.find_element(By.ID, "chat-title").text == renamed, 5, "the new name on Bob's page")
        wait(bob, lambda d: f"Alice Johnson renamed the group to \u201c{renamed}\u201d" in self.event_lines(d), 5, "the rename's line")
        self.member_action(alice, "bob", "Make owner")
        wait(alice, lambda d: self.panel_members(d).get("bob", [None, False])[1], 5, "Bob an owner")
        wait(bob, lambda d: d.find_element(By.ID, "rename").is_displayed(), 5, "Bob, an owner now, may rename")

        # Alice removes Charlie: his chat says so and takes no more input.
        self.member_action(alice, "charlie", "Remove")
        wait(charlie, lambda d: d.find_element(By.ID, "removed").is_displayed(), 5, "Charlie told he is out")
        self.assertFalse(charlie.find_element(By.ID, "composer").is_displayed())
        self.assertEqual(self.event_lines(charlie)[-1], "Alice Johnson removed you")
        # Bob leaves.
        bob.find_element(By.ID, "leave").click()
        wait(bob, lambda d: d.find_element(By.ID, "removed").is_displayed(), 5, "Bob's chat says he left")
        wait(alice, lambda d: set(self.panel_members(d)) == {"alice"}, 5, "only Alice left in the panel")
        wait(alice, lambda d: "Bob left" in self.event_lines(d), 5, "the leaving line")
        if SCREENSHOTS:
            shot(alice, "web-group-panel-desktop")


class BackendTests(PageTestCase):
    """What the app's backend posts through the service API, as the page shows it."""

    KEY = "browser-service-key-0123456789-abcdefghijklmnop"

    @classmethod
    def setUpClass(cls):
        cls.server = Server(environment={"HERALD_SERVICE_KEY": cls.KEY})
        cls.tokens = {user: cls.server.token(user) for user in ("alice", "bob", "charlie")}

    def service(self, method, path, body=None):
        status, answer = self.server.request(method, "/v1/service" + path, self.KEY, body)
        self.assertIn(status, (200, 201, 204), answer)
        return answer

    def test_system_messages_banner_as_admin_and_silent_ones_only_show_in_the_chat(self):
        alice = self.alice_in_bobs_chat()
        self.service("POST", "/conversations", {"id": "order-42", "kind": "group", "title": "Order 42",
                                                "members": ["alice", "bob"], "owners": []})
        self.service("POST", "/conversations/order-42/messages", {"text": "Your order has shipped"})
        banner = self.wait_for_banner(alice, "Your order has shipped", 5)
        self.assertIn("Admin", banner_text(banner))
        self.service("POST", "/conversations/order-42/messages", {"text": "Packed at the warehouse", "silent": True})
        self.service("POST", "/conversations/order-42/members", {"members": ["charlie"]})
        self.assert_no_banner_for(alice, 1.5, "Packed at the warehouse")
        open_chat(alice, "Order 42")
        wait(alice, lambda d: "Packed at the warehouse" in [m["text"] for m in messages(d)], 5, "the silent message in the chat")
        senders = alice.execute_script("""return [...document.querySelectorAll('#messages li.message.system')].map(
            (m) => m.querySelector('.sender')?.textContent)""")
        self.assertEqual(senders, ["Admin", "Admin"])
        # A member who calls themself Admin cannot pass for the backend: named apart, drawn apart.
        mallory = self.server.mint("mallory", "Admin")
        self.assertEqual(self.server.request("GET", "/v1/conversations", mallory)[0], 200)
        self.service("POST", "/conversations/order-42/members", {"members": ["mallory"]})
        self.server.post(mallory, "order-42", "Pay the customs fee here")
        wait(alice, lambda d: "Pay the customs fee here" in [m["text"] for m in messages(d)], 5, "Mallory's message")
        looks = alice.execute_script("""return [...document.querySelectorAll('#messages li.message')].filter(
            (m) => !m.classList.contains('mine')).map((m) => ({system: m.classList.contains('system'),
            sender: m.querySelector('.sender')?.textContent, border: getComputedStyle(m).borderTopStyle,
            align: getComputedStyle(m).alignSelf}))""")
        impostor = [look for look in looks if not look["system"] and look["sender"] and "Admin" in look["sender"]]
        self.assertEqual([look["sender"] for look in impostor], ["Admin (member)"])
        system = [look for look in looks if look["system"]][0]
        self.assertNotEqual((system["border"], system["align"]), (impostor[0]["border"], impostor[0]["align"]))
        wait(alice, lambda d: [i.text for i in d.find_elements(By.CSS_SELECTOR, "#messages li.event")
                               if "Admin added Charlie Davis" in i.text], 5, "the backend's change as a line")


class WhoHearsWhatTests(PageTestCase):
    """Levels, snooze, quiet hours and mentions on the page: the chat's menu, the settings panel, @ completion."""

    def setUp(self):
        # Each test starts from a user who chose nothing.
        alice = self.tokens["alice"]
        status, _ = self.server.request("PUT", "/v1/me/notifications", alice, {
            "defaultLevel": "all", "snoozeUntil": None, "timeZone": None, "quietHours": [],
            "mentionsDuringQuietHours": False, "badgeCountsMuted": False})
        self.assertEqual(status, 200)
        for conversation in (self.team(), self.chat_with("alice", "bob")):
            self.server.request("PUT", f"/v1/conversations/{conversation}/notifications", alice, {"level": None})

    def team(self):
        conversations = self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
        return [c for c in conversations if c.get("title") == "Team Chat"][0]["id"]

    def post(self, sender, conversation, text, mentions=None, everyone=False):
        body = {"text": text, **({"mentions": mentions} if mentions else {}), **({"mentionsAll": True} if everyone else {})}
        status, answer = self.server.request("POST", f"/v1/conversations/{conversation}/messages", self.tokens[sender], body)
        self.assertEqual(status, 201, answer)
        return answer

    def choose(self, driver, level, span="always"):
        driver.find_element(By.ID, "level-button").click()
        wait(driver, lambda d: d.find_element(By.ID, "level-menu").is_displayed(), 2, "the menu to open")
        Select = __import__("selenium.webdriver.support.select", fromlist=["Select"]).Select
        Select(driver.find_element(By.ID, "level-for")).select_by_value(span)
        driver.find_element(By.CSS_SELECTOR, f"#level-menu [data-level={level}]").click()

    def test_the_chat_menu_sets_a_level_for_a_while_that_banners_follow_and_other_devices_see(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        team = self.team()
        open_chat(alice, "Team Chat")
        self.choose(alice, "mentions", "1h")
        wait(alice, lambda d: d.find_element(By.ID, "level-button").text.startswith("Notify: mentions until"), 3,
             "the button to say mentions, until when")
        level = [c for c in self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
                 if c["id"] == team][0]
        self.assertEqual(level["level"], "mentions")
        ends = time.mktime(time.strptime(level["levelUntil"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        self.assertAlmostEqual(ends - time.time(), 3600, delta=120)
        wait(alice, lambda d: list_item(d, "Team Chat")["level"], 3, "the list saying mentions only")

        # Away from the group: what does not name her gives no banner; what does, or @all, does.
        open_chat(alice, "Bob")
        self.post("charlie", team, "Lunch plans, nobody in particular")
        self.post("charlie", team, "@Alice Johnson your turn", mentions=["alice"])
        self.wait_for_banner(alice, "your turn", 5)
        self.assert_no_banner_for(alice, 0.5, "nobody in particular")
        open_chat(alice, "Team Chat")
        wait(alice, lambda d: d.find_elements(By.CSS_SELECTOR, "#messages li.message.mention"), 5, "the mention highlighted")
        highlighted = alice.find_elements(By.CSS_SELECTOR, "#messages li.message.mention .text")
        self.assertEqual([item.text for item in highlighted], ["@Alice Johnson your turn"])

        # Changed on another device: this page follows at once (the stream's `level` frame).
        status, _ = self.server.request("PUT", f"/v1/conversations/{team}/notifications", self.tokens["alice"],
                                        {"level": "nothing"})
        self.assertEqual(status, 204)
        wait(alice, lambda d: d.find_element(By.ID, "level-button").text == "Notify: nothing", 3, "the level from elsewhere")
        wait(alice, lambda d: conversation_item(d, "Team Chat").find_elements(By.CSS_SELECTOR, ".muted-mark"), 3,
             "the muted mark")
        open_chat(alice, "Bob")
        self.post("charlie", team, "@Alice Johnson muted wins", mentions=["alice"])
        self.assert_no_banner_for(alice, 1.0, "muted wins")
        # Back to the settings' level: every message again.
        open_chat(alice, "Team Chat")
        self.choose(alice, "default")
        wait(alice, lambda d: d.find_element(By.ID, "level-button").text == "Notify: all", 3, "the default level")
        wait(alice, lambda d: not list_item(d, "Team Chat")["muted"] and not list_item(d, "Team Chat")["level"], 3,
             "no mark in the list")

    def test_the_settings_panel_sets_the_default_level_snooze_quiet_hours_and_what_counts(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_settings(alice)
        zone = alice.execute_script("return Intl.DateTimeFormat().resolvedOptions().timeZone")
        Select = __import__("selenium.webdriver.support.select", fromlist=["Select"]).Select

        def settings():
            return self.server.request("GET", "/v1/me/notifications", self.tokens["alice"])[1]

        # Snooze for an hour: nothing notifies, direct chats included, and the panel says until when.
        Select(alice.find_element(By.ID, "snooze")).select_by_value("1h")
        wait(alice, lambda d: d.find_element(By.ID, "snooze-status").text.startswith("Snoozed until"), 3, "snoozed")
        self.assertIsNotNone(settings()["snoozeUntil"])
        self.post("bob", self.chat_with("bob", "alice"), "Snoozed, so no banner")
        wait(alice, lambda d: "Snoozed, so no banner" in conversation_item(d, "Bob").text, 5, "the message in the list")
        self.assert_no_banner_for(alice, 0.5, "Snoozed, so no banner")
        Select(alice.find_element(By.ID, "snooze")).select_by_value("off")
        wait(alice, lambda d: d.find_element(By.ID, "snooze-status").text == "", 3, "snooze off")
        self.assertIsNone(settings()["snoozeUntil"])

        # The default level: mentions only, for every chat without its own.
        Select(alice.find_element(By.ID, "default-level")).select_by_value("mentions")
        wait(alice, lambda _: settings()["defaultLevel"] == "mentions", 3, "the default level kept")
        self.post("bob", self.team(), "Only mentions now")
        wait(alice, lambda d: "Only mentions now" in conversation_item(d, "Team Chat").text, 5, "the message in the list")
        self.assert_no_banner_for(alice, 0.5, "Only mentions now")
        self.post("bob", self.chat_with("bob", "alice"), "A direct chat is a mention")
        self.wait_for_banner(alice, "A direct chat is a mention", 5)
        Select(alice.find_element(By.ID, "default-level")).select_by_value("nothing")
        wait(alice, lambda _: settings()["defaultLevel"] == "nothing", 3, "nothing by default")
        # At nothing, unread chats leave the tab's total, unless the setting counts them.
        wait(alice, lambda d: d.title == "Herald", 3, "no total while every chat is at nothing")
        alice.find_element(By.ID, "badge-muted").click()
        wait(alice, lambda d: d.title.startswith("("), 3, "the muted chats counted again")
        self.assertTrue(settings()["badgeCountsMuted"])

        # Quiet hours: the browser's time zone chosen for her; saved as a window of every day.
        alice.find_element(By.ID, "quiet-on").click()
        wait(alice, lambda d: d.find_element(By.ID, "quiet-fields").is_displayed(), 2, "the quiet hours' fields")
        self.assertEqual(Select(alice.find_element(By.ID, "time-zone")).first_selected_option.get_attribute("value"), zone)
        wait(alice, lambda _: settings()["quietHours"], 3, "quiet hours kept")
        kept = settings()
        self.assertEqual(kept["timeZone"], zone)
        self.assertEqual(kept["quietHours"], [{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                                               "start": "22:00", "end": "07:00"}])
        alice.find_element(By.ID, "quiet-mentions").click()
        wait(alice, lambda _: settings()["mentionsDuringQuietHours"], 3, "mentions ring through")
        alice.find_element(By.ID, "quiet-on").click()
        wait(alice, lambda _: settings()["quietHours"] == [], 3, "quiet hours off")

        # Another device's change reaches the panel at once.
        self.server.request("PUT", "/v1/me/notifications", self.tokens["alice"], {"defaultLevel": "all"})
        wait(alice, lambda d: Select(d.find_element(By.ID, "default-level")).first_selected_option.get_attribute("value")
             == "all", 3, "the default level from elsewhere")

    def test_at_completes_members_names_and_sends_their_mentions(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Team Chat")
        box = alice.find_element(By.ID, "composer-text")
        box.send_keys("hey @ch")
        wait(alice, lambda d: d.find_element(By.ID, "mention-list").is_displayed(), 2, "the names")
        self.assertEqual([o.text for o in alice.find_elements(By.CSS_SELECTOR, "#mention-list li")], ["@Charlie Davis"])
        box.send_keys(Keys.TAB)
        self.assertEqual(box.get_attribute("value"), "hey @Charlie Davis ")
        box.send_keys("and @")
        wait(alice, lambda d: d.find_element(By.ID, "mention-list").is_displayed(), 2, "every name")
        self.assertEqual([o.text for o in alice.find_elements(By.CSS_SELECTOR, "#mention-list li")],
                         ["@Bob", "@Charlie Davis", "@all (everyone)"])
        box.send_keys(Keys.ARROW_UP, Keys.ENTER)
        self.assertEqual(box.get_attribute("value"), "hey @Charlie Davis and @all ")
        box.send_keys("lunch?", Keys.ENTER)
        wait(alice, lambda d: [m for m in messages(d) if m["text"].endswith("lunch?") and m["state"] == "stored"], 5,
             "the message stored")
        history = self.server.request("GET", f"/v1/conversations/{self.team()}/messages", self.tokens["bob"])[1]["messages"]
        sent = [m for m in history if (m.get("text") or "").endswith("lunch?")][-1]
        self.assertEqual(sent.get("mentions"), ["charlie"])
        self.assertTrue(sent.get("mentionsAll"))
        # An address is no mention.
        box.send_keys("mail bob@example.com", Keys.ENTER)
        wait(alice, lambda d: [m for m in messages(d) if m["text"] == "mail bob@example.com" and m["state"] == "stored"],
             5, "the second message stored")
        history = self.server.request("GET", f"/v1/conversations/{self.team()}/messages", self.tokens["bob"])[1]["messages"]
        self.assertNotIn("mentions", history[-1])


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
        self.wait_for_banner(alice, "Clean?", 1).click()
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
        folder = os.path.join(ROOT, "Sources", "HeraldServer", "Resources", "web")
        sizes = {name: os.path.getsize(os.path.join(folder, name)) for name in sorted(os.listdir(folder))}
        alice = self.alice_in_bobs_chat()
        loaded = alice.execute_script(
            "return performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))"
            ".filter(e => !new URL(e.name).pathname.startsWith('/v1/')).map(e => [e.name, e.decodedBodySize])")
        # The JavaScript package's modules the page imports (served at /herald/ from clients/js/src).
        package = os.path.join(ROOT, "clients", "js", "src")
        for name in sorted({urllib.parse.urlparse(url).path.split("/")[-1] for url, _ in loaded
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
              f"{sum(s for _, s in loaded):,} bytes of them in {len(loaded)} requests")
        print(f"post to banner on loopback ({len(samples)} posts, each an HTTP POST then the banner in the page): "
              f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {samples[-1]:.1f} ms")


if __name__ == "__main__":
    unittest.main()
