// The signed-in session: the client, the banners, and what the stream brings: each frame changes the model
// (state.js) and the views that show it are drawn again (list.js, chat.js, composer.js's unsent messages), the
// banners and notifications told (banners.js, away.js). Above them all; signin.js starts it, and a refused token is
// announced ("refused") for app.js to sign out.

import {
  $, tokenKey, coalesceKey, page, announce, applyEvent, choiceOf, insertMessage, levelChanged, settingsChanged,
} from "./state.js";
import { API, APIError } from "/herald/api.js";
import { HeraldClient } from "/herald/client.js";
import { avatar, Banners } from "./banners.js";
import { cleanText } from "/herald/presentation.js";
import { amended, defaultSettings, displayName, entryLine, initials, isAmendment } from "/herald/engine.js";
import { deviceID, keepForWorker } from "./push.js";
import { renderList } from "./list.js";
import { markRead, openChat, refreshChat, renderChatHeader, renderMessages, showChat } from "./chat.js";
import { acknowledged, cancelEdit } from "./composer.js";
import {
  postSystemNotification, showPushSwitch, tellEngineAboutPermission, tellEngineAboutVisibility, updateNotifyButton,
  withdrawSystemNotification,
} from "./away.js";


/**
 * A fresh token for `me` when the one in use expired: the demo's sign-in gives one for the same person on a demo
 * server; elsewhere there is none (the page then signs out, saying so). The client shares one renewal between its
 * API and its stream.
 */
export function tokenRenewal(me) {
  return async () => {
    const { token } = await API.demoToken(me.id);
    if (page.session?.me.id === me.id) {
      sessionStorage.setItem(tokenKey, token);
      // Pushes on: the token a notification's window and the service worker use is renewed too.
      if (localStorage.getItem(tokenKey) !== null) {
        localStorage.setItem(tokenKey, token);
        keepForWorker(token);
      }
    }
    return token;
  };
}

/** The name a token's claims give: its `name`, else its email's local part (as the server takes it), else none
 * (shown as "Someone"): never the raw id. */
export function claimedName(who) {
  if (typeof who.name === "string" && who.name.trim() !== "") return who.name;
  const email = typeof who.email === "string" ? who.email : "";
  return email.includes("@") ? email.slice(0, email.lastIndexOf("@")).trim() : "";
}

export function start(token, who) {
  const me = { id: who.sub, name: claimedName(who) };
  const client = new HeraldClient({ token, renew: tokenRenewal(me), device: deviceID() });
  page.session = {
    client,
    api: client.api,
    me,
    conversations: new Map(),
    chats: new Map(), // conversation id → {messages: [], complete, loading}
    pending: new Map(), // client id → {conversation, text, failed}: sends the client has not had stored yet
    open: null,
    live: false,
    loaded: false,
    held: [], // frames that arrived before the list was loaded
    banners: null,
    settings: defaultSettings(), // who hears what (GET /v1/me/notifications), kept up to date by the stream
    levelTimer: null,
    choiceFrames: 0, // `level` and `notifications` frames so far: an answer older than one is not applied
  };
  makeBanners();
  const current = page.session;
  client.on("frame", (frame) => current === page.session && frame.type !== "ack" && frame.type !== "error" && receive(frame));
  client.on("error", (frame) => current === page.session && page.session.banners.general(frame.message, "danger"));
  client.on("state", (state) => current === page.session && connectionChanged(state));
  client.on("open", () => current === page.session && backOnline());
  client.on("tokenRefused", (frame) => current === page.session && announce("refused", `Signed out: ${frame.message} (${frame.code}).`));
  client.setAppState(document.hidden ? "background" : "foreground");
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("me-name").textContent = cleanText(displayName(me.name));
  $("me-avatar").replaceChildren(avatar({ name: me.name, id: me.id, initials: initials(me.name) }));
  $("coalesce").checked = localStorage.getItem(coalesceKey) === "1";
  $("conversations").replaceChildren();
  $("chat-search").value = "";
  showChat(null);
  updateNotifyButton();
  showPushSwitch();
  client.connect();
}

/** The banner engine and its view, told what the page knows (coalescing is a setting: changing it makes a new one). */
export function makeBanners() {
  page.session.banners?.close();
  page.session.banners = new Banners({
    layer: $("banner-layer"),
    userID: page.session.me.id,
    coalesce: localStorage.getItem(coalesceKey) === "1",
    onNavigate: (conversation) => openChat(conversation, { fromBanner: true }),
    onLocal: postSystemNotification,
    onWithdraw: withdrawSystemNotification,
  });
  tellEngineAboutPermission();
  tellEngineAboutVisibility();
  page.session.banners.send({ type: "settings", settings: page.session.settings });
  for (const conversation of page.session.conversations.values()) {
    if (conversation.level) page.session.banners.send({ type: "level", conversation: conversation.id, choice: choiceOf(conversation) });
  }
  if (page.session.open) page.session.banners.send({ type: "open", conversation: page.session.open });
}

/** After every (re)connection (the client has told the server the focus and app state again): back after a loss,
 * say so first (the catch-up's banners follow), and take the stale "Connection lost" away if it is still up. */
export function backOnline() {
  if (page.session.lostBanner) {
    if (page.session.banners.visibleID === page.session.lostBanner) page.session.banners.send({ type: "dismiss" });
    page.session.lostBanner = null;
    page.session.banners.general("Back online", "success");
  }
}

export function connectionChanged(state) {
  const label = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" }[state];
  if (!label) return; // "closed" and "refused": the page signs out
  $("connection").dataset.state = state;
  $("connection").textContent = label;
  if (state === "reconnecting" && page.session.live) {
    page.session.live = false;
    page.session.lostBanner = page.session.banners.general("Connection lost", "warning");
  }
}

export async function receive(frame) {
  if (frame.type === "ready") {
    await becameLive();
    return;
  }
  if (!page.session.loaded) {
    page.session.held.push(frame);
    return;
  }
  handle(frame);
}

/** Reads the list of chats (page by page) in place of the one held, tells the engine the levels that changed, and
 * draws the list and the open chat's header again. */
export async function loadConversations() {
  const all = [];
  let cursor = null;
  for (let round = 0; round < 20; round += 1) {
    const { conversations, next } = await page.session.api.conversations({ cursor });
    all.push(...conversations);
    if (!next) break;
    cursor = next;
  }
  const known = page.session.conversations;
  // The server lists newest activity first; a chat with no message yet keeps its place by the one above it.
  let activity = page.session.client.lastSeq ?? 0;
  for (const conversation of all) {
    activity = conversation.lastMessage?.seq ?? activity;
    conversation.activity = activity;
  }
  page.session.conversations = new Map(all.map((conversation) => [conversation.id, conversation]));
  // A group one was just removed from stays, saying so, until the page is loaded again.
  for (const [id, conversation] of known) {
    if (conversation.removed && !page.session.conversations.has(id)) page.session.conversations.set(id, conversation);
  }
  for (const conversation of all) {
    const before = known.get(conversation.id);
    if ((before?.level ?? null) !== conversation.level || (before?.levelUntil ?? null) !== conversation.levelUntil) {
      page.session.banners.send({ type: "level", conversation: conversation.id, choice: choiceOf(conversation) });
    }
  }
  renderList();
  if (page.session.open && page.session.conversations.has(page.session.open)) renderChatHeader();
}

/** `ready`: read the list (unread counts, mutes, new chats), then handle what waited (the client sends the unsent
 * messages again itself). Frames that arrive while the list is read wait for it, so none counts against a list that
 * is then replaced. */
export async function becameLive() {
  const current = page.session;
  page.session.loaded = false;
  try {
    settingsChanged(await page.session.api.notificationSettings());
    await loadConversations();
  } catch (error) {
    if (error instanceof APIError && error.status === 401) {
      announce("refused", `Signed out: ${error.message} (${error.code}).`);
    } else {
      current.client.stream.restart();
    }
    return;
  }
  if (current !== page.session) return;
  const held = page.session.held;
  page.session.held = [];
  page.session.loaded = true;
  renderList();
  for (const frame of held) handle(frame);
  page.session.live = true;
  if (page.chatToOpen !== null) {
    openChat(page.chatToOpen, { compose: page.composeOnOpen });
    page.composeOnOpen = false;
    page.chatToOpen = null;
  }
  if (page.session.open) {
    await refreshChat(page.session.open);
    markRead();
  }
}

export function handle(frame) {
  switch (frame.type) {
    case "message": messageArrived(frame); break;
    case "level":
      page.session.choiceFrames += 1;
      levelChanged(frame.conversation, frame.level, frame.until);
      break;
    case "notifications":
      page.session.choiceFrames += 1;
      settingsChanged(frame.settings);
      break;
    case "pushed":
      // This browser's Web Push showed it (or will): the page posts no notification of its own for it.
      page.session.banners.send({ type: "pushed", conversation: frame.conversation, message: frame.message });
      break;
    default: break;
  }
}

export function messageArrived(frame) {
  const { message, conversation: about, sender } = frame;
  const event = message.kind === "event";
  if (event && isAmendment(message.event)) {
    amendmentArrived(frame);
    return;
  }
  // An entry this page cannot read (a newer server's) is left out.
  if (message.kind !== "message" && !(event && message.event && entryLine({ message, conversation: about, sender }) !== null)) return;
  let conversation = page.session.conversations.get(message.conversationId);
  if (!conversation) {
    // A chat someone else just started: shown at once from the frame, completed by the next read of the list.
    conversation = {
      id: about.id, kind: about.kind, title: about.title, members: [page.session.me.id, sender.id],
      people: [{ id: sender.id, name: sender.name, avatarURL: sender.avatarURL }],
      lastMessage: null, unreadCount: 0, readUpTo: 0, muted: false, level: null, levelUntil: null,
    };
    page.session.conversations.set(conversation.id, conversation);
    loadConversations().catch(() => {});
  }
  const isNew = !conversation.lastMessage || message.seq > conversation.lastMessage.seq;
  if (isNew) {
    conversation.lastMessage = message;
    // An event is never unread.
    if (!event && message.senderId !== page.session.me.id && message.seq > conversation.readUpTo) conversation.unreadCount += 1;
    if (event) {
      applyEvent(conversation, message);
      if (!conversation.people.some((person) => person.id === sender.id)) conversation.people.push({ ...sender });
      if (page.session.open === conversation.id) renderChatHeader();
    }
  }
  if (message.senderId === page.session.me.id) acknowledged(message.id, message.seq);
  if (page.session.chats.has(conversation.id)) {
    insertMessage(conversation.id, { ...message, senderName: sender.name });
    if (page.session.open === conversation.id) renderMessages(conversation.id);
  }
  renderList();
  if (page.session.open === conversation.id) markRead();
  // The first connection has no `after`, so it brings no history: every message is news. After a reconnect the
  // catch-up is news too; the engine skips any it has already seen.
  page.session.banners.send({
    type: "message",
    incoming: { message, conversation: about, sender: { id: sender.id, name: sender.name, avatarURL: sender.avatarURL } },
  });
}

/** An edit or a deletion from the stream: its message changes in place (no line of its own), the list follows,
 *  and the engine takes the banner or notification of it along. */
function amendmentArrived(frame) {
  const { message: amendment, conversation: about, sender } = frame;
  const current = page.session;
  const conversation = current.conversations.get(amendment.conversationId);
  const loaded = current.chats.get(amendment.conversationId);
  const target = amendment.event.messageId;
  const index = loaded?.messages.findIndex((m) => m.id === target && m.kind !== "event") ?? -1;
  if (index >= 0) loaded.messages[index] = amended(loaded.messages[index], amendment);
  if (conversation?.lastMessage?.id === target && conversation.lastMessage.kind !== "event") {
    conversation.lastMessage = amended(conversation.lastMessage, amendment);
  }
  if (conversation && amendment.event.type === "message_deleted") {
    // A deleted message is no longer unread: the server's count says how many are.
    current.api.conversation(conversation.id).then((summary) => {
      if (current !== page.session) return;
      conversation.unreadCount = summary.unreadCount;
      renderList();
    }).catch(() => {});
  }
  if (current.editing?.id === target && amendment.event.type === "message_deleted") cancelEdit();
  if (current.open === amendment.conversationId) renderMessages(amendment.conversationId);
  renderList();
  current.banners.send({
    type: "message",
    incoming: { message: amendment, conversation: about, sender: { id: sender.id, name: sender.name, avatarURL: sender.avatarURL } },
  });
}
