// Who hears what: a chat's level, the settings, and @ completion.

import { $, page } from "./state.js";
import { cleanText } from "/herald/presentation.js";
import { dayLabel, timeOfDay } from "./time.js";
import { defaultSettings, levelAt, mentionCompletions } from "/herald/engine.js";
import { renderChatHeader } from "./chat.js";
import { renderList } from "./list.js";
import { start } from "./session.js";


export const levelWords = { all: "all", mentions: "mentions", nothing: "nothing" };

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

export async function toggleMute() {
  const conversation = page.session?.conversations.get(page.session.open);
  if (!conversation) return;
  const muted = !(conversation.level === "nothing" && !conversation.levelUntil);
  const frames = page.session.choiceFrames;
  try {
    await page.session.api.setMuted(conversation.id, muted);
    // The stream's `level` frame says the same; one that came meanwhile may be newer (another device's).
    if (page.session.choiceFrames === frames) levelChanged(conversation.id, muted ? "nothing" : null, null);
  } catch (error) {
    page.session.banners.general(`Could not change the mute: ${error.message}`, "danger");
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

export const weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/** The settings panel's notification part, from the settings. */
export function renderSettings() {
  const settings = page.session.settings;
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
export function fillTimeZones(chosen) {
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

export async function changeSettings(change) {
  $("settings-error").textContent = "";
  const frames = page.session.choiceFrames;
  try {
    const kept = await page.session.api.changeNotificationSettings(change);
    // The stream's `notifications` frame brings the same; one that came meanwhile may be newer (another device's).
    if (page.session.choiceFrames === frames) settingsChanged(kept);
  } catch (error) {
    $("settings-error").textContent = `Not saved: ${error.message}`;
    renderSettings();
  }
}

export function quietHoursFromPanel() {
  const days = [...$("quiet-days").querySelectorAll("input:checked")].map((box) => box.value);
  const end = $("quiet-end").value === "00:00" ? "24:00" : $("quiet-end").value;
  return {
    timeZone: $("time-zone").value,
    quietHours: [{ days, start: $("quiet-start").value, end }],
    mentionsDuringQuietHours: $("quiet-mentions").checked,
  };
}

export function wireSettings() {
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
      fillTimeZones(page.session.settings.timeZone);
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
