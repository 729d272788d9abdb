// Herald's web client: sign-in, the conversation list, the chat, and the wiring of the stream into the engine.
// Everything from the network is shown with textContent, never as markup.
import { API, APIError, Stream } from "./api.js";
import { Banners, avatar, cleanText } from "./banners.js";
import { displayName, groupTitle, initials, preview } from "./engine.js";
import { deviceID, renewWebPush, turnWebPushOff, turnWebPushOn, webPushIsOn, webPushOwner, webPushSupported } from "./push.js";

const $ = (id) => document.getElementById(id);
const tokenKey = "herald.token";
const coalesceKey = "herald.coalesce";
const historyPage = 50;

/** Everything the signed-in page knows. */
let session = null;

/** A chat to open once the list is loaded: a notification's click names one (`/#chat=<id>`). */
let chatToOpen = null;

// ---------------------------------------------------------------------------------------------------------------
// Sign-in

/** The claims of a token (its middle part), or null when it is not a JWT. The server checks the signature. */
function claims(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    const value = JSON.parse(new TextDecoder().decode(bytes));
    return typeof value.sub === "string" ? value : null;
  } catch {
    return null;
  }
}

/** A token handed over in the address (`/#token=…`) is taken and removed from the address bar at once; so is a
 * chat to open (`/#chat=<id>`, from a notification's click). */
function readFragment() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get("token");
  chatToOpen = fragment.get("chat");
  if (token === null && chatToOpen === null) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return token?.trim() ?? null;
}

async function showSignIn(message = "") {
  $("app").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  document.title = "Herald";
  const people = await API.demoPeople();
  const box = $("demo-people");
  box.replaceChildren();
  box.hidden = !people;
  for (const person of people ?? []) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.user = person.id;
    button.textContent = `Continue as ${cleanText(person.name)}`;
    button.addEventListener("click", async () => {
      try {
        const { token } = await API.demoToken(person.id);
        signIn(token);
      } catch (error) {
        $("sign-in-error").textContent = error.message;
      }
    });
    box.append(button);
  }
}

function signIn(token) {
  const who = claims(token);
  if (!who) {
    showSignIn("That is not a Herald token.");
    return;
  }
  sessionStorage.setItem(tokenKey, token);
  start(token, who);
}

function signOut(message = "") {
  sessionStorage.removeItem(tokenKey);
  localStorage.removeItem(tokenKey);
  if (session) {
    // This browser stops being told about the user's messages: unsubscribed, and the device removed while the token
    // still works.
    if (webPushOwner() !== null) turnWebPushOff(session.api);
    session.stream.stop();
    session.banners.close();
    session = null;
  }
  showSignIn(message);
}

// ---------------------------------------------------------------------------------------------------------------
// The session

function start(token, who) {
  const me = { id: who.sub, name: typeof who.name === "string" ? who.name : who.sub };
  const api = new API(token);
  session = {
    api,
    me,
    conversations: new Map(),
    chats: new Map(), // conversation id → {messages: [], complete, loading}
    pending: new Map(), // client id → {conversation, text, failed}
    open: null,
    live: false,
    loaded: false,
    held: [], // frames that arrived before the list was loaded
    banners: null,
    stream: null,
  };
  makeBanners();
  const current = session;
  session.stream = new Stream({
    token,
    device: deviceID(),
    onFrame: (frame) => current === session && receive(frame),
    onState: (state) => current === session && connectionChanged(state),
    onOpen: () => current === session && sayWhereIAm(),
    onRefused: (frame) => current === session && signOut(`Signed out: ${frame.message} (${frame.code}).`),
  });
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("me-name").textContent = cleanText(me.name);
  $("me-avatar").replaceChildren(avatar({ name: me.name, id: me.id, initials: initials(me.name) }));
  $("coalesce").checked = localStorage.getItem(coalesceKey) === "1";
  $("conversations").replaceChildren();
  showChat(null);
  updateNotifyButton();
  showPushSwitch();
  session.stream.start();
}

/** The banner engine and its view, told what the page knows (coalescing is a setting: changing it makes a new one). */
function makeBanners() {
  session.banners?.close();
  session.banners = new Banners({
    layer: $("banner-layer"),
    userID: session.me.id,
    coalesce: localStorage.getItem(coalesceKey) === "1",
    onNavigate: (conversation) => openChat(conversation, { fromBanner: true }),
    onLocal: postSystemNotification,
  });
  tellEngineAboutPermission();
  tellEngineAboutVisibility();
  for (const conversation of session.conversations.values()) {
    if (conversation.muted) session.banners.send({ type: "mute", conversation: conversation.id });
  }
  if (session.open) session.banners.send({ type: "open", conversation: session.open });
}

/** After every (re)connection: the server keeps focus and app state per connection. Back after a loss, say so
 * first (the catch-up's banners follow), and take the stale "Connection lost" away if it is still up. */
function sayWhereIAm() {
  session.stream.send({ type: "focus", conversation: session.open });
  session.stream.send({ type: "app", state: document.hidden ? "background" : "foreground" });
  if (session.lostBanner) {
    if (session.banners.visibleID === session.lostBanner) session.banners.send({ type: "dismiss" });
    session.lostBanner = null;
    session.banners.general("Back online", "success");
  }
}

function connectionChanged(state) {
  const label = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" }[state];
  $("connection").dataset.state = state;
  $("connection").textContent = label;
  if (state === "reconnecting" && session.live) {
    session.live = false;
    session.lostBanner = session.banners.general("Connection lost", "warning");
  }
}

async function receive(frame) {
  if (frame.type === "ready") {
    await becameLive();
    return;
  }
  if (!session.loaded) {
    session.held.push(frame);
    return;
  }
  handle(frame);
}

/** `ready`: read the list (unread counts, mutes, new chats), then handle what waited, then resend unsent messages.
 * Frames that arrive while the list is read wait for it, so none counts against a list that is then replaced. */
async function becameLive() {
  const current = session;
  session.loaded = false;
  try {
    await loadConversations();
  } catch (error) {
    if (error instanceof APIError && error.status === 401) {
      signOut(`Signed out: ${error.message} (${error.code}).`);
    } else {
      current.stream.restart();
    }
    return;
  }
  if (current !== session) return;
  const held = session.held;
  session.held = [];
  session.loaded = true;
  for (const frame of held) handle(frame);
  session.live = true;
  if (chatToOpen !== null) {
    openChat(chatToOpen);
    chatToOpen = null;
  }
  for (const [id, send] of session.pending) {
    if (!send.failed) session.stream.send({ type: "send", conversation: send.conversation, id, text: send.text });
  }
  if (session.open) {
    await refreshChat(session.open);
    markRead();
  }
}

function handle(frame) {
  switch (frame.type) {
    case "message": messageArrived(frame); break;
    case "ack": acknowledged(frame.id, frame.seq); break;
    case "error": refused(frame); break;
    case "muted": mutedChanged(frame.conversation, frame.muted); break;
    default: break;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Conversations

async function loadConversations() {
  const all = [];
  let cursor = null;
  for (let page = 0; page < 20; page += 1) {
    const { conversations, next } = await session.api.conversations(cursor);
    all.push(...conversations);
    if (!next) break;
    cursor = next;
  }
  const known = session.conversations;
  // The server lists newest activity first; a chat with no message yet keeps its place by the one above it.
  let activity = session.stream.lastSeq ?? 0;
  for (const conversation of all) {
    activity = conversation.lastMessage?.seq ?? activity;
    conversation.activity = activity;
  }
  session.conversations = new Map(all.map((conversation) => [conversation.id, conversation]));
  for (const conversation of all) {
    const before = known.get(conversation.id);
    if (!before || before.muted !== conversation.muted) {
      session.banners.send({ type: conversation.muted ? "mute" : "unmute", conversation: conversation.id });
    }
  }
  const people = new Map();
  for (const conversation of all) for (const person of conversation.people ?? []) people.set(person.id, person);
  $("known-people").replaceChildren(...[...people.values()].filter((p) => p.id !== session.me.id).map((person) => {
    const option = document.createElement("option");
    option.value = person.id;
    option.label = cleanText(person.name);
    return option;
  }));
  renderList();
  if (session.open && session.conversations.has(session.open)) renderChatHeader();
}

/** What a conversation is called here: a group's title, or the other person's name. */
function nameOf(conversation) {
  if (conversation.kind === "group") return groupTitle(conversation.title);
  const otherID = conversation.members.find((id) => id !== session.me.id) ?? session.me.id;
  const other = conversation.people?.find((person) => person.id === otherID);
  return displayName(other ? other.name : otherID);
}

function activity(conversation) {
  return Math.max(conversation.lastMessage?.seq ?? 0, conversation.activity ?? 0);
}

function renderList() {
  const list = $("conversations");
  const conversations = [...session.conversations.values()].sort((a, b) => activity(b) - activity(a) || (a.id < b.id ? -1 : 1));
  list.replaceChildren(...conversations.map((conversation) => {
    const item = document.createElement("li");
    item.dataset.conversation = conversation.id;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "conversation";
    if (conversation.id === session.open) button.setAttribute("aria-current", "true");
    const name = nameOf(conversation);
    const other = conversation.kind === "direct"
      ? conversation.people?.find((person) => person.id !== session.me.id) : null;
    const text = document.createElement("span");
    text.className = "conversation-text";
    const title = document.createElement("span");
    title.className = "conversation-name";
    title.textContent = cleanText(name);
    const last = conversation.lastMessage;
    const line = document.createElement("span");
    line.className = "conversation-preview";
    line.textContent = last
      ? cleanText((last.senderId === session.me.id ? "You: " : "") + preview(last.text, last.imageURL != null))
      : "No messages yet";
    text.append(title, line);
    button.append(avatar({ name, id: other?.id ?? conversation.id, url: other?.avatarURL, initials: initials(name) }), text);
    if (conversation.muted) {
      const muted = document.createElement("span");
      muted.className = "muted-mark";
      muted.textContent = "muted";
      button.append(muted);
    }
    if (conversation.unreadCount > 0) {
      const unread = document.createElement("span");
      unread.className = "unread";
      unread.textContent = conversation.unreadCount >= 1000 ? "999+" : String(conversation.unreadCount);
      unread.setAttribute("aria-label", `${conversation.unreadCount} unread`);
      button.append(unread);
    }
    button.addEventListener("click", () => openChat(conversation.id));
    item.append(button);
    return item;
  }));
  const total = conversations.reduce((sum, c) => sum + (c.muted ? 0 : c.unreadCount), 0);
  document.title = total > 0 ? `(${total}) Herald` : "Herald";
}

async function newChat(event) {
  event.preventDefault();
  const form = $("new-chat");
  const kind = form.elements.kind.value;
  const members = $("new-chat-members").value.split(",").map((id) => id.trim()).filter(Boolean);
  $("new-chat-error").textContent = "";
  if (kind === "direct" && members.length !== 1) {
    $("new-chat-error").textContent = "A direct chat is with exactly one person.";
    return;
  }
  try {
    const conversation = await session.api.createConversation({ kind, members, title: $("new-chat-title").value.trim() });
    form.reset();
    form.hidden = true;
    if (!session.conversations.has(conversation.id)) {
      session.conversations.set(conversation.id, { ...conversation, lastMessage: null, unreadCount: 0, readUpTo: 0, muted: false, activity: Number.MAX_SAFE_INTEGER });
    }
    renderList();
    openChat(conversation.id);
  } catch (error) {
    $("new-chat-error").textContent = `${error.message} (${error.code})`;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The chat

function openChat(id, { fromBanner = false } = {}) {
  if (!session || !session.conversations.has(id)) return;
  session.open = id;
  session.stream.send({ type: "focus", conversation: id });
  // A tapped banner's conversation is already open in the engine; any other way of opening tells it.
  if (!fromBanner) session.banners.send({ type: "open", conversation: id });
  showChat(id);
  renderList();
  refreshChat(id).then(markRead);
}

function closeChat() {
  session.open = null;
  session.stream.send({ type: "focus", conversation: null });
  session.banners.send({ type: "open", conversation: null });
  showChat(null);
  renderList();
}

function showChat(id) {
  document.body.classList.toggle("chat-open", id !== null);
  $("no-chat").hidden = id !== null;
  $("chat-header").hidden = id === null;
  $("messages").hidden = id === null;
  $("composer").hidden = id === null;
  $("messages").replaceChildren();
  $("messages").setAttribute("aria-busy", "true");
  if (id === null) return;
  renderChatHeader();
  renderMessages(id, { toBottom: true });
}

function renderChatHeader() {
  const conversation = session.conversations.get(session.open);
  $("chat-title").textContent = cleanText(nameOf(conversation));
  $("mute").textContent = conversation.muted ? "Unmute" : "Mute";
  $("mute").setAttribute("aria-pressed", String(conversation.muted));
}

function chat(id) {
  let value = session.chats.get(id);
  if (!value) {
    value = { messages: [], complete: false, loading: false };
    session.chats.set(id, value);
  }
  return value;
}

/** Reads the newest page and merges it in (first open, or after a reconnect). */
async function refreshChat(id) {
  const current = session;
  try {
    const messages = await session.api.messages(id, { limit: historyPage });
    if (current !== session) return;
    const value = chat(id);
    if (value.messages.length === 0 && messages.length < historyPage) value.complete = true;
    for (const message of messages) insertMessage(id, message);
    if (session.open === id) {
      renderMessages(id, { toBottom: true });
      $("messages").setAttribute("aria-busy", "false");
    }
  } catch (error) {
    if (current === session && session.open === id) session.banners.general(`Could not load the chat: ${error.message}`, "danger");
  }
}

/** Older messages, when scrolled to the top. */
async function loadOlder() {
  const id = session?.open;
  if (!id) return;
  const value = chat(id);
  const oldest = value.messages.find((message) => message.seq != null);
  if (value.loading || value.complete || !oldest) return;
  value.loading = true;
  try {
    const messages = await session.api.messages(id, { before: oldest.seq, limit: historyPage });
    if (messages.length < historyPage) value.complete = true;
    const list = $("messages");
    const fromBottom = list.scrollHeight - list.scrollTop;
    for (const message of messages) insertMessage(id, message);
    if (session.open === id) {
      renderMessages(id);
      list.scrollTop = list.scrollHeight - fromBottom;
    }
  } catch {
    // Tried again on the next scroll.
  } finally {
    value.loading = false;
  }
}

/** Adds a message to a loaded chat in `seq` order (unsent ones last), replacing its pending copy. */
function insertMessage(id, message) {
  const { messages } = chat(id);
  const index = messages.findIndex((existing) => existing.id === message.id && existing.senderId === message.senderId);
  if (index >= 0) {
    if (messages[index].seq != null) return false;
    messages.splice(index, 1);
  }
  let at = messages.length;
  if (message.seq != null) {
    while (at > 0 && (messages[at - 1].seq == null || messages[at - 1].seq > message.seq)) at -= 1;
  }
  messages.splice(at, 0, message);
  return true;
}

function renderMessages(id, { toBottom = false } = {}) {
  const list = $("messages");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const conversation = session.conversations.get(id);
  const names = new Map((conversation?.people ?? []).map((person) => [person.id, person.name]));
  list.replaceChildren(...chat(id).messages.map((message) => {
    const item = document.createElement("li");
    const mine = message.senderId === session.me.id;
    item.className = `message${mine ? " mine" : ""}`;
    item.dataset.id = message.id;
    const send = session.pending.get(message.id);
    if (mine && message.seq == null) item.classList.add(send?.failed ? "failed" : "pending");
    if (!mine && conversation?.kind === "group") {
      const sender = document.createElement("span");
      sender.className = "sender";
      sender.textContent = cleanText(displayName(names.get(message.senderId) ?? message.senderName ?? message.senderId));
      item.append(sender);
    }
    if (message.text) {
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = cleanText(message.text);
      item.append(text);
    } else if (message.imageURL) {
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = preview(null, true);
      item.append(text);
    }
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = message.seq == null
      ? (send?.failed ? "Not sent" : "Sending…")
      : new Date(message.createdAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    item.append(meta);
    return item;
  }));
  if (toBottom || nearBottom) list.scrollTop = list.scrollHeight;
}

function messageArrived(frame) {
  const { message, conversation: about, sender } = frame;
  let conversation = session.conversations.get(message.conversationId);
  if (!conversation) {
    // A chat someone else just started: shown at once from the frame, completed by the next read of the list.
    conversation = {
      id: about.id, kind: about.kind, title: about.title, members: [session.me.id, sender.id],
      people: [{ id: sender.id, name: sender.name, avatarURL: sender.avatarURL }],
      lastMessage: null, unreadCount: 0, readUpTo: 0, muted: false,
    };
    session.conversations.set(conversation.id, conversation);
    loadConversations().catch(() => {});
  }
  const isNew = !conversation.lastMessage || message.seq > conversation.lastMessage.seq;
  if (isNew) {
    conversation.lastMessage = message;
    if (message.senderId !== session.me.id && message.seq > conversation.readUpTo) conversation.unreadCount += 1;
  }
  if (message.senderId === session.me.id) acknowledged(message.id, message.seq);
  if (session.chats.has(conversation.id)) {
    insertMessage(conversation.id, { ...message, senderName: sender.name });
    if (session.open === conversation.id) renderMessages(conversation.id);
  }
  renderList();
  if (session.open === conversation.id) markRead();
  // The first connection has no `after`, so it brings no history: every message is news. After a reconnect the
  // catch-up is news too; the engine skips any it has already seen.
  session.banners.send({
    type: "message",
    incoming: { message, conversation: about, sender: { id: sender.id, name: sender.name, avatarURL: sender.avatarURL } },
  });
}

/** Sends the read marker for the open chat, while the page is visible. */
function markRead() {
  if (!session?.open || document.hidden) return;
  const conversation = session.conversations.get(session.open);
  const latest = conversation?.lastMessage?.seq ?? 0;
  if (!conversation || latest <= conversation.readUpTo) return;
  conversation.readUpTo = latest;
  conversation.unreadCount = 0;
  renderList();
  session.api.markRead(conversation.id, latest, deviceID()).catch(() => {});
}

function send(event) {
  event?.preventDefault();
  const box = $("composer-text");
  const text = box.value;
  if (!session?.open || text.trim() === "") return;
  const id = crypto.randomUUID();
  const conversation = session.open;
  session.pending.set(id, { conversation, text, failed: false });
  insertMessage(conversation, { id, conversationId: conversation, senderId: session.me.id, text, imageURL: null, seq: null });
  box.value = "";
  renderMessages(conversation, { toBottom: true });
  // Unsent now (offline), it goes with the others when the stream is live again, under the same id.
  if (session.live) session.stream.send({ type: "send", conversation, id, text });
}

function acknowledged(id, seq) {
  const send = session.pending.get(id);
  if (!send) return;
  session.pending.delete(id);
  const value = session.chats.get(send.conversation);
  const message = value?.messages.find((m) => m.id === id && m.senderId === session.me.id);
  if (message && message.seq == null) {
    message.seq = seq;
    message.createdAt = message.createdAt ?? new Date().toISOString();
    if (session.open === send.conversation) renderMessages(send.conversation);
  }
}

function refused(frame) {
  const send = frame.ref ? session.pending.get(frame.ref) : null;
  if (!send) {
    session.banners.general(frame.message, "danger");
    return;
  }
  if (frame.code === "rate_limited") {
    setTimeout(() => {
      if (session?.pending.get(frame.ref) === send && session.live) {
        session.stream.send({ type: "send", conversation: send.conversation, id: frame.ref, text: send.text });
      }
    }, (frame.retryAfter ?? 1) * 1000);
    return;
  }
  send.failed = true;
  session.banners.general(`Message not sent: ${frame.message}`, "danger");
  if (session.open === send.conversation) renderMessages(send.conversation);
}

function mutedChanged(id, muted) {
  const conversation = session.conversations.get(id);
  if (conversation) conversation.muted = muted;
  session.banners.send({ type: muted ? "mute" : "unmute", conversation: id });
  renderList();
  if (session.open === id) renderChatHeader();
}

async function toggleMute() {
  const conversation = session?.conversations.get(session.open);
  if (!conversation) return;
  const muted = !conversation.muted;
  try {
    await session.api.setMuted(conversation.id, muted);
    mutedChanged(conversation.id, muted); // the stream's `muted` frame says the same, maybe first
  } catch (error) {
    session.banners.general(`Could not change the mute: ${error.message}`, "danger");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Away from the page: visibility and system notifications

function notificationsPermitted() {
  return "Notification" in window && Notification.permission === "granted";
}

function tellEngineAboutPermission() {
  session?.banners.send({ type: "permission", granted: notificationsPermitted() });
}

function tellEngineAboutVisibility() {
  session?.banners.send({ type: "app", state: document.hidden ? "background" : "foreground" });
}

function updateNotifyButton() {
  $("notify-button").hidden = !("Notification" in window) || Notification.permission !== "default";
}

async function askNotificationPermission() {
  if (!("Notification" in window)) return;
  try {
    await Notification.requestPermission();
  } catch {
    // Refused or unsupported: nothing, silently.
  }
  updateNotifyButton();
  tellEngineAboutPermission();
}

/** The engine's `local` effect: a system notification, one per message (its conversation and id are the tag). */
function postSystemNotification(notification) {
  if (!notificationsPermitted()) return;
  try {
    const shown = new Notification(cleanText(notification.title), {
      body: cleanText(notification.body),
      tag: JSON.stringify([notification.thread, notification.message]),
      data: { conversation: notification.thread },
    });
    shown.addEventListener("click", () => {
      window.focus();
      openChat(notification.thread);
      shown.close();
    });
  } catch {
    // Some browsers allow notifications only from a service worker: nothing, silently.
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Notified when the tab is closed: Web Push (push.js), and the service worker's clicks

/** Shows the switch where the browser can do Web Push, set as this browser is. While it is on, the token is kept in
 * localStorage (not only the tab's sessionStorage), so a window a notification opens is signed in. */
async function showPushSwitch() {
  const current = session;
  const box = $("push-switch");
  $("push-setting").hidden = !webPushSupported();
  box.checked = false;
  if (!webPushSupported()) return;
  const owner = webPushOwner();
  if (owner !== null && owner !== current.me.id) {
    // Another person's subscription, left by a tab that was closed without signing out: not this user's to receive.
    await turnWebPushOff(null);
    localStorage.removeItem(tokenKey);
    return;
  }
  const on = await webPushIsOn(current.me.id);
  if (current !== session) return;
  box.checked = on;
  if (on) {
    localStorage.setItem(tokenKey, current.api.token);
    renewWebPush(current.api);
  }
}

async function pushSwitchChanged() {
  const current = session;
  if (!current) return;
  const box = $("push-switch");
  box.disabled = true;
  try {
    if (box.checked) {
      await turnWebPushOn(current.api, current.me.id);
      if (current === session) localStorage.setItem(tokenKey, current.api.token);
    } else {
      localStorage.removeItem(tokenKey);
      await turnWebPushOff(current.api);
    }
  } catch (error) {
    box.checked = false;
    await turnWebPushOff(current.api).catch(() => {});
    if (current === session) session.banners.general(`Could not turn on notifications: ${error.message}`, "danger");
  } finally {
    box.disabled = false;
    updateNotifyButton();
    tellEngineAboutPermission();
  }
}

/** The service worker's notification was clicked while a tab was open: that tab opens the chat. */
navigator.serviceWorker?.addEventListener("message", (event) => {
  const data = event.data;
  if (data?.type === "open" && typeof data.conversationId === "string") openChat(data.conversationId);
});

document.addEventListener("visibilitychange", () => {
  if (!session) return;
  session.stream.send({ type: "app", state: document.hidden ? "background" : "foreground" });
  tellEngineAboutVisibility();
  if (!document.hidden) markRead();
});

// ---------------------------------------------------------------------------------------------------------------
// Wiring

function wire() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    $("token-input").value = "";
    if (token) signIn(token);
  });
  $("sign-out").addEventListener("click", () => signOut());
  $("new-chat-button").addEventListener("click", () => {
    $("new-chat").hidden = !$("new-chat").hidden;
    if (!$("new-chat").hidden) $("new-chat-members").focus();
  });
  $("new-chat-cancel").addEventListener("click", () => { $("new-chat").hidden = true; });
  $("new-chat").addEventListener("submit", newChat);
  $("new-chat").addEventListener("change", () => {
    document.body.classList.toggle("new-group", $("new-chat").elements.kind.value === "group");
  });
  $("composer").addEventListener("submit", send);
  $("composer-text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  $("messages").addEventListener("scroll", () => {
    if ($("messages").scrollTop < 60) loadOlder();
  });
  $("back").addEventListener("click", closeChat);
  $("mute").addEventListener("click", toggleMute);
  $("notify-button").addEventListener("click", askNotificationPermission);
  $("push-switch").addEventListener("change", pushSwitchChanged);
  // Permission changed in the browser's settings: the engine follows (background messages, or nothing).
  navigator.permissions?.query({ name: "notifications" }).then((status) => {
    status.addEventListener("change", () => {
      updateNotifyButton();
      tellEngineAboutPermission();
    });
  }).catch(() => {});
  $("coalesce").addEventListener("change", () => {
    localStorage.setItem(coalesceKey, $("coalesce").checked ? "1" : "0");
    if (session) makeBanners();
  });
}

wire();
const token = readFragment() ?? sessionStorage.getItem(tokenKey) ?? localStorage.getItem(tokenKey);
if (token) signIn(token);
else showSignIn();
