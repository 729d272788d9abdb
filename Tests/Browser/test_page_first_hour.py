"""The web client in headless Chromium against a live `herald serve --demo`: A new person's first hour: signing in, the list, pictures, days, muted chats, people picked by name. Run by scripts/browser-tests."""
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
            self.assertIsNone(alice.find_element(By.ID, "new-chat-dialog").get_attribute("open"), "the picker closed")
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

        # A muted chat's unread count is grey, not the accent blue, and left out of the tab's total.
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Holiday photos")
        choose_level(alice, "nothing")
        wait(alice, lambda d: level_label(d) == "Muted", 3, "muted")
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
        choose_level(alice, "nothing")  # Bob's chat: a second mute, undone at once
        wait(alice, lambda d: level_label(d) == "Muted", 3, "muted")
        choose_level(alice, "default")
        wait(alice, lambda d: level_label(d) == "Default (all)", 3, "unmuted")
        open_chat(alice, "Holiday photos")
        choose_level(alice, "default")
        wait(alice, lambda d: level_label(d) == "Default (all)", 3, "unmuted again")

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
            for setting in page.find_elements(By.CSS_SELECTOR, "#settings .setting-row"):
                if setting.is_displayed():
                    self.assertLess(setting.rect["height"], 48, f"{setting.text!r} fits on a line or two at {width} px")
            self.assertLessEqual(page.execute_script("return document.scrollingElement.scrollWidth"), width)
            close_dialog(page, "settings")


if __name__ == "__main__":
    unittest.main()
