// What the page knows, shared by its parts: the signed-in session, a chat to open, and the keys it keeps.

export const $ = (id) => document.getElementById(id);
export const tokenKey = "herald.token";
export const coalesceKey = "herald.coalesce";
export const historyPage = 50;

/** What the page knows: `session`, everything the signed-in page knows (null when signed out); `chatToOpen`, a chat
 *  to open once the list is loaded (a notification's click names one: `/#chat=<id>`). */
export const page = { session: null, chatToOpen: null, composeOnOpen: false };
