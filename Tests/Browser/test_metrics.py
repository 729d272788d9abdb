"""GET /metrics of a live `herald serve --demo`, read by prometheus_client's parser (PyPI): every metric Herald
keeps is there in the Prometheus text format, and the counters move as people connect, post and hit limits."""
import json
import time
import unittest
import urllib.request

import websocket  # Selenium's own dependency
from prometheus_client.parser import text_string_to_metric_families

from harness import Server


class Metrics(unittest.TestCase):
    def setUp(self):
        # A small burst, so that the test can reach the post limit.
        self.server = Server({"HERALD_LIMIT_POST_BURST": "8", "HERALD_LIMIT_POSTS_PER_SECOND": "0.01"})

    def tearDown(self):
        self.server.close()

    def scrape(self):
        """Every sample, by name and labels: {(name, (("label", "value"), ...)): value}."""
        with urllib.request.urlopen(self.server.url + "metrics", timeout=10) as response:
            self.assertEqual(response.status, 200)
            self.assertTrue(response.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            text = response.read().decode()
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return samples

    def value(self, samples, name, **labels):
        return samples.get((name, tuple(sorted(labels.items()))))

    def test_the_counters_move(self):
        before = self.scrape()
        for name in ("herald_connections_open", "herald_messages_posted_total", "herald_deliveries_total",
                     "herald_post_to_publish_seconds_count", "herald_catch_up_messages_count",
                     "herald_slow_readers_dropped_total", "herald_push_outbox_depth", "herald_rate_limited_total",
                     "herald_database_errors_total"):
            self.assertIsNotNone(self.value(before, name), f"{name} is missing from /metrics")
        self.assertEqual(self.value(before, "herald_http_requests_in_flight"), 1, "the scrape itself is in flight")
        # The demo's own messages were posted, and pushed to the demo phones (logged, not sent): the pushes are
        # decided shortly after the posts, so they are waited for (up to 10 s).
        self.assertEqual(self.value(before, "herald_messages_posted_total"), 5)
        deadline = time.monotonic() + 10
        while sum(v for (name, _), v in before.items() if name == "herald_push_jobs_total") == 0:
            self.assertLess(time.monotonic(), deadline, "the demo's messages were never pushed to the demo phones")
            time.sleep(0.1)
            before = self.scrape()

        alice, bob = self.server.token("alice"), self.server.token("bob")
        chat = self.server.direct(alice, "bob")
        stream = websocket.create_connection(
            self.server.url.replace("http", "ws") + f"v1/stream?token={bob}&after=0", timeout=10, suppress_origin=True)
        try:
            # The catch-up ends with `ready`.
            deadline = time.monotonic() + 10
            while json.loads(stream.recv())["type"] != "ready":
                self.assertLess(time.monotonic(), deadline, "no ready frame")
            for index in range(3):
                self.server.post(alice, chat, f"metrics {index}")
            for _ in range(3):
                self.assertEqual(json.loads(stream.recv())["type"], "message")
            during = self.scrape()
            self.assertEqual(self.value(during, "herald_connections_open"), 1)
            self.assertEqual(self.value(during, "herald_messages_posted_total"), 8)
            self.assertGreaterEqual(self.value(during, "herald_deliveries_total"), 3)
            self.assertEqual(self.value(during, "herald_post_to_publish_seconds_count"), 8)
            self.assertGreater(self.value(during, "herald_post_to_publish_seconds_bucket", le="+Inf"), 0)
            self.assertEqual(self.value(during, "herald_catch_up_messages_count"), 1)
            self.assertGreater(self.value(during, "herald_catch_up_messages_sum"), 0, "bob caught up on the demo's messages")
        finally:
            stream.close()

        # Over the limit: refused with 429, counted.
        statuses = [self.server.request("POST", f"/v1/conversations/{chat}/messages", alice, {"text": "again"})[0]
                    for _ in range(10)]
        self.assertIn(429, statuses)
        after = self.scrape()
        self.assertGreaterEqual(self.value(after, "herald_rate_limited_total"), statuses.count(429))
        deadline = time.monotonic() + 10
        while self.value(after, "herald_connections_open") != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            after = self.scrape()
        self.assertEqual(self.value(after, "herald_connections_open"), 0, "the closed stream is no longer counted")
        self.assertEqual(self.value(after, "herald_database_errors_total"), 0)


if __name__ == "__main__":
    unittest.main()
