// A chat's level control, a view: one control in the chat's header, a menu of the levels for a while or for ever,
// saying the chat's own choice or the default. Above state.js (which holds the levels and their changes); the chat's
// header (chat.js) draws it.

import { $, endOf, levelChanged, levelNow, page, untilText } from "./state.js";
import { levelAt } from "/herald/engine.js";

/** A level as the control says it, and (`short`) as the default's hint says it. */
export const levelWords = { all: "All messages", mentions: "Mentions only", nothing: "Muted" };
const shortWords = { all: "all", mentions: "mentions", nothing: "nothing" };

/** The chat's level control: what the chat's own choice is (or the default, and what the default is now), with when
 *  it ends; the menu's checked item is the same choice. */
export function renderLevelControl(conversation) {
  const level = levelNow(conversation);
  const until = conversation.level && conversation.levelUntil ? ` until ${untilText(conversation.levelUntil)}` : "";
  const label = conversation.level ? `${levelWords[conversation.level]}${until}` : `Default (${shortWords[level]})`;
  $("level-label").textContent = label;
  $("level-button").setAttribute("aria-label", `Notifications: ${label}`);
  $("level-button").dataset.level = level;
  const settings = levelAt(null, page.session.settings, Date.now());
  $("level-default").textContent = `as in settings: ${shortWords[settings]}`;
  for (const item of $("level-menu").querySelectorAll("[data-level]")) {
    const chosen = item.dataset.level === "default" ? !conversation.level : item.dataset.level === conversation.level;
    item.setAttribute("aria-checked", String(chosen));
  }
}

export function toggleLevelMenu() {
  const open = $("level-menu").hidden;
  $("level-menu").hidden = !open;
  $("level-button").setAttribute("aria-expanded", String(open));
  if (open) $("level-menu").querySelector("[aria-checked=true]")?.focus();
}

export function closeLevelMenu() {
  $("level-menu").hidden = true;
  $("level-button").setAttribute("aria-expanded", "false");
}

export async function chooseLevel(choice) {
  const id = page.session?.open;
  if (!id) return;
  const level = choice === "default" ? null : choice;
  const until = level ? endOf($("level-for").value) : null;
  closeLevelMenu();
  const frames = page.session.choiceFrames;
  try {
    await page.session.api.setLevel(id, level, until);
    if (page.session.choiceFrames === frames) levelChanged(id, level, until);
  } catch (error) {
    page.session.banners.general(`Could not change the notifications: ${error.message}`, "danger");
  }
}

export function wireLevels() {
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
  // A click anywhere else closes the menu.
  document.addEventListener("click", (event) => {
    if (!$("level-menu").hidden && !event.target.closest?.("#level-menu, #level-button")) closeLevelMenu();
  });
}
