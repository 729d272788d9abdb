// Who hears what of a chat: its level (one control in the chat's header: a menu of the levels, for a while or for
// ever), what the list and the header say of it, and the settings' part the engine takes.

import { $, page } from "./state.js";
import { dayLabel, timeOfDay } from "./time.js";
import { defaultSettings, levelAt } from "/herald/engine.js";
import { renderChatHeader } from "./chat.js";
import { renderList } from "./list.js";
import { renderSettings } from "./settings.js";

/** A level as the control says it, and (`short`) as the default's hint says it. */
export const levelWords = { all: "All messages", mentions: "Mentions only", nothing: "Muted" };
const shortWords = { all: "all", mentions: "mentions", nothing: "nothing" };

/** A chat's own level as the engine takes it: {level, until} or null (the default). */
export function choiceOf(conversation) {
  return conversation.level ? { level: conversation.level, until: conversation.levelUntil ?? null } : null;
}

/** The level in force now: the chat's own while it holds, else the default. */
export function levelNow(conversation) {
  return levelAt(choiceOf(conversation), page.session.settings, Date.now());
}

/** An instant as the menu and the settings say it: the time today, else the day and time. */
export function untilText(iso) {
  const when = new Date(iso);
  const today = new Date().toDateString() === when.toDateString();
  return today ? timeOfDay(when) : `${dayLabel(when)} ${timeOfDay(when)}`;
}

/** When a choice made now for `span` ("always", "1h", "8h", "tomorrow") ends, as ISO; null for ever. */
export function endOf(span) {
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
export function levelChanged(id, level, until) {
  const conversation = page.session.conversations.get(id);
  if (conversation) {
    conversation.level = level ?? null;
    conversation.levelUntil = level ? until ?? null : null;
  }
  page.session.banners.send({ type: "level", conversation: id, choice: level ? { level, until: until ?? null } : null });
  levelsChanged();
}

/** The settings changed (here, or on another device: the `notifications` frame). */
export function settingsChanged(settings) {
  page.session.settings = { ...defaultSettings(), ...settings };
  page.session.banners.send({ type: "settings", settings: page.session.settings });
  renderSettings();
  levelsChanged();
}

/** Redraws what levels show, and again when the next `until` (or snooze) ends. */
export function levelsChanged() {
  renderList();
  if (page.session.open) renderChatHeader();
  clearTimeout(page.session.levelTimer);
  const ends = [...page.session.conversations.values()].map((c) => c.levelUntil).concat(page.session.settings.snoozeUntil)
    .filter(Boolean).map((iso) => Date.parse(iso)).filter((at) => at > Date.now());
  if (ends.length === 0) return;
  const current = page.session;
  page.session.levelTimer = setTimeout(() => current === page.session && levelsChanged(), Math.min(...ends) - Date.now() + 50);
}

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
