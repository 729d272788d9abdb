// The settings sheet: who hears what by default, do not disturb, quiet hours, what the tab counts, banners grouped by
// chat, pushes while the tab is closed, "Not getting notifications?" (troubleshoot.js), and signing out. Every
// setting is kept the moment it changes (on the server, or for the banners' grouping in this browser), and the sheet
// says "Saved" quietly. A sheet near the top: it remakes the banners (session.js), switches pushes (away.js) and
// signs out (signin.js); it is drawn again when state.js announces the settings changed.

import { $, coalesceKey, endOf, listen, page, settingsChanged, untilText } from "./state.js";
import { closeDialog, openDialog, saidSaved } from "./dialogs.js";
import { makeBanners } from "./session.js";
import { pushSwitchChanged } from "./away.js";
import { signOut } from "./signin.js";
import { resetTroubleshooter, wireTroubleshooter } from "./troubleshoot.js";

export const weekdays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

export function openSettings() {
  $("settings-error").textContent = "";
  resetTroubleshooter();
  openDialog("settings");
}

/** The sheet's notification part, from the settings. */
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
    select.replaceChildren(...[...zones].sort().map((zone) => new Option(zone.replaceAll("_", " "), zone)));
  }
  select.value = chosen ?? browser;
}

/** Keeps `change` on the server; the sheet says so, or says why not and shows what is kept. */
export async function changeSettings(change) {
  $("settings-error").textContent = "";
  const frames = page.session.choiceFrames;
  try {
    const kept = await page.session.api.changeNotificationSettings(change);
    // The stream's `notifications` frame brings the same; one that came meanwhile may be newer (another device's).
    if (page.session.choiceFrames === frames) settingsChanged(kept);
    saidSaved($("settings-saved"));
  } catch (error) {
    $("settings-error").textContent = `Not saved: ${error.message}`;
    renderSettings();
  }
}

export function quietHoursFromSheet() {
  const days = [...$("quiet-days").querySelectorAll("input:checked")].map((box) => box.value);
  const end = $("quiet-end").value === "00:00" ? "24:00" : $("quiet-end").value;
  return {
    timeZone: $("time-zone").value,
    quietHours: [{ days, start: $("quiet-start").value, end }],
    mentionsDuringQuietHours: $("quiet-mentions").checked,
  };
}

/** Quiet hours changed in the sheet: kept once the times are whole and a day is left. */
function quietHoursEdited() {
  if (!$("quiet-start").value || !$("quiet-end").value) return;
  if (!$("quiet-days").querySelector("input:checked")) {
    $("settings-error").textContent = "Pick at least one day, or turn quiet hours off.";
    return;
  }
  changeSettings(quietHoursFromSheet());
}

export function wireSettings() {
  listen("settings", renderSettings);
  $("quiet-days").replaceChildren(...weekdays.map((day) => {
    const label = document.createElement("label");
    label.className = "day-toggle";
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = day;
    box.checked = true;
    const name = document.createElement("span");
    name.textContent = `${day[0].toUpperCase()}${day.slice(1, 2)}`;
    label.title = `${day[0].toUpperCase()}${day.slice(1)}`;
    box.setAttribute("aria-label", label.title);
    label.append(box, name);
    return label;
  }));
  $("settings-button").addEventListener("click", openSettings);
  $("default-level").addEventListener("change", () => changeSettings({ defaultLevel: $("default-level").value }));
  $("snooze").addEventListener("change", () => {
    const span = $("snooze").value;
    changeSettings({ snoozeUntil: span === "off" ? null : endOf(span) });
  });
  $("quiet-on").addEventListener("change", () => {
    if ($("quiet-on").checked) {
      $("quiet-fields").hidden = false;
      fillTimeZones(page.session.settings.timeZone);
      changeSettings(quietHoursFromSheet());
    } else {
      changeSettings({ quietHours: [] });
    }
  });
  for (const id of ["quiet-start", "quiet-end", "time-zone"]) $(id).addEventListener("change", quietHoursEdited);
  $("quiet-days").addEventListener("change", quietHoursEdited);
  $("quiet-mentions").addEventListener("change", () => changeSettings({ mentionsDuringQuietHours: $("quiet-mentions").checked }));
  $("badge-muted").addEventListener("change", () => changeSettings({ badgeCountsMuted: $("badge-muted").checked }));
  $("coalesce").addEventListener("change", () => {
    localStorage.setItem(coalesceKey, $("coalesce").checked ? "1" : "0");
    if (page.session) makeBanners();
    saidSaved($("settings-saved"));
  });
  $("push-switch").addEventListener("change", pushSwitchChanged);
  wireTroubleshooter();
  $("sign-out").addEventListener("click", () => {
    closeDialog("settings");
    signOut();
  });
}
