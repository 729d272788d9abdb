"""The web client in headless Chromium against a live `herald serve --demo`: Banners in the page: when they show, gestures, motion, order. Run by scripts/browser-tests."""
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


class BannerTests(PageTestCase):
    def test_a_message_from_someone_else_shows_a_banner_that_opens_their_chat(self):
        alice = self.alice_in_bobs_chat()
        posted = time.monotonic()
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Hey, are you there?")
        # The page's first message waits half a second (localHold): with none before it, the engine cannot tell it
        # came live rather than after a freeze that had it pushed (docs/behaviour.md §1, rule 8). Later ones do not.
        banner = self.wait_for_banner(alice, "Hey, are you there?", 3)
        self.assertLess(time.monotonic() - posted, 3)
        self.assertIn("Charlie Davis", banner_text(banner))
        self.assertEqual(banner.get_attribute("role"), "status")
        self.assertIn("Charlie Davis", banner.get_attribute("aria-label"))
        self.assertIn("Hey, are you there?", banner.get_attribute("aria-label"))
        time.sleep(0.35)  # the slide-in
        header = alice.find_element(By.ID, "chat-header").rect
        self.assertAlmostEqual(banner.rect["y"], header["y"] + header["height"] + 8, delta=1, msg="under the chat's header")
        self.assertAlmostEqual(banner.rect["height"], 64, delta=4)
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
        # The page notes, on its own clock, when each banner came and when and why it left: what the test reads is
        # the engine's timing, not how promptly this process was scheduled on a busy machine.
        alice.execute_script("""
            window.bannerLog = [];
            const layer = document.getElementById("banner-layer");
            new MutationObserver((records) => {
              for (const record of records) {
                for (const node of record.addedNodes) {
                  if (node.classList?.contains("banner")) {
                    window.bannerLog.push({node, text: node.textContent, shown: performance.now(), due: Number(node.dataset.due)});
                  }
                }
                if (record.type === "attributes" && record.target.dataset.reason) {
                  const entry = window.bannerLog.find((e) => e.node === record.target && e.reason === undefined);
                  if (entry) Object.assign(entry, {reason: record.target.dataset.reason, left: performance.now()});
                }
              }
            }).observe(layer, {childList: true, subtree: true, attributes: true, attributeFilter: ["data-reason"]});
        """)
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "Ignore me")
        self.wait_for_banner(alice, "Ignore me", 1.0, settled=False)
        script = """return window.bannerLog.filter((e) => e.text.includes("Ignore me") && e.reason)
                    .map((e) => ({reason: e.reason, shown: e.left - e.shown, due: e.left - e.due, late: e.shown - e.due}))"""
        ended = wait(alice, lambda d: d.execute_script(script), 15.0, "the banner to leave")
        self.assertEqual(ended[0]["reason"], "timeout")
        # Never before 4 s from when the engine showed it (a timer fires no earlier than it was set). A first banner
        # is held half a second before it shows (it may have been pushed meanwhile): when that timer fires late on a
        # busy machine, the banner is drawn late and leaves on the engine's time, so it is on screen for less. Later
        # only as late as the machine is busy.
        self.assertGreaterEqual(ended[0]["due"], 3950, ended)
        self.assertGreaterEqual(ended[0]["late"], -1, ended)
        self.assertLess(ended[0]["shown"], 10000, ended)

    def test_three_messages_from_three_people_show_one_after_another(self):
        alice = self.alice_in_bobs_chat()
        team = [c["id"] for c in self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
                if c["kind"] == "group"][0]
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "First, from Charlie")
        self.server.post(self.tokens["bob"], team, "Second, from Bob in the team")
        dana = self.server.mint("dana", "Dana Li")
        self.server.post(dana, self.server.direct(dana, "alice"), "Third, from Dana")
        first = self.wait_for_banner(alice, "First, from Charlie", 3)
        self.assertEqual(len(visible_banners(alice)), 1)
        first.send_keys(Keys.ESCAPE)
        second = self.wait_for_banner(alice, "Second, from Bob", 3)
        self.assertIn("in Team Chat", banner_text(second))
        self.assertEqual(len(visible_banners(alice)), 1)
        second.find_element(By.CSS_SELECTOR, ".banner-close").click()
        third = self.wait_for_banner(alice, "Third, from Dana", 3)
        self.assertIn("Dana Li", banner_text(third))
        third.send_keys(Keys.ENTER)
        wait(alice, lambda d: d.find_element(By.ID, "chat-title").text == "Dana Li", 2, "Dana's chat to open from the keyboard")

    def test_drags_and_a_held_press(self):
        alice = self.alice_in_bobs_chat()
        chat = self.chat_with("charlie", "alice")
        self.server.post(self.tokens["charlie"], chat, "Drag me a little")
        banner = self.wait_for_banner(alice, "Drag me a little", 3)
        time.sleep(0.35)
        ActionChains(alice).move_to_element(banner).click_and_hold().move_by_offset(0, -30).release().perform()
        time.sleep(0.4)
        self.assertIn(banner, visible_banners(alice), "a 30 px drag dismissed the banner")
        header = alice.find_element(By.ID, "chat-header").rect
        self.assertAlmostEqual(banner.rect["y"], header["y"] + header["height"] + 8, delta=1.5)  # sprang back

        # From near its bottom edge, so the pointer stays in the page (WebDriver moves nothing outside it).
        ActionChains(alice).move_to_element_with_offset(banner, 0, 26).click_and_hold().move_by_offset(0, -60).release().perform()
        wait(alice, lambda d: banner not in visible_banners(d), 1, "a 60 px drag to dismiss")
        self.assertEqual(banner.get_attribute("data-reason"), "swipe")
        self.assertEqual(alice.find_element(By.ID, "chat-title").text, "Bob", "a swipe must not open the chat")

        self.server.post(self.tokens["charlie"], chat, "Hold me")
        held = self.wait_for_banner(alice, "Hold me", 3)
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
        banner = self.wait_for_banner(alice, "Hey, are you there?", 3)
        self.assertAlmostEqual(banner.rect["x"], 8, delta=1)
        self.assertAlmostEqual(banner.rect["width"], alice.execute_script("return innerWidth") - 16, delta=1)
        time.sleep(0.35)
        banner.send_keys(Keys.ESCAPE)
        wait(alice, lambda d: not visible_banners(d), 1, "the banner to go")
        alice.find_element(By.ID, "back").click()
        wait(alice, lambda d: d.find_element(By.CSS_SELECTOR, ".sidebar").is_displayed(), 2, "the list again")


if __name__ == "__main__":
    unittest.main()
