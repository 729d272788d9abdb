// The app's entry. The background task is defined here, at the top level of the bundle: iOS and Android may start the
// app's JavaScript with no screen, only to run it (expo-task-manager's rule).
import { registerRootComponent } from "expo";
import * as Notifications from "expo-notifications";
import * as TaskManager from "expo-task-manager";
import App from "./App";
import { BACKGROUND_TASK, handleBackgroundPush } from "./src/notifications";

TaskManager.defineTask(BACKGROUND_TASK, async ({ data, error }) => {
  if (error) return;
  await handleBackgroundPush(data, Notifications); // the silent "read" push: that chat's notifications go
});
Notifications.registerTaskAsync(BACKGROUND_TASK).catch(() => {});

registerRootComponent(App);
