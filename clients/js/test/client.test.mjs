// HeraldClient against a real `herald serve`: connect, catch up, live, resume across a SIGKILL and restart with
// nothing missed or repeated, the send queue, token renewal, refusals, member and choice events.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { APIError, HeraldClient, messagePreview, notificationAnswer, replyAction } from "../src/index.js";
import { Server, bounded, eventually, record, suiteServer, token } from "./harness.mjs";

/** A client for `user` on `server`, reconnecting fast (tests go faster than networks fail). */
function clientFor(server, user, options = {}) {
  return new HeraldClient({ url: server.url, token: token(user), backoff: { initial: 100, max: 400 }, ...options });
}

/** The ids of the message frames a client got, in order. */
const ids = (messages) => messages.map(({ message }) => message.id);

describe("HeraldClient on a real server", () => {
  const clients = [];
  const open = (client) => {
    clients.push(client);
    return client;
  };
  const server = suiteServer(() => clients.forEach((client) => client.close()));

  test("catches up from `after`, says ready, then gets live messages once each, in seq order", async () => {
    const chat = await server.chat("direct", "bob", ["alice"]);
    const sent = [];
    for (const text of ["one", "two", "three"]) sent.push(await server.post("bob", chat, text));
    const alice = open(clientFor(server, "alice", { after: sent[0].seq - 1 }));
    const messages = record(alice, "message");
    const ready = record(alice, "ready");
    alice.connect();
    await eventually("ready after the catch-up", () => ready.length === 1);
    assert.deepEqual(ids(messages), sent.map((message) => message.id), "the catch-up, in order");
    assert.equal(alice.state, "live");
    const live = await server.post("bob", chat, "four");
    await eventually("the live message", () => messages.length === 4);
    assert.equal(messages[3].message.id, live.id);
    assert.equal(messages[3].sender.id, "bob");
    assert.equal(messages[3].conversation.kind, "direct");
    assert.equal(alice.lastSeq, live.seq);
  });

  test("a SIGKILL and a restart: the client reconnects with `after`, and nothing is missed or repeated", async () => {
    const chat = await server.chat("group", "bob", ["alice"], "Restart");
    const alice = open(clientFor(server, "alice", { backoff: { initial: 600, max: 1000 } }));
    const messages = record(alice, "message");
    const states = record(alice, "state");
    alice.connect();
    await eventually("live", () => alice.state === "live");
    const before = [];
    for (const text of ["a", "b", "c"]) before.push(await server.post("bob", chat, text));
    await eventually("the first three", () => messages.filter(({ message }) => message.conversationId === chat).length === 3);

    await server.kill();
    await eventually("the loss seen", () => alice.state === "reconnecting");
    await server.start();
    // Posted while Alice is still away (her next try is at least 450 ms off), then one once she is back.
    const during = [await server.post("bob", chat, "d"), await server.post("bob", chat, "e")];
    await eventually("live again", () => alice.state === "live");
    const afterwards = await server.post("bob", chat, "f");
    await eventually("all six", () => messages.filter(({ message }) => message.conversationId === chat).length >= 6);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a repeat would come now
    const got = messages.filter(({ message }) => message.conversationId === chat);
    assert.deepEqual(ids(got), [...before, ...during, afterwards].map((message) => message.id), "each once, in order");
    const seqs = got.map(({ message }) => message.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
    assert.ok(states.lastIndexOf("reconnecting") > states.indexOf("live"), states.join(", "));
    assert.equal(states.at(-1), "live");
  });

  test("sends made while the server is down wait, and go out once when it is back", async () => {
    const chat = await server.chat("direct", "dana", ["erin"]);
    const dana = open(clientFor(server, "dana"));
    dana.connect();
    await eventually("live", () => dana.state === "live");
    await server.kill();
    await eventually("offline", () => dana.state === "reconnecting");
    const sends = [dana.send(chat, "queued one"), dana.send(chat, "queued two")];
    assert.deepEqual(dana.unsent.map(({ text }) => text), ["queued one", "queued two"]);
    await server.start();
    const stored = await bounded("both acknowledged", Promise.all(sends));
    assert.ok(stored[0].seq < stored[1].seq);
    assert.deepEqual(dana.unsent, []);
    const history = await server.request("erin", "GET", `/v1/conversations/${chat}/messages`);
    assert.deepEqual(history.messages.map(({ text }) => text), ["queued one", "queued two"], "stored once each");
  });

  test("a send whose acknowledgement was lost goes again with its id after the reconnect, and is stored once", async () => {
    const chat = await server.chat("direct", "fay", ["gus"]);
    let dropped = 0;
    // The connection drops just as the first `ack` arrives: the client never hears it.
    class LossyWebSocket extends WebSocket {
      set onmessage(handler) {
        super.onmessage = (event) => {
          if (dropped === 0 && JSON.parse(event.data).type === "ack") {
            dropped += 1;
            this.close();
            return;
          }
          handler(event);
        };
      }
      get onmessage() {
        return super.onmessage;
      }
    }
    const fay = open(clientFor(server, "fay", { WebSocket: LossyWebSocket }));
    fay.connect();
    await eventually("live", () => fay.state === "live");
    const stored = await bounded("the send acknowledged after the reconnect", fay.send(chat, "exactly once"));
    assert.equal(dropped, 1);
    const history = await server.request("gus", "GET", `/v1/conversations/${chat}/messages`);
    assert.deepEqual(history.messages.map(({ id, seq }) => [id, seq]), [[stored.id, stored.seq]]);
  });

  test("an expired token is renewed once for the stream and the API together, and the client goes on", async () => {
    const expired = token("hana", { expiresIn: -120 }); // past the server's minute of leeway
    const renewals = [];
    const hana = open(new HeraldClient({
      url: server.url, token: expired, backoff: { initial: 100, max: 400 },
      renew: async (used) => {
        renewals.push(used);
        return token("hana");
      },
    }));
    hana.connect();
    const [list] = await Promise.all([hana.api.conversations(), eventually("live with the new token", () => hana.state === "live")]);
    assert.ok(Array.isArray(list.conversations));
    assert.deepEqual(renewals, [expired], "one renewal, for both");
    assert.notEqual(hana.token, expired);
  });

  test("a stream refused for a token the API has renewed meanwhile goes on with that renewal, not a second one", async () => {
    // The refusal of the first connection is held back until the API's own request found the token expired and
    // renewed it: the stream then takes the token that renewal made (the race a loaded machine made real).
    const expired = token("ines", { expiresIn: -120 });
    const renewals = [];
    let release;
    const released = new Promise((resolve) => { release = resolve; });
    let heldSome;
    const held = new Promise((resolve) => { heldSome = resolve; });
    class HeldWebSocket extends WebSocket {
      constructor(url) {
        super(url);
        this.first = url.includes(encodeURIComponent(expired)) || url.includes(expired);
      }
      set onmessage(handler) {
        super.onmessage = (event) => (this.first ? (heldSome(), released.then(() => handler(event))) : handler(event));
      }
      get onmessage() {
        return super.onmessage;
      }
      set onclose(handler) {
        super.onclose = (event) => (this.first ? released.then(() => setTimeout(() => handler(event), 0)) : handler(event));
      }
      get onclose() {
        return super.onclose;
      }
    }
    const ines = open(new HeraldClient({
      url: server.url, token: expired, backoff: { initial: 100, max: 400 }, WebSocket: HeldWebSocket,
      renew: async (used) => {
        renewals.push(used);
        return token("ines");
      },
    }));
    ines.connect();
    await bounded("the refusal, held back", held);
    await ines.api.conversations(); // renews the token for both
    release();
    await eventually("live with the renewed token", () => ines.state === "live");
    assert.deepEqual(renewals, [expired], "one renewal");
  });

  test("an API request refused for a token the stream renewed meanwhile is made again with that renewal", async () => {
    // The API's refusal is held back until the stream has found the token expired and renewed it (the race a loaded
    // CI machine made real): the request then goes again with that renewal, not a second one, and does not fail.
    const expired = token("jill", { expiresIn: -120 });
    const renewals = [];
    let jill;
    const heldFetch = async (url, init) => {
      const response = await fetch(url, init);
      if (init.headers.Authorization === `Bearer ${expired}`) {
        await eventually("the stream's renewal", () => jill.token !== expired);
      }
      return response;
    };
    jill = open(new HeraldClient({
      url: server.url, token: expired, backoff: { initial: 100, max: 400 }, fetch: heldFetch,
      renew: async (used) => {
        renewals.push(used);
        return token("jill");
      },
    }));
    const list = jill.api.conversations();
    jill.connect();
    assert.ok(Array.isArray((await bounded("the request, made again", list)).conversations));
    await eventually("live with the renewed token", () => jill.state === "live");
    assert.deepEqual(renewals, [expired], "one renewal");
  });

  test("a token that cannot be renewed ends the connection with tokenRefused, and no more tries", async () => {
    const bad = token("ivan", { secret: "not-the-servers-secret-but-32-bytes-long" });
    const ivan = open(new HeraldClient({ url: server.url, token: bad, backoff: { initial: 50, max: 50 } }));
    const refusals = record(ivan, "tokenRefused");
    ivan.connect();
    await eventually("refused", () => ivan.state === "refused");
    assert.equal(refusals.length, 1);
    assert.equal(refusals[0].code, "invalid_token");
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(ivan.state, "refused", "not retried");
    const expired = open(new HeraldClient({ url: server.url, token: token("ivan", { expiresIn: -120 }), renew: async () => null }));
    expired.connect();
    await eventually("refused", () => expired.state === "refused");
    await assert.rejects(expired.api.conversations(), (error) => error instanceof APIError && error.code === "token_expired" && error.status === 401);
  });

  test("refusals: a send the server will not store rejects with its code, and the API's errors carry theirs", async () => {
    const chat = await server.chat("direct", "jo", ["kim"]);
    const outsider = open(clientFor(server, "lou"));
    const refused = record(outsider, "refused");
    outsider.connect();
    await eventually("live", () => outsider.state === "live");
    await assert.rejects(outsider.send(chat, "let me in"), (error) => error instanceof APIError && error.code === "not_a_member");
    await assert.rejects(outsider.send(chat, "x".repeat(4001)), (error) => error.code === "not_a_member" || error.code === "text_too_long");
    const jo = open(clientFor(server, "jo"));
    jo.connect();
    await eventually("live", () => jo.state === "live");
    await assert.rejects(jo.send(chat, "x".repeat(4001)), (error) => error.code === "text_too_long");
    await assert.rejects(jo.send(chat, "@nobody", { mentions: ["nobody"] }), (error) => error.code === "invalid_mentions");
    assert.deepEqual(jo.unsent, [], "refused for good: not retried");
    assert.equal(refused.length, 2);
    await assert.rejects(outsider.api.messages(chat), (error) => error.code === "not_a_member" && error.status === 403);
    await assert.rejects(jo.api.conversation("no-such-chat"), (error) => error.code === "conversation_not_found" && error.status === 404);
    await assert.rejects(jo.api.setLevel(chat, "loud"), (error) => error.code === "invalid_request" && error.status === 400);
    const down = new HeraldClient({ url: "http://127.0.0.1:9", token: token("jo") });
    await assert.rejects(down.api.conversations(), (error) => error.code === "network" && error.status === 0);
  });

  test("group changes arrive as member events, and levels and settings changed elsewhere as their own", async () => {
    for (const user of ["mia", "ned", "ola"]) await server.request(user, "GET", "/v1/conversations");
    const ned = open(clientFor(server, "ned"));
    const members = record(ned, "member");
    const levels = record(ned, "level");
    const settings = record(ned, "notifications");
    ned.connect();
    await eventually("live", () => ned.state === "live");
    const group = await server.chat("group", "mia", ["ned"], "Plans");
    await server.request("mia", "POST", `/v1/conversations/${group}/members`, { members: ["ola"] });
    await server.request("mia", "PATCH", `/v1/conversations/${group}`, { title: "Plans 2" });
    await server.request("mia", "DELETE", `/v1/conversations/${group}/members/ola`);
    await eventually("three member events", () => members.length === 3, { detail: () => JSON.stringify(members.map(({ message }) => message.event)) });
    assert.deepEqual(members.map(({ message }) => message.event.type), ["member_added", "renamed", "member_removed"]);
    assert.deepEqual(members[0].message.event.members.map(({ id }) => id), ["ola"]);
    // Ned's other device changes a level and his settings.
    await server.request("ned", "PUT", `/v1/conversations/${group}/notifications`, { level: "mentions" });
    await server.request("ned", "PUT", "/v1/me/notifications", { defaultLevel: "mentions" });
    await eventually("the level and the settings", () => levels.length === 1 && settings.length === 1);
    assert.deepEqual(levels[0], { conversation: group, level: "mentions", until: null });
    assert.equal(settings[0].defaultLevel, "mentions");
  });

  test("the HTTP API: pages of history, the read marker, people, levels, mutes, settings and devices", async () => {
    const chat = await server.chat("group", "rob", ["sam"], "Paging & more");
    const rob = new HeraldClient({ url: server.url + "/", token: token("rob") });
    const { api } = rob;
    const stored = [];
    for (const text of ["1", "2", "3", "4", "5"]) stored.push(await api.postMessage(chat, { id: `m-${text}`, text }));
    assert.deepEqual((await api.postMessage(chat, { id: "m-1", text: "1" })).seq, stored[0].seq, "a retry is stored once");
    assert.deepEqual((await api.messages(chat, { before: stored[4].seq, limit: 2 })).map(({ text }) => text), ["3", "4"]);
    assert.deepEqual((await api.messages(chat, { after: stored[0].seq, limit: 2 })).map(({ text }) => text), ["2", "3"]);
    const seen = await api.conversation(chat);
    assert.equal(seen.title, "Paging & more");
    assert.deepEqual([...seen.members].sort(), ["rob", "sam"]);
    const sam = new HeraldClient({ url: server.url, token: token("sam") }).api;
    assert.equal((await sam.conversation(chat)).unreadCount, 5);
    await sam.markRead(chat, stored[2].seq);
    assert.equal((await sam.conversation(chat)).unreadCount, 2);
    assert.deepEqual((await api.users("sa")).users.map(({ id }) => id), ["sam"]);

    await sam.setMuted(chat, true);
    assert.deepEqual((await sam.conversations({ muted: true })).conversations.map(({ id }) => id), [chat]);
    await sam.setLevel(chat, "mentions", new Date(Date.now() + 3_600_000));
    const [leveled] = (await sam.conversations({ levelSet: true })).conversations;
    assert.equal(leveled.level, "mentions");
    assert.ok(Date.parse(leveled.levelUntil) > Date.now());
    await sam.setLevel(chat, null);
    assert.deepEqual((await sam.conversations({ levelSet: true })).conversations, []);
    const snoozed = await sam.snooze(new Date(Date.now() + 600_000));
    assert.ok(Date.parse(snoozed.snoozeUntil) > Date.now());
    assert.equal((await sam.changeNotificationSettings({ defaultLevel: "mentions" })).defaultLevel, "mentions");
    assert.equal((await sam.snooze(null)).snoozeUntil, null);

    // Edit and delete: the sender edits; the message is a tombstone once deleted; another's is not theirs to change.
    const edited = await api.editMessage(chat, "m-5", { text: "five", mentions: ["sam"] });
    assert.ok(edited.edited && edited.text === "five" && edited.seq === stored[4].seq);
    assert.deepEqual(edited.mentions, ["sam"]);
    await assert.rejects(sam.editMessage(chat, "m-5", { text: "mine" }), (error) => error.code === "not_the_sender" && error.status === 403);
    const tombstone = await api.deleteMessage(chat, "m-5");
    assert.ok(tombstone.deleted && tombstone.text === null);
    assert.equal(messagePreview(tombstone), "This message was deleted");
    await assert.rejects(api.deleteMessage(chat, "m-5"), (error) => error.code === "message_deleted" && error.status === 409);
    const [last] = (await sam.messages(chat, { limit: 3 })).filter((entry) => entry.kind === "message").slice(-1);
    assert.ok(last.deleted && last.id === "m-5");

    const { deviceKey } = await sam.registerDevice("sams-phone", "expo", "ExponentPushToken[abcdefghijklmnopqrstuv]");
    assert.match(deviceKey, /^hdk_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual((await sam.devices()).map(({ id, platform }) => [id, platform]), [["sams-phone", "expo"]]);
    await sam.removeDevice("sams-phone");
    assert.deepEqual(await sam.devices(), []);
    await assert.rejects(sam.removeDevice("sams-phone"), (error) => error.code === "not_found" && error.status === 404);
    await assert.rejects(sam.registerDevice("x", "expo", "not a token"), (error) => error.code === "invalid_request");
  });

  test("a Reply whose id another member took first is posted under a random one; a repeat of one's own is stored once", async () => {
    const chat = await server.chat("group", "ann", ["max"], "Replies");
    const ann = new HeraldClient({ url: server.url, token: token("ann") }).api;
    const max = new HeraldClient({ url: server.url, token: token("max") }).api;
    const answer = notificationAnswer(replyAction, { conversationId: chat, seq: "1" }, "yes");
    await max.postMessage(chat, { id: answer.messageId, text: "squatted" });
    await assert.rejects(ann.postMessage(chat, { id: answer.messageId, text: "yes" }), (error) => error.code === "id_conflict");
    const reply = await ann.postReply(chat, { id: answer.messageId, text: answer.text });
    assert.equal(reply.text, "yes");
    assert.equal(reply.senderId, "ann");
    assert.match(reply.id, new RegExp(`^${answer.messageId}-[0-9a-f]{16}$`));
    const own = await ann.postReply(chat, { id: "reply-2-0000000000000001", text: "ok" });
    assert.equal((await ann.postReply(chat, { id: "reply-2-0000000000000001", text: "ok" })).seq, own.seq, "stored once");
  });

  test("rate-limited sends wait as long as the server says and are all stored, once each", async () => {
    const limited = await Server.start({ HERALD_LIMIT_POSTS_PER_SECOND: "2", HERALD_LIMIT_POST_BURST: "2" });
    try {
      const chat = await limited.chat("direct", "pat", ["quinn"]);
      const pat = open(new HeraldClient({ url: limited.url, token: token("pat") }));
      pat.connect();
      await eventually("live", () => pat.state === "live");
      const texts = ["1", "2", "3", "4", "5"];
      const stored = await bounded("every send stored", Promise.all(texts.map((text) => pat.send(chat, text))), 20_000);
      assert.equal(new Set(stored.map(({ seq }) => seq)).size, 5);
      const history = await limited.request("quinn", "GET", `/v1/conversations/${chat}/messages`);
      assert.deepEqual(history.messages.map(({ text }) => text).sort(), texts);
      pat.close();
    } finally {
      await limited.close();
    }
  });
});
