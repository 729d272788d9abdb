// The package where React Native runs it: without Intl.Segmenter (Hermes) the engine cuts text into the same
// grapheme clusters (so previews, names and initials are the same words), and with React Native's URL pictures are
// still judged (avatar colours without TextEncoder: Tests/HeraldPresentationTests/AvatarStyleTests.swift). The engine's rules themselves are held to
// HeraldCore by the replay conformance test (Tests/HeraldReplayTests/WebEngineConformanceTests.swift).

import assert from "node:assert/strict";
import { test } from "node:test";
import * as engine from "../src/engine.js";

const samples = [
  "héllo wörld", "e\u0301 combining", "👨‍👩‍👧‍👦 family", "🇩🇪🇫🇷🇮🇹 flags", "🇩🇪🇫", "👍🏽 tone", "a\r\nb", "❤️ selector",
  "🏴󠁧󠁢󠁳󠁣󠁴󠁿 tag", "क्षि Devanagari", "  spaced \t out\n\n", "한국어", "🧑🏽‍💻 coder", "", "x",
  "A very long message that goes on and on past the fifty clusters of a preview, with 😀 emoji 👩🏾‍🚀 inside",
];

test("without Intl.Segmenter (Hermes) the engine cuts text into the same clusters, previews and initials", async () => {
  const segmenter = Intl.Segmenter;
  delete Intl.Segmenter;
  let fallback;
  try {
    // The wording module itself, afresh (engine.js only re-exports it, as it was first loaded: with the segmenter).
    fallback = await import("../src/wording.js?without-segmenter");
  } finally {
    Intl.Segmenter = segmenter;
  }
  for (const text of samples) {
    assert.deepEqual([...fallback.graphemeClusters(text)], [...engine.graphemeClusters(text)], JSON.stringify(text));
    assert.equal(fallback.preview(text, false), engine.preview(text, false), JSON.stringify(text));
    assert.equal(fallback.initials(text), engine.initials(text), JSON.stringify(text));
  }
});

test("pictures: only http and https load, also where URL's getters are not implemented (React Native)", async () => {
  const { safeImageURL } = await import("../src/presentation.js");
  const cases = { "https://example.com/a.png": true, "HTTP://example.com/a.png": true, "javascript:alert(1)": false,
    "data:image/png;base64,AAAA": false, "file:///etc/passwd": false, "not a url": false };
  for (const [text, loads] of Object.entries(cases)) assert.equal(safeImageURL(text) !== null, loads, text);
  const RealURL = globalThis.URL;
  globalThis.URL = class extends RealURL {
    get protocol() {
      throw new Error("URL.protocol is not implemented");
    }
  };
  try {
    for (const [text, loads] of Object.entries(cases)) assert.equal(safeImageURL(text) !== null, loads, `${text} (React Native's URL)`);
    assert.equal(safeImageURL("https://example.com/a b.png"), null, "no white space");
  } finally {
    globalThis.URL = RealURL;
  }
});

test("a notification's answers: a reply's id from the notification and the text (the same as Swift's), a read's seq", async () => {
  const { notificationAnswer, replyAction, markReadAction } = await import("../src/presentation.js");
  const data = { conversationId: "c1", messageId: "m1", seq: "7", type: "message" };
  // The same ids HeraldPresentation's NotificationAnswer makes (its test holds the same two).
  assert.deepEqual(notificationAnswer(replyAction, data, "  See you there \n"),
    { type: "reply", conversationId: "c1", messageId: "reply-7-fe510fa78766fff9", text: "See you there" });
  assert.equal(notificationAnswer(replyAction, data, "Café ☕ 👍🏽").messageId, "reply-7-b572801fe1316dda");
  assert.deepEqual(notificationAnswer(markReadAction, data), { type: "read", conversationId: "c1", seq: 7 });
  assert.equal(notificationAnswer(replyAction, data, " \n "), null, "an empty reply");
  assert.equal(notificationAnswer(markReadAction, { conversationId: "c1", seq: 7 }), null, "a seq that is not a string");
  assert.equal(notificationAnswer(markReadAction, { conversationId: "c1", seq: "-3" }), null);
  assert.equal(notificationAnswer("elsewhere", data), null);
  assert.equal(notificationAnswer(replyAction, null, "hi"), null);
  assert.equal(notificationAnswer(replyAction, data, "a".repeat(5000)).text.length, 4000);
});

// Shown once after a freeze (docs/behaviour.md §1, rule 8): the fixtures Tests/Fixtures/traces/woken*.jsonl and
// late.jsonl through the JavaScript engine (Tests/Web/replay.mjs, `herald replay` for it); the conformance test holds
// HeraldCore to the same timelines, and Tests/HeraldCoreTests/LateMessageTests.swift asserts them in Swift.
test("woken late with its pushed word 2 ms behind: no banner, no local notification; not pushed: a banner after the hold; live ones at once", async () => {
  const { execFileSync } = await import("node:child_process");
  const { fileURLToPath } = await import("node:url");
  const root = fileURLToPath(new URL("../../../", import.meta.url));
  const replay = (name) => execFileSync(process.execPath, [`${root}Tests/Web/replay.mjs`, `${root}Tests/Fixtures/traces/${name}`], { encoding: "utf8" })
    .trim().split("\n").map((line) => JSON.parse(line));
  const brief = (line) => `${line.at} ${line.type} ${line.banner?.id ?? line.banner ?? line.notification?.message ?? line.message ?? line.conversation}${line.reason ? ` ${line.reason}` : ""}`;

  const pushed = replay("woken.jsonl");
  assert.deepEqual(pushed.map(brief), [
    "1 skip w0 own", "2 show w1", "6 dismiss w1 timeout", "15.006 skip w2 pushed", "20 show w3", "24 dismiss w3 timeout",
  ]);
  assert.ok(!pushed.some((line) => (line.type === "show" && line.banner.id === "w2") || (line.type === "local")), "never shown, never posted");

  assert.deepEqual(replay("woken-unpushed.jsonl").map(brief), [
    "1 skip w0 own", "2 show w1", "6 dismiss w1 timeout", "15.504 show w2", "19.504 dismiss w2 timeout", "20 show w3", "24 dismiss w3 timeout",
  ]);

  const late = replay("late.jsonl");
  assert.deepEqual(late.map(brief), [
    "1.5 show l1", "5.5 dismiss l1 timeout", "6 show l2", "10 dismiss l2 timeout", "11.2 skip l3 active", "13.1 skip l5 quiet",
    "13.5 show l4", "17.5 dismiss l4 timeout", "20.1 skip l7 quiet", "25 skip l8 pushed", "30 show l9", "30.2 dismiss l9 tap",
    "30.2 navigate team", "30.2 skip l10 active", "35.5 show l11", "39.5 dismiss l11 timeout",
  ]);
  assert.equal(late.find((line) => line.type === "show" && line.banner.id === "l4").banner.body, "late, and edited while held");
});

test("a late banner waits localHold for the pushed word; without a hold, or live, it shows at once", () => {
  const incoming = (id, createdAt) => ({
    message: { id, conversationId: "team", senderId: "bob", text: "hi", imageURL: null, createdAt, mentions: [], mentionsAll: false },
    conversation: { id: "team", kind: "group", title: "Team" }, sender: { id: "bob", name: "Bob", avatarURL: null },
  });
  const shows = (effects) => effects.filter(({ effect }) => effect.type === "show").map(({ at, effect }) => `${at / engine.SECOND} ${effect.banner.id}`);
  // The server's clock (2026) far from the engine's instants (from 0): only differences count.
  const at = (seconds) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000).toISOString();
  const notifier = new engine.Notifier({ userID: "alice", localHold: engine.SECOND / 2 });
  assert.equal(engine.Notifier.lateAfter, engine.SECOND / 2);
  const effects = [
    ...notifier.handle({ type: "message", incoming: incoming("m1", at(0.9)) }, 1 * engine.SECOND),
    ...notifier.handle({ type: "message", incoming: incoming("m2", at(9.95)) }, 10 * engine.SECOND),
    ...notifier.handle({ type: "message", incoming: incoming("m3", at(19.2)) }, 20 * engine.SECOND),
    ...notifier.handle({ type: "pushed", conversation: "team", message: "m3" }, 20 * engine.SECOND + 2000),
    ...notifier.handle({ type: "message", incoming: incoming("m4", at(29.95)) }, 30 * engine.SECOND),
    ...notifier.advance(40 * engine.SECOND),
  ];
  assert.deepEqual(shows(effects), ["1.5 m1", "10 m2", "30 m4"]);
  assert.ok(effects.some(({ at, effect }) => effect.type === "skip" && effect.message === "m3" && effect.reason === "pushed" && at === 20 * engine.SECOND + 2000));

  const unheld = new engine.Notifier({ userID: "alice" });
  assert.deepEqual(shows(unheld.handle({ type: "message", incoming: incoming("m1", at(-60)) }, 0)), ["0 m1"]);
});
