// The composer: sending (at once, kept until the server has it), editing and deleting one's messages (their menu's
// clicks), and @ completion of the open chat's members' names. Above chat.js, whose messages it changes and draws
// again, and state.js.

import { $, chat, insertMessage, listen, page } from "./state.js";
import { renderMessages, replaceMessage } from "./chat.js";
import { cleanText } from "/herald/presentation.js";
import { confirmAction } from "./dialogs.js";
import { findMentions, mentionCompletions } from "/herald/engine.js";

export function wireComposer() {
  // Another chat (or none) in the pane: an edit of this one's message is left, the @ list closed.
  listen("chat shown", (id) => {
    if (page.session.editing && page.session.editing.conversation !== id) cancelEdit();
    closeMentionList();
  });
  $("composer").addEventListener("submit", send);
  $("cancel-edit").addEventListener("click", cancelEdit);
  $("messages").addEventListener("click", messageAction);
  $("composer-text").addEventListener("input", () => {
    updateMentionList();
    grow();
  });
  $("composer-text").addEventListener("blur", closeMentionList);
  $("composer-text").addEventListener("keydown", (event) => {
    if (!event.isComposing && mentionKey(event)) return;
    if (event.key === "Escape" && page.session?.editing) {
      cancelEdit();
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
}

/** The box grows with its text, up to its maximum height. */
function grow() {
  const box = $("composer-text");
  box.style.height = "auto";
  box.style.height = `${box.scrollHeight + 2}px`;
}

export function send(event) {
  event?.preventDefault();
  if (page.session?.editing && page.session.editing.conversation === page.session.open) {
    saveEdit();
    return;
  }
  const box = $("composer-text");
  const text = box.value;
  if (!page.session?.open || text.trim() === "" || page.session.conversations.get(page.session.open)?.removed) return;
  const id = crypto.randomUUID();
  const conversation = page.session.open;
  // Mentions: the members named with `@` in the text (completion writes their names), and `@all`.
  const members = (page.session.conversations.get(conversation).people ?? []).filter((person) => person.id !== page.session.me.id);
  const { ids: mentions, all: mentionsAll } = findMentions(text, members);
  const pending = { conversation, text, mentions, mentionsAll, failed: false };
  page.session.pending.set(id, pending);
  insertMessage(conversation, { id, conversationId: conversation, senderId: page.session.me.id, text, imageURL: null, seq: null });
  box.value = "";
  grow();
  closeMentionList();
  renderMessages(conversation, { toBottom: true });
  // The client sends it now if live, else when the stream is live again, under the same id, until stored.
  const current = page.session;
  page.session.client.send(conversation, text, { id, mentions, mentionsAll }).then(
    ({ seq }) => current === page.session && acknowledged(id, seq),
    (error) => current === page.session && refused(id, error),
  );
}

export function acknowledged(id, seq) {
  const send = page.session.pending.get(id);
  if (!send) return;
  page.session.pending.delete(id);
  const value = page.session.chats.get(send.conversation);
  const message = value?.messages.find((m) => m.id === id && m.senderId === page.session.me.id);
  if (message && message.seq == null) {
    message.seq = seq;
    message.createdAt = message.createdAt ?? new Date().toISOString();
    if (page.session.open === send.conversation) renderMessages(send.conversation);
  }
}

/** A send refused for good (the client waits out `rate_limited` itself): it stays in the chat, marked unsent. */
export function refused(id, error) {
  const send = page.session.pending.get(id);
  if (!send) return;
  send.failed = true;
  page.session.banners.general(`Message not sent: ${error.message}`, "danger");
  if (page.session.open === send.conversation) renderMessages(send.conversation);
}

/** A click in a message's menu: edit it in the composer, or delete it (asked first). */
export function messageAction(event) {
  const button = event.target.closest?.(".message-menu button");
  if (!button || !page.session?.open) return;
  button.closest("details").open = false;
  if (button.dataset.action === "edit") startEdit(button.dataset.message);
  else deleteMessage(button.dataset.message);
}

/** Puts the user's message `id` of the open chat in the composer, to be sent as an edit. */
export function startEdit(id) {
  const conversation = page.session.open;
  const message = chat(conversation).messages.find((m) => m.id === id && m.senderId === page.session.me.id && m.kind !== "event");
  if (!message || message.deleted) return;
  page.session.editing = { conversation, id };
  $("editing").hidden = false;
  const box = $("composer-text");
  box.value = message.text ?? "";
  box.focus();
}

/** Leaves editing: the composer is for new messages again. */
export function cancelEdit() {
  if (!page.session?.editing) return;
  page.session.editing = null;
  $("editing").hidden = true;
  $("composer-text").value = "";
}

/** Sends the composer's text as the edit of the message being edited. */
async function saveEdit() {
  const current = page.session;
  const { conversation, id } = current.editing;
  const text = $("composer-text").value;
  if (text.trim() === "") return;
  const members = (current.conversations.get(conversation)?.people ?? []).filter((person) => person.id !== current.me.id);
  const { ids: mentions, all: mentionsAll } = findMentions(text, members);
  try {
    const message = await current.api.editMessage(conversation, id, { text, mentions, mentionsAll });
    if (current !== page.session) return;
    cancelEdit();
    replaceMessage(conversation, message);
  } catch (error) {
    if (current === page.session) current.banners.general(`Not edited: ${error.message}`, "danger");
  }
}

/** Deletes the message `id` of the open chat for everyone, once the user says so. */
async function deleteMessage(id) {
  const current = page.session;
  const conversation = current.open;
  const asked = { title: "Delete this message?", text: "It is deleted for everyone in the chat, and its notifications with it.", action: "Delete" };
  if (!(await confirmAction(asked)) || current !== page.session) return;
  try {
    const tombstone = await current.api.deleteMessage(conversation, id);
    if (current !== page.session) return;
    if (current.editing?.id === id) cancelEdit();
    replaceMessage(conversation, tombstone);
  } catch (error) {
    if (current === page.session) current.banners.general(`Not deleted: ${error.message}`, "danger");
  }
}

// @ completion: the open chat's members' names (and "all") for the word after an `@`

export function mentionWord() {
  const box = $("composer-text");
  const before = box.value.slice(0, box.selectionStart);
  const match = /(^|[^\p{L}\p{N}])@([^\s@]*)$/u.exec(before);
  return match ? { prefix: match[2], start: before.length - match[2].length - 1 } : null;
}

export function updateMentionList() {
  const list = $("mention-list");
  const word = page.session?.open ? mentionWord() : null;
  const members = (page.session?.conversations.get(page.session.open)?.people ?? []).filter((person) => person.id !== page.session.me.id);
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

export function closeMentionList() {
  $("mention-list").hidden = true;
  $("composer-text").removeAttribute("aria-activedescendant");
}

export function completeMention(name) {
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
export function mentionKey(event) {
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
