// The app's entry. The background task is defined here, at the top level of the bundle: iOS and Android may start the
// app's JavaScript with no screen, only to run it (expo-task-manager's rule).
import { registerRootComponent } from "expo";
import * as Notifications from "expo-notifications";
import * as SecureStore from "expo-secure-store";
import * as TaskManager from "expo-task-manager";
import App from "./App";
import { BACKGROUND_TASK, handleBackgroundPush } from "./src/notifications";
import { storedPushKeys, withheldReader } from "./src/session";

TaskManager.defineTask(BACKGROUND_TASK, async ({ data, error }) => {
  if (error) return;
  // The silent "read" push: that chat's notifications go; edits and deletions; an encrypted push decrypted with
  // this install's keys, where Web Crypto exists, and otherwise a withheld push's words fetched with the device key.
  await handleBackgroundPush(data, Notifications, {
    keys: await storedPushKeys(SecureStore), readWithheld: await withheldReader(SecureStore),
  });
});
Notifications.registerTaskAsync(BACKGROUND_TASK).catch(() => {});

registerRootComponent(App);
