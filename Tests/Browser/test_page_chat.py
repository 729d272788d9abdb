"""The web client in headless Chromium against a live `herald serve --demo`: Two people chatting, and the page across a server restart. Run by scripts/browser-tests."""
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
        self.wait_for_banner(bob, "Hi Bob, two lines", 3)
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
        choose_level(alice, "nothing")
        wait(alice, lambda d: level_label(d) == "Muted", 3, "the chat to be muted")
        open_chat(alice, "Launch crew")
        self.server.post(self.tokens["bob"], self.chat_with("bob", "alice"), "Muted, so quiet")
        wait(alice, lambda d: "Muted, so quiet" in conversation_item(d, "Bob").text, 3, "the muted chat's preview")
        self.assert_no_banner_for(alice, 1.0, "Muted, so quiet")
        open_chat(alice, "Bob")
        choose_level(alice, "default")
        wait(alice, lambda d: level_label(d) == "Default (all)", 3, "the chat to be unmuted")

        open_settings(alice)
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
        self.assertFalse(notifications[0]["silent"])
        # A burst: the next ones replace the first silently, under its tag, the count first.
        self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), "And another thing")
        notifications = wait(alice, lambda d: len(d.execute_script("return window.__notifications")) == 2
                             and d.execute_script("return window.__notifications"), 3, "the burst's second notification")
        self.assertEqual(notifications[1]["tag"], notifications[0]["tag"])
        self.assertTrue(notifications[1]["silent"])
        self.assertEqual(notifications[1]["body"], "2 new messages\nAnd another thing")
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
        alice.find_element(By.CSS_SELECTOR, "#composer button[type=submit]").click()
        banner = self.wait_for_banner(alice, "Message not sent", 3)
        self.assertEqual(banner.get_attribute("data-tone"), "danger")
        wait(alice, lambda d: {"text": "badtext", "mine": True, "state": "failed"} in messages(d), 2, "the failed message")
        wait(alice, lambda d: "Not sent" in d.find_element(By.CSS_SELECTOR, "#messages li.failed .meta").text, 2, "Not sent")

    def test_coalescing_is_a_setting(self):
        alice = self.alice_in_bobs_chat()
        open_settings(alice)
        self.assertFalse(alice.find_element(By.ID, "coalesce").is_selected(), "coalescing is off by default")
        alice.find_element(By.ID, "coalesce").click()
        close_dialog(alice, "settings")
        chat = self.chat_with("charlie", "alice")
        self.server.post(self.tokens["charlie"], chat, "One")
        self.wait_for_banner(alice, "One", 3)
        self.server.post(self.tokens["charlie"], chat, "Two, merged")
        banner = self.wait_for_banner(alice, "Two, merged", 3)
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


if __name__ == "__main__":
    unittest.main()


class EditAndDeleteTests(PageTestCase):
    """docs/behaviour.md §6: what another member's edit and deletion do to a page, and the page's own menu."""

    def amend(self, sender, conversation, message_id, text=None):
        path = f"/v1/conversations/{conversation}/messages/{message_id}"
        status, answer = (self.server.request("PATCH", path, self.tokens[sender], {"text": text}) if text is not None
                          else self.server.request("DELETE", path, self.tokens[sender]))
        self.assertEqual(status, 200, answer)
        return answer

    def test_an_edit_updates_the_open_chat_and_the_banner_a_delete_takes_them_away(self):
        alice = self.alice_in_bobs_chat()
        bobs = self.chat_with("bob", "alice")
        sent = self.server.post(self.tokens["bob"], bobs, "see you at 5", message_id=f"plan-{uuid.uuid4()}")
        wait(alice, lambda d: "see you at 5" in [m["text"] for m in messages(d)], 5, "Bob's message in the open chat")
        self.amend("bob", bobs, sent["id"], "see you at 6")
        wait(alice, lambda d: "see you at 6" in [m["text"] for m in messages(d)], 5, "the edit in the open chat")
        self.assertNotIn("see you at 5", [m["text"] for m in messages(alice)])
        edited = alice.find_element(By.CSS_SELECTOR, f'#messages li.message[data-id="{sent["id"]}"] .edited')
        self.assertIn("edited", edited.get_attribute("textContent"))
        self.amend("bob", bobs, sent["id"])
        wait(alice, lambda d: d.find_elements(By.CSS_SELECTOR, f'#messages li.message.deleted[data-id="{sent["id"]}"]'), 5,
             "the tombstone in the open chat")
        self.assertIn("This message was deleted", [m["text"] for m in messages(alice)])
        self.assertNotIn("see you at 6", alice.find_element(By.ID, "messages").get_attribute("textContent"))
        self.assertNotIn("edited a message", alice.find_element(By.ID, "messages").get_attribute("textContent"),
                         "an edit has no line of its own")

        # Charlie's message in another chat: a banner, held by a finger so it stays; his edit changes its words, his
        # deletion takes it away.
        charlies = self.chat_with("charlie", "alice")
        note = self.server.post(self.tokens["charlie"], charlies, "the code is 1234", message_id=f"code-{uuid.uuid4()}")
        banner = self.wait_for_banner(alice, "the code is 1234", 5)
        ActionChains(alice).move_to_element(banner).click_and_hold().perform()
        self.amend("charlie", charlies, note["id"], "the code is 4321")
        wait(alice, lambda d: [b for b in visible_banners(d) if "the code is 4321" in banner_text(b)], 5, "the banner's new words")
        self.assertFalse([b for b in visible_banners(alice) if "1234" in banner_text(b)])
        self.amend("charlie", charlies, note["id"])
        wait(alice, lambda d: not [b for b in visible_banners(d) if "the code is" in banner_text(b)], 5, "the banner gone")
        ActionChains(alice).release().perform()
        wait(alice, lambda d: "This message was deleted" in list_item(d, "Charlie Davis")["text"], 5,
             "the list's line for the chat")

    def test_a_system_notification_takes_the_edit_and_closes_on_delete(self):
        alice = self.alice_in_bobs_chat()
        alice.execute_cdp_cmd("Browser.grantPermissions", {"origin": self.server.url.rstrip("/"), "permissions": ["notifications"]})
        alice.refresh()
        wait(alice, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 10, "a live stream")
        alice.minimize_window()
        wait(alice, lambda d: d.execute_script("return document.hidden"), 5, "the page to be hidden")
        charlies = self.chat_with("charlie", "alice")
        note = self.server.post(self.tokens["charlie"], charlies, "wrong chat, sorry", message_id=f"oops-{uuid.uuid4()}")
        first = wait(alice, lambda d: [n for n in d.execute_script("return window.__notifications")
                                       if "wrong chat" in n["body"]], 5, "the system notification")[0]
        self.amend("charlie", charlies, note["id"], "right chat after all")
        edit = wait(alice, lambda d: [n for n in d.execute_script("return window.__notifications")
                                      if "right chat" in n["body"]], 5, "the edited notification")[0]
        self.assertEqual(edit["tag"], first["tag"], "it replaces the first")
        self.assertTrue(edit["silent"], "an edit makes no sound")
        self.amend("charlie", charlies, note["id"])
        wait(alice, lambda d: first["tag"] in d.execute_script("return window.__closedNotifications"), 5, "the notification closed")
        count = len(alice.execute_script("return window.__notifications"))
        self.assertEqual(count, 2, "nothing new was posted for the deletion")
        alice.set_window_rect(width=1280, height=900)

    def test_ones_own_message_is_edited_and_deleted_from_its_menu(self):
        alice = self.alice_in_bobs_chat()
        bobs = self.chat_with("bob", "alice")
        box = alice.find_element(By.ID, "composer-text")
        box.send_keys("lunch at noon?", Keys.ENTER)
        wait(alice, lambda d: [m for m in messages(d) if m["text"] == "lunch at noon?" and m["state"] == "stored"], 5, "sent")
        # The message by its id, not by its place: the chat is redrawn as the edit and the deletion come back.
        sent = alice.execute_script("""return [...document.querySelectorAll('#messages li.message.mine')]
            .find((m) => m.querySelector('.text')?.textContent === 'lunch at noon?').dataset.id""")
        mine = lambda d: d.find_element(By.CSS_SELECTOR, f'#messages li.message[data-id="{sent}"]')
        stored = lambda: next(m for m in self.server.request("GET", f"/v1/conversations/{bobs}/messages", self.tokens["bob"])[1]["messages"]
                              if m["id"] == sent)
        click_when(alice, lambda d: mine(d).find_elements(By.CSS_SELECTOR, ".message-menu summary"), 3, "the message's menu")
        click_when(alice, lambda d: mine(d).find_elements(By.CSS_SELECTOR, 'button[data-action="edit"]'), 3, "Edit")
        wait(alice, lambda d: d.find_element(By.ID, "editing").is_displayed(), 3, "editing shown")
        self.assertEqual(box.get_attribute("value"), "lunch at noon?")
        box.clear()
        box.send_keys("lunch at one?", Keys.ENTER)
        wait(alice, lambda d: mine(d).find_element(By.CSS_SELECTOR, ".text").text == "lunch at one?", 5, "the edit in the chat")
        self.assertFalse(alice.find_element(By.ID, "editing").is_displayed())
        self.assertEqual([m["text"] for m in messages(alice)].count("lunch at one?"), 1, "the edit is no new message")
        edited = stored()
        self.assertEqual((edited["text"], edited.get("edited")), ("lunch at one?", True), edited)

        click_when(alice, lambda d: mine(d).find_elements(By.CSS_SELECTOR, ".message-menu summary"), 3, "the message's menu")
        click_when(alice, lambda d: mine(d).find_elements(By.CSS_SELECTOR, 'button[data-action="delete"]'), 3, "Delete")
        confirm(alice, "Delete")
        wait(alice, lambda d: mine(d).find_element(By.CSS_SELECTOR, ".text").text == "This message was deleted", 5, "the tombstone")
        deleted = stored()
        self.assertTrue(deleted.get("deleted") and deleted["text"] is None, deleted)
        # Bob's messages have no menu here (a direct chat has no owner); a tombstone has none either.
        self.assertFalse(alice.find_elements(By.CSS_SELECTOR, "#messages li.message:not(.mine) .message-menu"))
        self.assertFalse(alice.find_elements(By.CSS_SELECTOR, "#messages li.message.deleted .message-menu"))
