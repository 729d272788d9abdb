"""The web client in headless Chromium against a live `herald serve --demo`: Who hears what: levels, snooze, quiet hours, mentions. Run by scripts/browser-tests."""
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
                     messages, open_chat, open_settings, reset_notifications,
                     severe_console_lines, sign_in_as, unread, visible_banners, wait)
from page_case import SCREENSHOTS, PageTestCase, banner_text, pick, shot


class WhoHearsWhatTests(PageTestCase):
    """Levels, snooze, quiet hours and mentions on the page: the chat's menu, the settings panel, @ completion."""

    def setUp(self):
        # Each test starts from a user who chose nothing.
        alice = self.tokens["alice"]
        reset_notifications(self.server, alice)
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
        choose_level(driver, level, span)

    def test_the_chat_menu_sets_a_level_for_a_while_that_banners_follow_and_other_devices_see(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        team = self.team()
        open_chat(alice, "Team Chat")
        self.choose(alice, "mentions", "1h")
        wait(alice, lambda d: level_label(d).startswith("Mentions only until"), 3,
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
        wait(alice, lambda d: level_label(d) == "Muted", 3, "the level from elsewhere")
        wait(alice, lambda d: conversation_item(d, "Team Chat").find_elements(By.CSS_SELECTOR, ".muted-mark"), 3,
             "the muted mark")
        open_chat(alice, "Bob")
        self.post("charlie", team, "@Alice Johnson muted wins", mentions=["alice"])
        self.assert_no_banner_for(alice, 1.0, "muted wins")
        # Back to the settings' level: every message again.
        open_chat(alice, "Team Chat")
        self.choose(alice, "default")
        wait(alice, lambda d: level_label(d) == "Default (all)", 3, "the default level")
        checked = alice.find_elements(By.CSS_SELECTOR, "#level-menu [aria-checked=true]")
        self.assertEqual([item.get_attribute("data-level") for item in checked], ["default"], "the control and its menu agree")
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


if __name__ == "__main__":
    unittest.main()
