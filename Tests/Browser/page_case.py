"""What the page's tests share: one demo server for a class of them, browsers closed when a test ends, the banner
helpers, and the screenshots the docs show."""
import os
import time
import unittest

from selenium.webdriver.common.by import By

from harness import ROOT, Server, chromium, click_when, open_chat, sign_in_as, visible_banners, wait

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


def shot(driver, name):
    """Writes the screenshot docs/images/<name>.png when HERALD_UPDATE_SCREENSHOTS=1."""
    if SCREENSHOTS:
        driver.save_screenshot(os.path.join(ROOT, "docs", "images", f"{name}.png"))
