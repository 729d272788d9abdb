"""The web client in headless Chromium against a live `herald serve --demo`: the page a person would choose. The open
chat marked, settings and a group's details as dialogs, search, the banner's place, grouped messages, destructive
actions asked first, empty states, one control for a chat's notifications, themes, the keyboard, and the page's
weight on the wire. Run by scripts/browser-tests; HERALD_UPDATE_SCREENSHOTS=1 writes docs/images/web-*.png."""
import time
import unittest
import uuid

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import (Server, choose_level, close_dialog, confirm, level_label, open_chat, open_settings, sign_in_as, wait)
from page_case import PageTestCase, pick, shot

# Where a box is, read in one step: {left, top, right, bottom, width, height}.
RECT = "const r = arguments[0].getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height};"


def luminance(colour):
    """The relative luminance of a computed `rgb(…)`/`rgba(…)` colour (0 black, 1 white)."""
    parts = [float(p) for p in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3]]
    linear = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in parts]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def settled(driver):
    """Waits until nothing on the page is moving (a sheet sliding in, a banner arriving), for a true picture."""
    wait(driver, lambda d: d.execute_script("return document.getAnimations().every((a) => a.playState !== 'running')"),
         3, "the page to stand still")


class LayoutTests(PageTestCase):
    def viewport(self, driver, width, height):
        """The page's viewport exactly `width` × `height` (a desktop's window has chrome around it)."""
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})

    def team(self):
        conversations = self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
        return [c for c in conversations if c.get("title") == "Team Chat"][0]["id"]

    def rect(self, driver, element_id):
        return driver.execute_script(RECT, driver.find_element(By.ID, element_id))

    def background(self, driver, element):
        return driver.execute_script("return getComputedStyle(arguments[0]).backgroundColor", element)

    def test_the_open_chat_is_marked_and_stands_out_from_hover_and_the_rest(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Team Chat")
        buttons = {b.find_element(By.CSS_SELECTOR, ".conversation-name").text: b
                   for b in alice.find_elements(By.CSS_SELECTOR, "#conversations .conversation")}
        current = [name for name, b in buttons.items() if b.get_attribute("aria-current") == "true"]
        self.assertEqual(current, ["Team Chat"])
        ActionChains(alice).move_to_element(buttons["Bob"]).perform()
        selected, hovered = self.background(alice, buttons["Team Chat"]), self.background(alice, buttons["Bob"])
        plain = self.background(alice, buttons["Charlie Davis"])
        self.assertNotIn(selected, (hovered, plain), "the open chat's background is its own")
        self.assertNotEqual(hovered, plain, "hover shows")
        sidebar = self.background(alice, alice.find_element(By.CSS_SELECTOR, ".sidebar"))
        self.assertGreater(abs(luminance(selected) - luminance(sidebar)), 0.05, "the open chat is plainly different")

    def test_settings_and_group_details_are_dialogs_that_keep_focus_close_on_escape_and_move_nothing(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Team Chat")
        before = self.rect(alice, "messages")
        for opener, dialog in (("settings-button", "settings"), ("members-button", "group-panel")):
            alice.find_element(By.ID, opener).click()
            wait(alice, lambda d: d.find_element(By.ID, dialog).get_attribute("open") is not None, 2, f"#{dialog} open")
            self.assertTrue(alice.execute_script("return document.getElementById(arguments[0]).matches(':modal')", dialog))
            self.assertEqual(self.rect(alice, "messages"), before, f"#{dialog} does not move the messages")
            # Focus stays inside: Tab never reaches the page behind.
            for _ in range(12):
                ActionChains(alice).send_keys(Keys.TAB).perform()
                inside = alice.execute_script("return document.getElementById(arguments[0]).contains(document.activeElement)"
                                              " || document.activeElement === document.body", dialog)
                self.assertTrue(inside, f"focus left #{dialog}")
            close_dialog(alice, dialog)
            self.assertEqual(alice.switch_to.active_element.get_attribute("id"), opener, "focus goes back to what opened it")
            self.assertEqual(self.rect(alice, "messages"), before)

    def test_every_setting_is_kept_as_it_changes_with_a_quiet_confirmation(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_settings(alice)
        self.assertFalse(alice.find_elements(By.ID, "quiet-save"), "no button to save: every change is kept")
        alice.find_element(By.ID, "quiet-on").click()
        # Each change is a request to the server: on a busy machine one may take seconds.
        wait(alice, lambda d: d.find_element(By.ID, "settings-saved").text == "Saved", 15, "Saved, quietly")
        alice.execute_script("const box = document.getElementById('quiet-start'); box.value = '21:30';"
                             "box.dispatchEvent(new Event('change', {bubbles: true}))")
        days = {box.get_attribute("value"): box for box in alice.find_elements(By.CSS_SELECTOR, "#quiet-days input")}
        alice.execute_script("arguments[0].click()", days["sun"])

        def quiet():
            return self.server.request("GET", "/v1/me/notifications", self.tokens["alice"])[1]["quietHours"]
        wait(alice, lambda _: quiet() and quiet()[0]["start"] == "21:30" and "sun" not in quiet()[0]["days"], 15,
             "the start and the days kept as they changed")
        # The days fit on one line.
        tops = {round(alice.execute_script(RECT, label)["top"])
                for label in alice.find_elements(By.CSS_SELECTOR, "#quiet-days label")}
        self.assertEqual(len(tops), 1, "the seven days on one line")
        alice.find_element(By.ID, "quiet-on").click()
        wait(alice, lambda _: quiet() == [], 3, "quiet hours off")

    def test_the_search_filters_the_list_as_one_types_and_an_empty_one_says_what_to_do(self):
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")

        def names(d):
            return [n.text for n in d.find_elements(By.CSS_SELECTOR, "#conversations .conversation-name")]
        everyone = names(alice)
        self.assertIn("Team Chat", everyone)
        box = alice.find_element(By.ID, "chat-search")
        box.send_keys("tea")
        wait(alice, lambda d: names(d) == ["Team Chat"], 2, "only Team Chat")
        box.send_keys(Keys.BACK_SPACE * 3, "CHARLIE")
        wait(alice, lambda d: "Charlie Davis" in names(d) and "Bob" not in names(d), 2, "Charlie's chats, any case")
        box.send_keys(Keys.BACK_SPACE * 7, "nobody here")
        wait(alice, lambda d: names(d) == [] and d.find_element(By.ID, "list-empty").is_displayed(), 2, "nothing")
        self.assertIn("No chat matches", alice.find_element(By.ID, "list-empty-text").text)
        box.send_keys(Keys.ESCAPE)
        wait(alice, lambda d: names(d) == everyone, 2, "all back")

        # No chat open: the pane says what to do, and its button starts one.
        self.assertTrue(alice.find_element(By.ID, "no-chat").is_displayed())
        alice.find_element(By.ID, "no-chat-start").click()
        wait(alice, lambda d: d.find_element(By.ID, "new-chat-dialog").get_attribute("open") is not None, 2, "the picker")
        start = alice.find_element(By.ID, "new-chat-start")
        self.assertFalse(start.is_enabled(), "Start waits for someone")
        disabled = (self.background(alice, start), alice.execute_script("return getComputedStyle(arguments[0]).cursor", start))
        pick(alice, "bob", "Bob")
        self.assertTrue(start.is_enabled())
        enabled = (self.background(alice, start), alice.execute_script("return getComputedStyle(arguments[0]).cursor", start))
        self.assertEqual(disabled[1], "not-allowed")
        self.assertNotEqual(disabled[0], enabled[0], "a disabled Start looks disabled")
        close_dialog(alice, "new-chat-dialog")

        # Someone with no chats at all is told how to start one.
        newcomer = self.browser()
        newcomer.get(f"{self.server.url}#token={self.server.mint('newcomer-' + uuid.uuid4().hex[:6], 'Nina New')}")
        wait(newcomer, lambda d: d.find_element(By.ID, "list-empty").is_displayed(), 10, "the empty list")
        self.assertIn("No chats yet", newcomer.find_element(By.ID, "list-empty-text").text)
        self.assertTrue(newcomer.find_element(By.ID, "list-empty-start").is_displayed())

    def test_the_banner_covers_neither_the_chat_title_nor_the_list_on_a_desktop_and_is_frosted_on_a_phone(self):
        for width, height in ((1280, 800), (390, 844)):
            alice = self.browser(width=width, height=height)
            self.viewport(alice, width, height)
            sign_in_as(alice, self.server, "Alice Johnson")
            open_chat(alice, "Bob")
            text = f"Over here {uuid.uuid4().hex[:6]}"
            self.server.post(self.tokens["charlie"], self.chat_with("charlie", "alice"), text)
            banner = self.wait_for_banner(alice, text, 5)
            box = alice.execute_script(RECT, banner)
            if width > 700:
                title, sidebar = self.rect(alice, "chat-title"), alice.execute_script(RECT, alice.find_element(By.CSS_SELECTOR, ".sidebar"))
                apart = box["top"] >= title["bottom"] or box["left"] >= title["right"] or box["right"] <= title["left"]
                self.assertTrue(apart, f"the banner {box} covers the chat's title {title}")
                self.assertGreaterEqual(box["left"], sidebar["right"], "the banner stays in the chat pane")
                self.assertLessEqual(box["right"], width)
            else:
                self.assertLessEqual(box["left"], 12)
                self.assertGreaterEqual(box["right"], width - 12, "across the phone's width")
                blur = alice.execute_script("return getComputedStyle(arguments[0]).backdropFilter", banner)
                self.assertIn("blur", blur)
                alpha = alice.execute_script("return getComputedStyle(arguments[0]).backgroundColor", banner)
                self.assertTrue(alpha.startswith("rgba") and float(alpha.rsplit(",", 1)[1].rstrip(")")) < 0.9,
                                f"see-through, frosted: {alpha}")

    def test_one_senders_messages_go_under_one_name(self):
        team = self.team()
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, "Team Chat")
        run = [f"run {i} {uuid.uuid4().hex[:4]}" for i in range(3)]
        self.server.post(self.tokens["bob"], team, "Bob before the run")
        for text in run:
            self.server.post(self.tokens["charlie"], team, text)
        self.server.post(self.tokens["bob"], team, "Bob breaks the run")
        wait(alice, lambda d: "Bob breaks the run" in d.find_element(By.ID, "messages").text, 5, "the messages")
        rows = alice.execute_script("""return [...document.querySelectorAll('#messages li.message')].slice(-4).map((m) => ({
            sender: m.querySelector('.sender')?.textContent ?? null, continued: m.classList.contains('continued')}))""")
        self.assertEqual(rows, [{"sender": "Charlie Davis", "continued": False}, {"sender": None, "continued": True},
                                {"sender": None, "continued": True}, {"sender": "Bob", "continued": False}])

    def test_destructive_actions_are_red_and_asked_first_and_there_is_one_control_for_a_chats_notifications(self):
        title = f"Careful {uuid.uuid4().hex[:6]}"
        status, _ = self.server.request("POST", "/v1/conversations", self.tokens["alice"],
                                        {"kind": "group", "title": title, "members": ["bob"]})
        self.assertEqual(status, 201)
        alice = self.browser()
        sign_in_as(alice, self.server, "Alice Johnson")
        open_chat(alice, title)
        self.assertFalse(alice.find_elements(By.ID, "mute"), "one control: no Mute beside it")
        choose_level(alice, "mentions")
        wait(alice, lambda d: level_label(d) == "Mentions only", 3, "the control says the chat's choice")
        checked = [i.get_attribute("data-level") for i in alice.find_elements(By.CSS_SELECTOR, "#level-menu [aria-checked=true]")]
        self.assertEqual(checked, ["mentions"])
        choose_level(alice, "default")
        wait(alice, lambda d: level_label(d) == "Default (all)", 3, "back to the default, saying what it is")

        alice.find_element(By.ID, "members-button").click()
        wait(alice, lambda d: d.find_element(By.ID, "members").is_displayed(), 2, "the details")
        danger = luminance(alice.execute_script("return getComputedStyle(arguments[0]).color", alice.find_element(By.ID, "leave")))
        remove = [b for b in alice.find_elements(By.CSS_SELECTOR, "#members button") if b.text == "Remove"][0]
        make = [b for b in alice.find_elements(By.CSS_SELECTOR, "#members button") if b.text == "Make owner"][0]
        colours = [alice.execute_script("return getComputedStyle(arguments[0]).color", b) for b in (remove, make)]
        self.assertNotEqual(colours[0], colours[1], "Remove does not look like Make owner")
        red = alice.execute_script("const c = getComputedStyle(arguments[0]).color.match(/\\d+/g).map(Number); return c[0] > 150 && c[1] < 120", remove)
        self.assertTrue(red, f"Remove is red: {colours[0]} (Leave's luminance {danger:.2f})")
        self.assertTrue(alice.find_elements(By.CSS_SELECTOR, "#members li .avatar"), "members with their pictures")
        # Leave is asked first; Cancel leaves everything as it was.
        alice.find_element(By.ID, "leave").click()
        wait(alice, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, 2, "the question")
        self.assertEqual(alice.find_element(By.ID, "confirm-ok").text, "Leave")
        alice.find_element(By.ID, "confirm-cancel").click()
        time.sleep(0.3)  # the refusal to act is what is tested: nothing may arrive
        group = [c for c in self.server.request("GET", "/v1/conversations", self.tokens["alice"])[1]["conversations"]
                 if c.get("title") == title]
        self.assertEqual(len(group), 1, "still in the group")
        self.assertFalse(alice.find_element(By.ID, "removed").is_displayed())

    def test_themes_follow_the_system_and_the_keyboard_shows_where_it_is(self):
        for dark in (False, True):
            page = self.browser(dark=dark)
            sign_in_as(page, self.server, "Alice Johnson")
            body = luminance(page.execute_script("return getComputedStyle(document.body).backgroundColor"))
            text = luminance(page.execute_script("return getComputedStyle(document.body).color"))
            if dark:
                self.assertLess(body, 0.05)
                self.assertGreater(text, 0.7)
            else:
                self.assertGreater(body, 0.9)
                self.assertLess(text, 0.05)
            # From the search box, Tab reaches the chats; the focused one shows it.
            page.find_element(By.ID, "chat-search").click()
            ActionChains(page).send_keys(Keys.TAB).perform()
            focused = page.switch_to.active_element
            self.assertIn("conversation", focused.get_attribute("class"))
            outline = page.execute_script("const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth]")
            self.assertNotEqual(outline[0], "none", "visible focus")
            ActionChains(page).send_keys(Keys.ENTER).perform()
            wait(page, lambda d: d.find_element(By.ID, "chat-header").is_displayed(), 3, "Enter opens the chat")

    def test_the_page_weighs_under_100_kb_on_the_wire(self):
        page = self.browser()
        sign_in_as(page, self.server, "Alice Johnson")
        open_chat(page, "Team Chat")
        entries = page.execute_script("""return performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
            .map((e) => ({name: e.name, transfer: e.transferSize, encoded: e.encodedBodySize, decoded: e.decodedBodySize}))""")
        files = [e for e in entries if "/v1/" not in e["name"]]
        total = sum(e["transfer"] for e in files)
        decoded = sum(e["decoded"] for e in files)
        print(f"\n  the page on the wire: {total} bytes in {len(files)} requests ({decoded} bytes unpacked)")
        self.assertGreater(len(files), 10, [e["name"] for e in files])
        self.assertLess(total, 100_000, sorted(files, key=lambda e: -e["transfer"])[:5])
        scripts = [e for e in files if e["name"].endswith("/chat.js")]
        self.assertTrue(scripts and scripts[0]["encoded"] < scripts[0]["decoded"], f"compressed: {scripts}")

    def test_screens_at_a_desktop_and_a_phone_light_and_dark(self):
        """Every screen the issue names, at both sizes and in both themes, fits its width; with
        HERALD_UPDATE_SCREENSHOTS=1 they are written to docs/images for the README. On a server of its own: the
        demo's chats as a newcomer finds them."""
        server = Server()
        self.addCleanup(server.close)
        bob = server.token("bob")
        bobs_chat = server.direct(bob, "alice")
        for (width, height, size) in ((1280, 800, "desktop"), (390, 844, "phone")):
            for theme in ("light", "dark"):
                page = self.browser(width=width, height=height, dark=theme == "dark")
                self.viewport(page, width, height)
                sign_in_as(page, server, "Alice Johnson")

                def fits(what):
                    self.assertLessEqual(page.execute_script("return document.scrollingElement.scrollWidth"), width,
                                         f"{what} at {size}, {theme}")
                fits("the list")
                settled(page)
                shot(page, f"web-list-{size}-{theme}")
                open_chat(page, "Team Chat")
                fits("the chat")
                settled(page)
                shot(page, f"web-chat-{size}-{theme}")
                text = "Are we still on for Friday?"
                server.post(bob, bobs_chat, text)
                banner = self.wait_for_banner(page, text, 5)
                self.assertTrue(banner)
                settled(page)
                shot(page, f"web-banner-{size}-{theme}")
                page.execute_script("document.querySelector('#banner-layer .banner-close')?.click()")
                if size == "phone":
                    page.find_element(By.ID, "back").click()  # a phone's settings are the list's
                open_settings(page)
                fits("the settings")
                settled(page)
                shot(page, f"web-settings-{size}-{theme}")
                close_dialog(page, "settings")
                if size == "phone":
                    open_chat(page, "Team Chat")
                page.find_element(By.ID, "members-button").click()
                wait(page, lambda d: d.find_element(By.ID, "members").is_displayed(), 2, "the details")
                fits("the group's details")
                settled(page)
                shot(page, f"web-group-{size}-{theme}")
                close_dialog(page, "group-panel")


if __name__ == "__main__":
    unittest.main()
