// Herald's web client: sign-in, the conversation list, the chat, and the wiring of the stream into the engine.
// Everything from the network is shown with textContent, never as markup. The API, the stream and the engine are
// the JavaScript package's (clients/js), which the server serves at /herald/.
import { API, APIError } from "/herald/api.js";
import { HeraldClient } from "/herald/client.js";
import { cleanText, safeImageURL } from "/herald/presentation.js";
import { Banners, avatar } from "./banners.js";
import {
  defaultSettings, displayName, entryLine, eventEnds, findMentions, groupTitle, initials, levelAt, mentionCompletions, namesUser,
  notificationIdentifier,
  preview, senderName,
} from "/herald/engine.js";
import { deviceID, renewWebPush, turnWebPushOff, turnWebPushOn, webPushIsOn, webPushOwner, webPushSupported } from "./push.js";
import { dayLabel, fullStamp, listStamp, timeOfDay } from "./time.js";

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
    session.client.close();
    session.banners.close();
    session = null;
  }
  showSignIn(message);
}

// ---------------------------------------------------------------------------------------------------------------
// The session

/**
 * A fresh token for `me` when the one in use expired: the demo's sign-in gives one for the same person on a demo
 * server; elsewhere there is none (the page then signs out, saying so). The client shares one renewal between its
 * API and its stream.
 */
function tokenRenewal(me) {
  return async () => {
    const { token } = await API.demoToken(me.id);
    if (session?.me.id === me.id) sessionStorage.setItem(tokenKey, token);
    return token;
  };
}

/** The name a token's claims give: its `name`, else its email's local part (as the server takes it), else none
 * (shown as "Someone"): never the raw id. */
function claimedName(who) {
  if (typeof who.name === "string" && who.name.trim() !== "") return who.name;
  const email = typeof who.email === "string" ? who.email : "";
  return email.includes("@") ? email.slice(0, email.lastIndexOf("@")).trim() : "";
}

function start(token, who) {
  const me = { id: who.sub, name: claimedName(who) };
  const client = new HeraldClient({ token, renew: tokenRenewal(me), device: deviceID() });
  session = {
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
  const current = session;
  client.on("frame", (frame) => current === session && frame.type !== "ack" && frame.type !== "error" && receive(frame));
  client.on("error", (frame) => current === session && session.banners.general(frame.message, "danger"));
  client.on("state", (state) => current === session && connectionChanged(state));
  client.on("open", () => current === session && backOnline());
  client.on("tokenRefused", (frame) => current === session && signOut(`Signed out: ${frame.message} (${frame.code}).`));
  client.setAppState(document.hidden ? "background" : "foreground");
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("me-name").textContent = cleanText(displayName(me.name));
  $("me-avatar").replaceChildren(avatar({ name: me.name, id: me.id, initials: initials(me.name) }));
  $("coalesce").checked = localStorage.getItem(coalesceKey) === "1";
  $("conversations").replaceChildren();
  showChat(null);
  updateNotifyButton();
  showPushSwitch();
  client.connect();
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
  session.banners.send({ type: "settings", settings: session.settings });
  for (const conversation of session.conversations.values()) {
    if (conversation.level) session.banners.send({ type: "level", conversation: conversation.id, choice: choiceOf(conversation) });
  }
  if (session.open) session.banners.send({ type: "open", conversation: session.open });
}

/** After every (re)connection (the client has told the server the focus and app state again): back after a loss,
 * say so first (the catch-up's banners follow), and take the stale "Connection lost" away if it is still up. */
function backOnline() {
  if (session.lostBanner) {
    if (session.banners.visibleID === session.lostBanner) session.banners.send({ type: "dismiss" });
    session.lostBanner = null;
    session.banners.general("Back online", "success");
  }
}

function connectionChanged(state) {
  const label = { connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…" }[state];
  if (!label) return; // "closed" and "refused": the page signs out
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

/** `ready`: read the list (unread counts, mutes, new chats), then handle what waited (the client sends the unsent
 * messages again itself). Frames that arrive while the list is read wait for it, so none counts against a list that
 * is then replaced. */
async function becameLive() {
  const current = session;
  session.loaded = false;
  try {
    settingsChanged(await session.api.notificationSettings());
    await loadConversations();
  } catch (error) {
    if (error instanceof APIError && error.status === 401) {
      signOut(`Signed out: ${error.message} (${error.code}).`);
    } else {
      current.client.stream.restart();
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
  if (session.open) {
    await refreshChat(session.open);
    markRead();
  }
}

function handle(frame) {
  switch (frame.type) {
    case "message": messageArrived(frame); break;
    case "level":
      session.choiceFrames += 1;
      levelChanged(frame.conversation, frame.level, frame.until);
      break;
    case "notifications":
      session.choiceFrames += 1;
      settingsChanged(frame.settings);
      break;
    case "pushed":
      // This browser's Web Push showed it (or will): the page posts no notification of its own for it.
      session.banners.send({ type: "pushed", conversation: frame.conversation, message: frame.message });
      break;
    default: break;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Conversations

async function loadConversations() {
  const all = [];
  let cursor = null;
  for (let page = 0; page < 20; page += 1) {
    const { conversations, next } = await session.api.conversations({ cursor });
    all.push(...conversations);
    if (!next) break;
    cursor = next;
  }
  const known = session.conversations;
  // The server lists newest activity first; a chat with no message yet keeps its place by the one above it.
  let activity = session.client.lastSeq ?? 0;
  for (const conversation of all) {
    activity = conversation.lastMessage?.seq ?? activity;
    conversation.activity = activity;
  }
  session.conversations = new Map(all.map((conversation) => [conversation.id, conversation]));
  // A group one was just removed from stays, saying so, until the page is loaded again.
  for (const [id, conversation] of known) {
    if (conversation.removed && !session.conversations.has(id)) session.conversations.set(id, conversation);
  }
  for (const conversation of all) {
    const before = known.get(conversation.id);
    if ((before?.level ?? null) !== conversation.level || (before?.levelUntil ?? null) !== conversation.levelUntil) {
      session.banners.send({ type: "level", conversation: conversation.id, choice: choiceOf(conversation) });
    }
  }
  renderList();
  if (session.open && session.conversations.has(session.open)) renderChatHeader();
}

/** A member of `conversation` as the engine takes a sender: id and name (the id when no name is known). */
function personIn(conversation, id) {
  const person = conversation?.people?.find((p) => p.id === id);
  return { id, name: person?.name ?? id, avatarURL: person?.avatarURL ?? null };
}

/** An entry's line in the list and the chat: a message's text, or an event's words as this user reads them. */
function lineOf(conversation, message) {
  if (message.kind !== "event") return preview(message.text, message.imageURL != null);
  return entryLine({ message, conversation, sender: personIn(conversation, message.senderId) }, session.me.id) ?? "";
}

/** What an event changes in the conversation as this page holds it. */
function applyEvent(conversation, message) {
  const { event } = message;
  const ids = (event.members ?? []).map((member) => member.id);
  conversation.people ??= [];
  conversation.owners ??= [];
  const without = (list, gone) => list.filter((id) => !gone.includes(id));
  switch (event.type) {
    case "member_added":
      for (const member of event.members) {
        if (!conversation.members.includes(member.id)) conversation.members.push(member.id);
        if (!conversation.people.some((person) => person.id === member.id)) conversation.people.push({ ...member });
      }
      if (ids.includes(session.me.id)) conversation.removed = false;
      break;
    case "member_removed":
      conversation.members = without(conversation.members, ids);
      conversation.owners = without(conversation.owners, ids);
      break;
    case "member_left":
      conversation.members = without(conversation.members, [message.senderId]);
      conversation.owners = without(conversation.owners, [message.senderId]);
      break;
    case "renamed": conversation.title = event.title; break;
    case "owner_added": conversation.owners = [...new Set([...conversation.owners, ...ids])]; break;
    case "owner_removed": conversation.owners = without(conversation.owners, ids); break;
    case "deleted": conversation.members = []; break;
    default: break;
  }
  if (eventEnds(event, message.senderId, session.me.id)) conversation.removed = true;
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
    const head = document.createElement("span");
    head.className = "conversation-head";
    const title = document.createElement("span");
    title.className = "conversation-name";
    title.textContent = cleanText(name);
    head.append(title);
    const last = conversation.lastMessage;
    if (last?.createdAt) {
      const when = new Date(last.createdAt);
      const stamp = document.createElement("time");
      stamp.className = "conversation-time";
      stamp.dateTime = when.toISOString();
      stamp.title = fullStamp(when);
      stamp.textContent = listStamp(when);
      head.append(stamp);
    }
    const lineRow = document.createElement("span");
    lineRow.className = "conversation-line";
    const line = document.createElement("span");
    line.className = "conversation-preview";
    line.textContent = last
      ? cleanText((last.senderId === session.me.id && last.kind !== "event" ? "You: " : "") + lineOf(conversation, last))
      : "No messages yet";
    lineRow.append(line);
    const level = levelNow(conversation);
    if (level === "nothing") lineRow.append(mutedMark());
    if (level === "mentions") lineRow.append(mentionsMark());
    if (conversation.unreadCount > 0) {
      const unread = document.createElement("span");
      // A muted chat's count is there, quietly: grey, and left out of the tab's total (unless the settings say).
      unread.className = level === "nothing" ? "unread quiet" : "unread";
      unread.textContent = conversation.unreadCount >= 1000 ? "999+" : String(conversation.unreadCount);
      unread.setAttribute("aria-label", `${conversation.unreadCount} unread${level === "nothing" ? ", muted" : ""}`);
      lineRow.append(unread);
    }
    text.append(head, lineRow);
    button.append(avatar({ name, id: other?.id ?? conversation.id, url: other?.avatarURL, initials: initials(name) }), text);
    button.addEventListener("click", () => openChat(conversation.id));
    item.append(button);
    return item;
  }));
  const counted = (c) => session.settings.badgeCountsMuted || levelNow(c) !== "nothing";
  const total = conversations.reduce((sum, c) => sum + (counted(c) ? c.unreadCount : 0), 0);
  document.title = total > 0 ? `(${total}) Herald` : "Herald";
}

/** The mentions-only mark of a chat in the list. */
function mentionsMark() {
  const mark = document.createElement("span");
  mark.className = "level-mark";
  mark.textContent = "@";
  mark.setAttribute("role", "img");
  mark.setAttribute("aria-label", "Mentions only");
  mark.title = "Mentions only";
  return mark;
}

const svgNS = "http://www.w3.org/2000/svg";

/** The muted mark of a chat in the list: a bell with a line through it. */
function mutedMark() {
  const mark = document.createElementNS(svgNS, "svg");
  mark.setAttribute("class", "muted-mark");
  mark.setAttribute("viewBox", "0 0 24 24");
  mark.setAttribute("role", "img");
  mark.setAttribute("aria-label", "Muted");
  const path = document.createElementNS(svgNS, "path");
  path.setAttribute("d", "M12 22a2 2 0 0 0 2-2h-4a2 2 0 0 0 2 2zm6-6v-5c0-3.1-1.6-5.6-4.5-6.3V4a1.5 1.5 0 0 0-3 "
    + "0v.7c-.6.1-1.1.4-1.6.7L18 16.5zM3.3 2.3 2 3.6l3.3 3.3A7 7 0 0 0 6 11v5l-2 2v1h14.2l2.2 2.2 1.3-1.3z");
  mark.append(path);
  return mark;
}

// ---------------------------------------------------------------------------------------------------------------
// A new chat: people are picked from those the server lets one find (GET /v1/users), never typed as ids

/** What the new-chat form holds: the people picked, and the search under way. */
const picker = { picked: new Map(), search: 0, timer: null, addingTo: null };

/** The people picker, for a new chat, or (`addingTo`, a group's id) for people to add to a group. */
function openNewChat(addingTo = null) {
  const form = $("new-chat");
  form.reset();
  picker.picked.clear();
  picker.addingTo = addingTo;
  $("new-chat-error").textContent = "";
  document.body.classList.toggle("adding", addingTo !== null);
  if (addingTo !== null) form.elements.kind.value = "group";
  $("new-chat-start").textContent = addingTo !== null ? "Add" : "Start";
  document.body.classList.remove("new-group");
  form.hidden = false;
  renderPicked();
  searchPeople();
  $("people-search").focus();
}

function closeNewChat() {
  $("new-chat").hidden = true;
  picker.addingTo = null;
  document.body.classList.remove("adding");
  clearTimeout(picker.timer);
  picker.search += 1;
}

function isGroup() {
  return $("new-chat").elements.kind.value === "group";
}

/** Searches as the person types (a quarter second after the last key), the latest search winning. */
function searchSoon() {
  clearTimeout(picker.timer);
  picker.timer = setTimeout(searchPeople, 250);
}

async function searchPeople() {
  if (!session || $("new-chat").hidden) return;
  const search = ++picker.search;
  const query = $("people-search").value.trim();
  let found;
  try {
    found = (await session.api.users(query)).users;
  } catch (error) {
    if (search === picker.search) $("people-note").textContent = `Could not search: ${error.message}`;
    return;
  }
  if (search !== picker.search) return;
  const members = picker.addingTo !== null ? session.conversations.get(picker.addingTo)?.members ?? [] : [];
  const choices = found.filter((person) => !picker.picked.has(person.id) && !members.includes(person.id));
  $("people-note").textContent = choices.length > 0 ? ""
    : found.length > 0 ? "Everyone found is picked."
      : query ? "No one found by that name among the people you can find."
        : "No one to add yet: people appear here once you share a chat with them.";
  $("people-results").replaceChildren(...choices.map((person) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "person";
    button.dataset.user = person.id;
    const name = displayName(person.name);
    const label = document.createElement("span");
    label.className = "person-text";
    const strong = document.createElement("strong");
    strong.textContent = cleanText(name);
    const id = document.createElement("span");
    id.className = "person-id";
    id.textContent = cleanText(person.id);
    label.append(strong, id);
    button.append(avatar({ name, id: person.id, url: person.avatarURL, initials: initials(name) }), label);
    button.addEventListener("click", () => pick(person));
    item.append(button);
    return item;
  }));
}

/** Picks a person: a direct chat is with one (the newest pick), a group with any number. */
function pick(person) {
  if (!isGroup()) picker.picked.clear();
  picker.picked.set(person.id, person);
  $("people-search").value = "";
  renderPicked();
  searchPeople();
  $("people-search").focus();
}

function renderPicked() {
  $("picked").replaceChildren(...[...picker.picked.values()].map((person) => {
    const item = document.createElement("li");
    item.className = "chip";
    item.dataset.user = person.id;
    const name = document.createElement("span");
    name.textContent = cleanText(displayName(person.name));
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "chip-remove";
    remove.textContent = "×";
    remove.setAttribute("aria-label", `Remove ${cleanText(displayName(person.name))}`);
    remove.addEventListener("click", () => {
      picker.picked.delete(person.id);
      renderPicked();
      searchPeople();
    });
    item.append(name, remove);
    return item;
  }));
  $("new-chat-start").disabled = picker.picked.size === 0;
}

async function newChat(event) {
  event.preventDefault();
  const form = $("new-chat");
  const kind = isGroup() ? "group" : "direct";
  const members = [...picker.picked.keys()];
  $("new-chat-error").textContent = "";
  if (members.length === 0) return;
  if (picker.addingTo !== null) {
    try {
      await session.api.addMembers(picker.addingTo, members, $("new-history").checked ? "full" : "none");
      closeNewChat();
    } catch (error) {
      $("new-chat-error").textContent = `${error.message} (${error.code})`;
    }
    return;
  }
  try {
    const conversation = await session.api.createConversation({ kind, members, title: $("new-chat-title").value.trim() });
    closeNewChat();
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
  session.client.focus(id);
  // A tapped banner's conversation is already open in the engine; any other way of opening tells it.
  if (!fromBanner) session.banners.send({ type: "open", conversation: id });
  showChat(id);
  renderList();
  refreshChat(id).then(markRead);
}

function closeChat() {
  session.open = null;
  session.client.focus(null);
  session.banners.send({ type: "open", conversation: null });
  showChat(null);
  renderList();
}

function showChat(id) {
  document.body.classList.toggle("chat-open", id !== null);
  closeLevelMenu();
  closeMentionList();
  $("no-chat").hidden = id !== null;
  $("chat-header").hidden = id === null;
  $("messages").hidden = id === null;
  $("composer").hidden = id === null;
  $("removed").hidden = true;
  $("group-panel").hidden = true;
  $("members-button").setAttribute("aria-expanded", "false");
  $("messages").replaceChildren();
  $("messages").setAttribute("aria-busy", "true");
  if (id === null) return;
  renderChatHeader();
  renderMessages(id, { toBottom: true });
}

function renderChatHeader() {
  const conversation = session.conversations.get(session.open);
  $("chat-title").textContent = cleanText(nameOf(conversation));
  const muted = conversation.level === "nothing" && !conversation.levelUntil;
  $("mute").textContent = muted ? "Unmute" : "Mute";
  $("mute").setAttribute("aria-pressed", String(muted));
  const level = levelNow(conversation);
  const until = conversation.level && conversation.levelUntil ? ` until ${untilText(conversation.levelUntil)}` : "";
  $("level-button").textContent = `Notify: ${levelWords[level]}${conversation.level ? until : ""}`;
  for (const item of $("level-menu").querySelectorAll("[data-level]")) {
    const chosen = item.dataset.level === "default" ? !conversation.level : item.dataset.level === conversation.level;
    item.setAttribute("aria-checked", String(chosen));
  }
  // A group one is no longer in says so and takes no more messages.
  const removed = conversation.removed === true;
  $("removed").hidden = !removed;
  $("composer").hidden = removed;
  $("mute").hidden = removed;
  $("level-button").hidden = removed;
  if (removed) closeLevelMenu();
  $("members-button").hidden = conversation.kind !== "group" || removed;
  if (removed || conversation.kind !== "group") $("group-panel").hidden = true;
  renderGroupPanel();
}

/** The group panel: members and owners; owners rename, add, remove and make owners; anyone leaves. */
function renderGroupPanel() {
  const conversation = session.conversations.get(session.open);
  if (!conversation || $("group-panel").hidden) return;
  const owners = conversation.owners ?? [];
  const owner = owners.includes(session.me.id);
  document.body.classList.toggle("group-owner", owner);
  if (document.activeElement !== $("rename-title")) $("rename-title").value = conversation.title ?? "";
  const act = (label, run) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary";
    button.textContent = label;
    button.addEventListener("click", () => groupChange(run));
    return button;
  };
  $("members").replaceChildren(...[...conversation.members].sort().map((id) => {
    const item = document.createElement("li");
    item.dataset.user = id;
    const name = document.createElement("span");
    name.className = "member-name";
    name.textContent = cleanText(id === session.me.id ? "You" : displayName(personIn(conversation, id).name));
    item.append(name);
    if (owners.includes(id)) {
      const tag = document.createElement("span");
      tag.className = "owner-tag";
      tag.textContent = "owner";
      item.append(tag);
    }
    if (owner && id !== session.me.id) {
      if (!owners.includes(id)) item.append(act("Make owner", () => session.api.setOwner(conversation.id, id, true)));
      item.append(act("Remove", () => session.api.removeMember(conversation.id, id)));
    }
    return item;
  }));
}

/** Runs a change to the open group; what it changed comes back as an event on the stream. */
async function groupChange(run) {
  $("group-error").textContent = "";
  try {
    await run();
  } catch (error) {
    $("group-error").textContent = `${error.message} (${error.code})`;
  }
}

function toggleGroupPanel() {
  const panel = $("group-panel");
  panel.hidden = !panel.hidden;
  $("members-button").setAttribute("aria-expanded", String(!panel.hidden));
  $("group-error").textContent = "";
  renderGroupPanel();
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
    if (message.kind === "event") {
      // An event is a quiet line of its own, in the words of docs/behaviour.md.
      item.className = "event";
      item.dataset.id = message.id;
      item.textContent = cleanText(lineOf(conversation, message));
      return item;
    }
    const mine = message.senderId === session.me.id;
    item.className = `message${mine ? " mine" : ""}`;
    // A message that names the user (or everyone) stands out.
    if (!mine && namesUser(message, session.me.id)) item.classList.add("mention");
    item.dataset.id = message.id;
    const send = session.pending.get(message.id);
    if (mine && message.seq == null) item.classList.add(send?.failed ? "failed" : "pending");
    const system = message.senderId === "";
    if (system) item.classList.add("system");
    if (!mine && (conversation?.kind === "group" || system)) {
      const sender = document.createElement("span");
      sender.className = "sender";
      sender.textContent = system
        ? senderName({ id: "" })
        : cleanText(displayName(names.get(message.senderId) ?? message.senderName ?? message.senderId));
      item.append(sender);
    }
    const picture = safeImageURL(message.imageURL);
    if (picture) {
      // Only http and https pictures load, without a referrer; one that fails says so in words.
      const link = document.createElement("a");
      link.className = "picture";
      link.href = picture;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      const image = document.createElement("img");
      image.alt = "Picture";
      image.loading = "lazy";
      image.referrerPolicy = "no-referrer";
      image.addEventListener("error", () => link.replaceChildren(preview(null, true)), { once: true });
      image.src = picture;
      link.append(image);
      item.append(link);
    }
    if (message.text) {
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = cleanText(message.text);
      item.append(text);
    } else if (message.imageURL && !picture) {
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = preview(null, true);
      item.append(text);
    }
    const meta = document.createElement("span");
    meta.className = "meta";
    if (message.seq == null) {
      meta.textContent = send?.failed ? "Not sent" : "Sending…";
    } else {
      const when = new Date(message.createdAt);
      const stamp = document.createElement("time");
      stamp.dateTime = when.toISOString();
      stamp.title = fullStamp(when);
      stamp.textContent = timeOfDay(when);
      meta.append(stamp);
    }
    item.append(meta);
    return item;
  }).flatMap((item, index) => withDay(chat(id).messages, index, item)));
  if (toBottom || nearBottom) list.scrollTop = list.scrollHeight;
}

/** `item` (the message at `index`), after a day's heading when it is the first of its day. */
function withDay(messages, index, item) {
  const message = messages[index];
  const at = message.createdAt ? new Date(message.createdAt) : new Date();
  const before = index > 0 ? messages[index - 1] : null;
  const previous = before ? (before.createdAt ? new Date(before.createdAt) : new Date()) : null;
  if (previous && previous.toDateString() === at.toDateString()) return [item];
  const day = document.createElement("li");
  day.className = "day";
  day.setAttribute("role", "separator");
  day.textContent = dayLabel(at);
  return [day, item];
}

function messageArrived(frame) {
  const { message, conversation: about, sender } = frame;
  const event = message.kind === "event";
  // An entry this page cannot read (a newer server's) is left out.
  if (message.kind !== "message" && !(event && message.event && entryLine({ message, conversation: about, sender }) !== null)) return;
  let conversation = session.conversations.get(message.conversationId);
  if (!conversation) {
    // A chat someone else just started: shown at once from the frame, completed by the next read of the list.
    conversation = {
      id: about.id, kind: about.kind, title: about.title, members: [session.me.id, sender.id],
      people: [{ id: sender.id, name: sender.name, avatarURL: sender.avatarURL }],
      lastMessage: null, unreadCount: 0, readUpTo: 0, muted: false, level: null, levelUntil: null,
    };
    session.conversations.set(conversation.id, conversation);
    loadConversations().catch(() => {});
  }
  const isNew = !conversation.lastMessage || message.seq > conversation.lastMessage.seq;
  if (isNew) {
    conversation.lastMessage = message;
    // An event is never unread.
    if (!event && message.senderId !== session.me.id && message.seq > conversation.readUpTo) conversation.unreadCount += 1;
    if (event) {
      applyEvent(conversation, message);
      if (!conversation.people.some((person) => person.id === sender.id)) conversation.people.push({ ...sender });
      if (session.open === conversation.id) renderChatHeader();
    }
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
  if (!session?.open || text.trim() === "" || session.conversations.get(session.open)?.removed) return;
  const id = crypto.randomUUID();
  const conversation = session.open;
  // Mentions: the members named with `@` in the text (completion writes their names), and `@all`.
  const members = (session.conversations.get(conversation).people ?? []).filter((person) => person.id !== session.me.id);
  const { ids: mentions, all: mentionsAll } = findMentions(text, members);
  const pending = { conversation, text, mentions, mentionsAll, failed: false };
  session.pending.set(id, pending);
  insertMessage(conversation, { id, conversationId: conversation, senderId: session.me.id, text, imageURL: null, seq: null });
  box.value = "";
  closeMentionList();
  renderMessages(conversation, { toBottom: true });
  // The client sends it now if live, else when the stream is live again, under the same id, until stored.
  const current = session;
  session.client.send(conversation, text, { id, mentions, mentionsAll }).then(
    ({ seq }) => current === session && acknowledged(id, seq),
    (error) => current === session && refused(id, error),
  );
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

/** A send refused for good (the client waits out `rate_limited` itself): it stays in the chat, marked unsent. */
function refused(id, error) {
  const send = session.pending.get(id);
  if (!send) return;
  send.failed = true;
  session.banners.general(`Message not sent: ${error.message}`, "danger");
  if (session.open === send.conversation) renderMessages(send.conversation);
}

// ---------------------------------------------------------------------------------------------------------------
// Who hears what: a chat's level (all, mentions, nothing; for a while or for ever), the settings, mentions

const levelWords = { all: "all", mentions: "mentions", nothing: "nothing" };

/** A chat's own level as the engine takes it: {level, until} or null (the default). */
function choiceOf(conversation) {
  return conversation.level ? { level: conversation.level, until: conversation.levelUntil ?? null } : null;
}

/** The level in force now: the chat's own while it holds, else the default. */
function levelNow(conversation) {
  return levelAt(choiceOf(conversation), session.settings, Date.now());
}

/** An instant as the menu and the settings say it: the time today, else the day and time. */
function untilText(iso) {
  const when = new Date(iso);
  const today = new Date().toDateString() === when.toDateString();
  return today ? timeOfDay(when) : `${dayLabel(when)} ${timeOfDay(when)}`;
}

/** When a choice made now for `span` ("always", "1h", "8h", "tomorrow") ends, as ISO; null for ever. */
function endOf(span) {
  if (span === "1h" || span === "8h") return new Date(Date.now() + parseInt(span, 10) * 3600_000).toISOString();
  if (span === "tomorrow") {
    const when = new Date();
    when.setDate(when.getDate() + 1);
    when.setHours(8, 0, 0, 0);
    return when.toISOString();
  }
  return null;
}

/** A chat's level changed (here, or on another device: the stream's `level` frame). */
function levelChanged(id, level, until) {
  const conversation = session.conversations.get(id);
  if (conversation) {
    conversation.level = level ?? null;
    conversation.levelUntil = level ? until ?? null : null;
  }
  session.banners.send({ type: "level", conversation: id, choice: level ? { level, until: until ?? null } : null });
  levelsChanged();
}

/** The settings changed (here, or on another device: the `notifications` frame). */
function settingsChanged(settings) {
  session.settings = { ...defaultSettings(), ...settings };
  session.banners.send({ type: "settings", settings: session.settings });
  renderSettings();
  levelsChanged();
}

/** Redraws what levels show, and again when the next `until` (or snooze) ends. */
function levelsChanged() {
  renderList();
  if (session.open) renderChatHeader();
  clearTimeout(session.levelTimer);
  const ends = [...session.conversations.values()].map((c) => c.levelUntil).concat(session.settings.snoozeUntil)
    .filter(Boolean).map((iso) => Date.parse(iso)).filter((at) => at > Date.now());
  if (ends.length === 0) return;
  const current = session;
  session.levelTimer = setTimeout(() => current === session && levelsChanged(), Math.min(...ends) - Date.now() + 50);
}

async function toggleMute() {
  const conversation = session?.conversations.get(session.open);
  if (!conversation) return;
  const muted = !(conversation.level === "nothing" && !conversation.levelUntil);
  const frames = session.choiceFrames;
  try {
    await session.api.setMuted(conversation.id, muted);
    // The stream's `level` frame says the same; one that came meanwhile may be newer (another device's).
    if (session.choiceFrames === frames) levelChanged(conversation.id, muted ? "nothing" : null, null);
  } catch (error) {
    session.banners.general(`Could not change the mute: ${error.message}`, "danger");
  }
}

function toggleLevelMenu() {
  const open = $("level-menu").hidden;
  $("level-menu").hidden = !open;
  $("level-button").setAttribute("aria-expanded", String(open));
  if (open) $("level-menu").querySelector("[aria-checked=true]")?.focus();
}

function closeLevelMenu() {
  $("level-menu").hidden = true;
  $("level-button").setAttribute("aria-expanded", "false");
}

async function chooseLevel(choice) {
  const id = session?.open;
  if (!id) return;
  const level = choice === "default" ? null : choice;
  const until = level ? endOf($("level-for").value) : null;
  closeLevelMenu();
  const frames = session.choiceFrames;
  try {
    await session.api.setLevel(id, level, until);
    if (session.choiceFrames === frames) levelChanged(id, level, until);
  } catch (error) {
    session.banners.general(`Could not change the notifications: ${error.message}`, "danger");
  }
}

const weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/** The settings panel's notification part, from the settings. */
function renderSettings() {
  const settings = session.settings;
  $("default-level").value = settings.defaultLevel;
  const snoozed = settings.snoozeUntil && Date.parse(settings.snoozeUntil) > Date.now();
  if (!snoozed) $("snooze").value = "off";
  $("snooze-status").textContent = snoozed ? `Snoozed until ${untilText(settings.snoozeUntil)}` : "";
  const quiet = settings.quietHours[0];
  $("quiet-on").checked = Boolean(quiet);
  $("quiet-fields").hidden = !quiet;
  if (quiet) {
    $("quiet-start").value = quiet.start;
    $("quiet-end").value = quiet.end === "24:00" ? "00:00" : quiet.end;
    for (const box of $("quiet-days").querySelectorAll("input")) box.checked = quiet.days.includes(box.value);
  }
  fillTimeZones(settings.timeZone);
  $("quiet-mentions").checked = settings.mentionsDuringQuietHours;
  $("badge-muted").checked = settings.badgeCountsMuted;
}

/** The time zones, the user's (or the browser's) chosen. */
function fillTimeZones(chosen) {
  const select = $("time-zone");
  const browser = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (select.options.length === 0) {
    const zones = new Set(Intl.supportedValuesOf?.("timeZone") ?? []);
    zones.add(browser);
    if (chosen) zones.add(chosen);
    select.replaceChildren(...[...zones].sort().map((zone) => new Option(zone, zone)));
  }
  select.value = chosen ?? browser;
}

async function changeSettings(change) {
  $("settings-error").textContent = "";
  const frames = session.choiceFrames;
  try {
    const kept = await session.api.changeNotificationSettings(change);
    // The stream's `notifications` frame brings the same; one that came meanwhile may be newer (another device's).
    if (session.choiceFrames === frames) settingsChanged(kept);
  } catch (error) {
    $("settings-error").textContent = `Not saved: ${error.message}`;
    renderSettings();
  }
}

function quietHoursFromPanel() {
  const days = [...$("quiet-days").querySelectorAll("input:checked")].map((box) => box.value);
  const end = $("quiet-end").value === "00:00" ? "24:00" : $("quiet-end").value;
  return {
    timeZone: $("time-zone").value,
    quietHours: [{ days, start: $("quiet-start").value, end }],
    mentionsDuringQuietHours: $("quiet-mentions").checked,
  };
}

function wireSettings() {
  $("quiet-days").replaceChildren(...weekdays.map((day) => {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = day;
    box.checked = true;
    label.append(box, ` ${day[0].toUpperCase()}${day.slice(1)}`);
    return label;
  }));
  $("default-level").addEventListener("change", () => changeSettings({ defaultLevel: $("default-level").value }));
  $("snooze").addEventListener("change", () => {
    const span = $("snooze").value;
    changeSettings({ snoozeUntil: span === "off" ? null : endOf(span) });
  });
  $("quiet-on").addEventListener("change", () => {
    if ($("quiet-on").checked) {
      $("quiet-fields").hidden = false;
      fillTimeZones(session.settings.timeZone);
      changeSettings(quietHoursFromPanel());
    } else {
      changeSettings({ quietHours: [] });
    }
  });
  $("quiet-save").addEventListener("click", () => changeSettings(quietHoursFromPanel()));
  $("quiet-mentions").addEventListener("change", () => changeSettings({ mentionsDuringQuietHours: $("quiet-mentions").checked }));
  $("badge-muted").addEventListener("change", () => changeSettings({ badgeCountsMuted: $("badge-muted").checked }));
  $("level-button").addEventListener("click", toggleLevelMenu);
  for (const item of $("level-menu").querySelectorAll("[data-level]")) {
    item.addEventListener("click", () => chooseLevel(item.dataset.level));
  }
  $("level-menu").addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      closeLevelMenu();
      $("level-button").focus();
    }
  });
}

// @ completion: the open chat's members' names (and "all") for the word after an `@`

function mentionWord() {
  const box = $("composer-text");
  const before = box.value.slice(0, box.selectionStart);
  const match = /(^|[^\p{L}\p{N}])@([^\s@]*)$/u.exec(before);
  return match ? { prefix: match[2], start: before.length - match[2].length - 1 } : null;
}

function updateMentionList() {
  const list = $("mention-list");
  const word = session?.open ? mentionWord() : null;
  const members = (session?.conversations.get(session.open)?.people ?? []).filter((person) => person.id !== session.me.id);
  const names = word ? mentionCompletions(word.prefix, members).slice(0, 8) : [];
  if (names.length === 0) {
    closeMentionList();
    return;
  }
  list.replaceChildren(...names.map((name, index) => {
    const option = document.createElement("li");
    option.role = "option";
    option.id = `mention-${index}`;
    option.textContent = name === "all" ? "@all (everyone)" : `@${cleanText(name)}`;
    option.dataset.name = name;
    option.setAttribute("aria-selected", String(index === 0));
    option.addEventListener("mousedown", (event) => {
      event.preventDefault();
      completeMention(name);
    });
    return option;
  }));
  list.hidden = false;
  $("composer-text").setAttribute("aria-activedescendant", "mention-0");
}

function closeMentionList() {
  $("mention-list").hidden = true;
  $("composer-text").removeAttribute("aria-activedescendant");
}

function completeMention(name) {
  const box = $("composer-text");
  const word = mentionWord();
  if (!word) return;
  const insert = `@${name} `;
  box.value = box.value.slice(0, word.start) + insert + box.value.slice(box.selectionStart);
  box.selectionStart = box.selectionEnd = word.start + insert.length;
  closeMentionList();
  box.focus();
}

/** Arrow keys move through the names, Enter or Tab takes one, Escape closes the list; true when it took the key. */
function mentionKey(event) {
  const list = $("mention-list");
  if (list.hidden) return false;
  const options = [...list.children];
  const current = options.findIndex((option) => option.getAttribute("aria-selected") === "true");
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    const next = (current + (event.key === "ArrowDown" ? 1 : options.length - 1)) % options.length;
    options.forEach((option, index) => option.setAttribute("aria-selected", String(index === next)));
    $("composer-text").setAttribute("aria-activedescendant", options[next].id);
  } else if (event.key === "Enter" || event.key === "Tab") {
    completeMention(options[Math.max(0, current)].dataset.name);
  } else if (event.key === "Escape") {
    closeMentionList();
  } else {
    return false;
  }
  event.preventDefault();
  return true;
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

/** The engine's `local` effect: a system notification, one per message, tagged as the message's Web Push is
 *  (`herald-<seq>`: one replaces the other). */
function postSystemNotification(notification) {
  if (!notificationsPermitted()) return;
  try {
    const shown = new Notification(cleanText(notification.title), {
      body: cleanText(notification.body),
      silent: notification.silent === true, // quiet hours
      tag: notificationIdentifier(notification),
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
  session.client.setAppState(document.hidden ? "background" : "foreground");
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
    if ($("new-chat").hidden) openNewChat();
    else closeNewChat();
  });
  $("new-chat-cancel").addEventListener("click", closeNewChat);
  $("new-chat").addEventListener("submit", newChat);
  for (const radio of $("new-chat").elements.kind) {
    radio.addEventListener("change", () => {
      document.body.classList.toggle("new-group", isGroup());
      // A direct chat is with one person: the first picked stays.
      if (!isGroup() && picker.picked.size > 1) {
        const [first] = picker.picked.values();
        picker.picked = new Map([[first.id, first]]);
        renderPicked();
      }
    });
  }
  $("people-search").addEventListener("input", searchSoon);
  $("people-search").addEventListener("keydown", (event) => {
    // Enter picks the first person found, as a search box with suggestions does.
    if (event.key === "Enter") {
      event.preventDefault();
      $("people-results").querySelector("button")?.click();
    }
  });
  $("composer").addEventListener("submit", send);
  $("composer-text").addEventListener("input", updateMentionList);
  $("composer-text").addEventListener("blur", closeMentionList);
  $("composer-text").addEventListener("keydown", (event) => {
    if (!event.isComposing && mentionKey(event)) return;
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
  wireSettings();
  $("members-button").addEventListener("click", toggleGroupPanel);
  $("add-members").addEventListener("click", () => openNewChat(session.open));
  $("leave").addEventListener("click", () => groupChange(() => session.api.removeMember(session.open, session.me.id)));
  $("rename").addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    groupChange(() => session.api.rename(session.open, $("rename-title").value.trim()));
  });
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

/** Whether a token from a link may sign in here in place of `current`: at once when no one is signed in or it is
 * the same user's; otherwise only if the person says so. A link made by someone else must not switch this tab to
 * their account unasked (login CSRF: what one then writes would go to them). */
function mayTakeLinkedToken(token, current) {
  if (!current || token === current) return true;
  const from = claims(current), to = claims(token);
  if (!from || !to || from.sub === to.sub) return true;
  const name = (who) => cleanText(displayName(who.name ?? who.sub));
  return window.confirm(`This link signs in as ${name(to)}. Sign out ${name(from)} and continue as ${name(to)}?`);
}

/** A link opened in a tab that is already open (`/#token=…` or `/#chat=…`): the token signs in, in place of whoever
 * was signed in (asking first when that is someone else); the chat opens. Either way the address is cleaned at once. */
window.addEventListener("hashchange", () => {
  const token = readFragment();
  if (token && token !== session?.api.token) {
    if (!mayTakeLinkedToken(token, session?.api.token)) return;
    if (session) signOut();
    signIn(token);
  } else if (chatToOpen !== null && session?.loaded) {
    openChat(chatToOpen);
    chatToOpen = null;
  }
});

wire();
const stored = sessionStorage.getItem(tokenKey) ?? localStorage.getItem(tokenKey);
const linked = readFragment();
const token = linked && mayTakeLinkedToken(linked, stored) ? linked : stored;
if (token) signIn(token);
else showSignIn();
