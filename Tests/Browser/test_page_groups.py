"""The web client in headless Chromium against a live `herald serve --demo`: Groups that change, and messages from the app's backend. Run by scripts/browser-tests."""
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
        wait(alice, lambda d: self.panel_members(d) == {"alice": ["Alice Johnson (you)", True, []], "bob": ["Bob", False, ["Make owner", "Remove"]]},
             5, "the members, Alice the owner")
        self.assertFalse(bob.find_element(By.ID, "members-button").get_attribute("hidden"), "Bob sees the panel too")
        bob.find_element(By.ID, "members-button").click()
        wait(bob, lambda d: self.panel_members(d)["bob"] == ["Bob (you)", False, []], 5, "Bob's panel, without owner actions")
        self.assertFalse(bob.find_element(By.ID, "rename").is_displayed(), "only owners rename")

        # Alice adds Charlie, without the history; Charlie is told, Bob sees a quiet line.
        alice.find_element(By.ID, "add-members").click()
        alice.find_element(By.ID, "new-history").click()
        pick(alice, "davis", "Charlie Davis")
        alice.find_element(By.ID, "new-chat-start").click()
        wait(alice, lambda d: d.find_element(By.ID, "new-chat-dialog").get_attribute("open") is None, 5, "the picker closed")
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
        alice.find_element(By.ID, "members-button").click()
        wait(alice, lambda d: d.find_element(By.ID, "rename-title").is_displayed(), 3, "the details again")
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
        confirm(alice, "Remove")
        wait(charlie, lambda d: d.find_element(By.ID, "removed").is_displayed(), 5, "Charlie told he is out")
        self.assertFalse(charlie.find_element(By.ID, "composer").is_displayed())
        self.assertEqual(self.event_lines(charlie)[-1], "Alice Johnson removed you")
        # Bob leaves.
        bob.find_element(By.ID, "leave").click()
        confirm(bob, "Leave")
        wait(bob, lambda d: d.find_element(By.ID, "removed").is_displayed(), 5, "Bob's chat says he left")
        wait(alice, lambda d: set(self.panel_members(d)) == {"alice"}, 5, "only Alice left in the panel")
        wait(alice, lambda d: "Bob left" in self.event_lines(d), 5, "the leaving line")


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


if __name__ == "__main__":
    unittest.main()
