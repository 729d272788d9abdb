// A phone for tests: the JavaScript client and LiveNotifications of one user, as an app runs them, printing what
// happens on standard output, one JSON object a line: {"state": …} at each change of the connection, {"pushed": …}
// for each `pushed` frame, {"effect": …} for each effect. A test freezes it with SIGSTOP, as iOS suspends an app in
// the background with its socket open, and wakes it with SIGCONT.
//
//   node --experimental-websocket Tests/Web/device.mjs URL TOKEN USER DEVICE [background|foreground] [CONVERSATION]
//
// The stream stays open in the background (`inBackground: "keep"`): the frozen socket is what the tests are about.
import { HeraldClient, LiveNotifications } from "../../clients/js/src/index.js";

const [url, token, user, device, appState = "background", open = null] = process.argv.slice(2);
if (!url || !token || !user || !device) {
  process.stderr.write("usage: device.mjs URL TOKEN USER DEVICE [background|foreground] [CONVERSATION]\n");
  process.exit(2);
}
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const client = new HeraldClient({ url, token, device, backoff: { initial: 100, max: 400 } });
const live = new LiveNotifications({ client, userID: user, inBackground: "keep" });
client.on("state", (state) => print({ state }));
client.on("frame", (frame) => {
  if (frame.type === "pushed") print({ pushed: frame });
});
live.on("effect", (effect) => print({ effect }));
if (open) live.open(open);
live.setAppState(appState);
live.start();
process.on("SIGTERM", () => {
  live.stop();
  process.exit(0);
});
