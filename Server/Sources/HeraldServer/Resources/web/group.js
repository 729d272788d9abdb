// A group's details, in a side sheet: its name (owners rename it), its members with their pictures, who owns it;
// owners add people, make owners and remove members; anyone leaves. What would lose someone something is asked first.
// A view above state.js, dialogs.js, banners.js and list.js (the chat's avatar); the chat's header (chat.js) draws
// it again, and picking people to add is people.js's, handed in by app.js.

import { $, memberCount, nameOf, page, personIn } from "./state.js";
import { closeDialog, confirmAction, openDialog } from "./dialogs.js";
import { displayName, initials } from "/herald/engine.js";
import { chatAvatar } from "./list.js";
import { avatar } from "./banners.js";
import { cleanText } from "/herald/presentation.js";

export function openGroupPanel() {
  $("group-error").textContent = "";
  openDialog("group-panel", {
    onClose: () => $("members-button").setAttribute("aria-expanded", "false"),
  });
  $("members-button").setAttribute("aria-expanded", "true");
  renderGroupPanel();
}

/** The sheet, from the open group as the page holds it (redrawn as its events arrive). */
export function renderGroupPanel() {
  const conversation = page.session?.conversations.get(page.session.open);
  if (!$("group-panel").open) return;
  if (!conversation || conversation.kind !== "group" || conversation.removed) {
    closeDialog("group-panel");
    return;
  }
  const me = page.session.me.id;
  const owners = conversation.owners ?? [];
  const owner = owners.includes(me);
  const name = nameOf(conversation);
  document.body.classList.toggle("group-owner", owner);
  $("group-heading").textContent = cleanText(name);
  $("group-avatar").replaceChildren(chatAvatar(conversation));
  $("group-count").textContent = memberCount(conversation);
  if (document.activeElement !== $("rename-title")) $("rename-title").value = conversation.title ?? "";
  const members = [...conversation.members].sort((a, b) => (a === me ? -1 : b === me ? 1 : a < b ? -1 : a > b ? 1 : 0));
  $("members").replaceChildren(...members.map((id) => {
    const person = personIn(conversation, id);
    const shown = displayName(person.name);
    const item = document.createElement("li");
    item.dataset.user = id;
    const label = document.createElement("span");
    label.className = "member-name";
    label.textContent = cleanText(id === me ? `${shown} (you)` : shown);
    item.append(avatar({ name: shown, id, url: person.avatarURL, initials: initials(shown) }), label);
    if (owners.includes(id)) {
      const tag = document.createElement("span");
      tag.className = "owner-tag";
      tag.textContent = "Owner";
      item.append(tag);
    }
    if (owner && id !== me) {
      const actions = document.createElement("span");
      actions.className = "member-actions";
      if (!owners.includes(id)) {
        actions.append(act("Make owner", "secondary", () => page.session.api.setOwner(conversation.id, id, true)));
      }
      actions.append(act("Remove", "danger", async () => {
        const asked = { title: `Remove ${cleanText(shown)}?`, text: `${cleanText(shown)} leaves ${cleanText(name)} and sees no more of it.`, action: "Remove" };
        if (await confirmAction(asked)) await page.session.api.removeMember(conversation.id, id);
      }));
      item.append(actions);
    }
    return item;
  }));
}

/** A small button running a change to the open group. */
function act(label, style, run) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = `${style} small`;
  button.textContent = label;
  button.addEventListener("click", () => groupChange(run));
  return button;
}

/** Runs a change to the open group; what it changed comes back as an event on the stream. */
export async function groupChange(run) {
  $("group-error").textContent = "";
  try {
    await run();
  } catch (error) {
    $("group-error").textContent = `${error.message} (${error.code})`;
  }
}

/** Wires the sheet; `addPeople(group)` opens the picker of people to add to the group. */
export function wireGroup({ addPeople }) {
  $("members-button").addEventListener("click", openGroupPanel);
  $("chat-title").addEventListener("click", () => {
    const conversation = page.session?.conversations.get(page.session.open);
    if (conversation?.kind === "group" && !conversation.removed) openGroupPanel();
  });
  $("add-members").addEventListener("click", () => {
    const group = page.session.open;
    closeDialog("group-panel");
    addPeople(group);
  });
  $("leave").addEventListener("click", () => groupChange(async () => {
    const conversation = page.session.conversations.get(page.session.open);
    const asked = { title: "Leave this group?", text: `You stop getting messages from ${cleanText(nameOf(conversation))}.`, action: "Leave" };
    if (await confirmAction(asked)) await page.session.api.removeMember(conversation.id, page.session.me.id);
  }));
  $("rename").addEventListener("submit", (submitted) => {
    submitted.preventDefault();
    groupChange(() => page.session.api.rename(page.session.open, $("rename-title").value.trim()));
  });
}
