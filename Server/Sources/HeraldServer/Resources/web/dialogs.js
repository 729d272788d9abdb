// Dialogs and side sheets: settings, a group's details, a new chat, and the question before anything destructive.
// Each is a modal <dialog>: the rest of the page is inert while it is open (focus stays inside), Escape closes it,
// and so does a click on the backdrop; focus goes back to what opened it.

import { $ } from "./state.js";

/** Opens `dialog` (an element or its id) as a modal; `onClose` runs once it closes, however it closes. */
export function openDialog(dialog, { focus = null, onClose = null } = {}) {
  const box = typeof dialog === "string" ? $(dialog) : dialog;
  if (box.open) return box;
  const opener = document.activeElement;
  box.addEventListener("close", () => {
    onClose?.();
    // Back to what opened it, unless something else has taken the focus since (a chat opened from a notification).
    const free = document.activeElement === document.body || box.contains(document.activeElement);
    if (free && opener instanceof HTMLElement && opener.isConnected) opener.focus();
  }, { once: true });
  box.showModal();
  (focus ? box.querySelector(focus) : null)?.focus();
  return box;
}

/** Closes `dialog` (an element or its id) if it is open. */
export function closeDialog(dialog) {
  const box = typeof dialog === "string" ? $(dialog) : dialog;
  if (box.open) box.close();
}

/** Wires every dialog of the page: its close buttons, and a click on the backdrop (outside its box) closes it. */
export function wireDialogs() {
  for (const box of document.querySelectorAll("dialog")) {
    for (const button of box.querySelectorAll("[data-close]")) button.addEventListener("click", () => box.close());
    box.addEventListener("click", (event) => {
      if (event.target !== box) return;
      const r = box.getBoundingClientRect();
      const inside = event.clientX >= r.left && event.clientX <= r.right && event.clientY >= r.top && event.clientY <= r.bottom;
      if (!inside) box.close();
    });
  }
}

/** Asks before something that cannot be undone: resolves true when the person chose `action`, false otherwise
 *  (Cancel, Escape, the backdrop). */
export function confirmAction({ title, text, action }) {
  const box = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = action;
  return new Promise((resolve) => {
    let answer = false;
    const ok = () => {
      answer = true;
      box.close();
    };
    const cancel = () => box.close();
    $("confirm-ok").addEventListener("click", ok, { once: true });
    $("confirm-cancel").addEventListener("click", cancel, { once: true });
    openDialog(box, {
      focus: "#confirm-cancel",
      onClose: () => {
        $("confirm-ok").removeEventListener("click", ok);
        $("confirm-cancel").removeEventListener("click", cancel);
        resolve(answer);
      },
    });
  });
}

/** Says "Saved" quietly in `status` for two seconds. */
export function saidSaved(status, words = "Saved") {
  status.textContent = words;
  status.classList.add("shown");
  clearTimeout(status.savedTimer);
  status.savedTimer = setTimeout(() => {
    status.classList.remove("shown");
    status.textContent = "";
  }, 2000);
}
