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
