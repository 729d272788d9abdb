// Herald in an Expo app: sign-in by token, the chat list and a chat, Herald's in-app banner over every screen, local
// notifications, Expo pushes registered as a Herald device, and taps on notifications opening their chat. The
// decisions live in src/*.js (tested under Node); this file and src/screens only wire them to React Native.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { AppState, Platform } from "react-native";
import { NavigationContainer, createNavigationContainerRef } from "@react-navigation/native";
import { createNativeStackNavigator } from "@react-navigation/native-stack";
import { SafeAreaProvider } from "react-native-safe-area-context";
import Constants from "expo-constants";
import * as Device from "expo-device";
import * as Notifications from "expo-notifications";
import * as SecureStore from "expo-secure-store";
import { Banner } from "./src/Banner";
import { HeraldContext } from "./src/HeraldContext";
import { CHAT_ROUTE, NotificationTaps, chatOnScreen } from "./src/navigation";
import {
  answerNotifications, followPushTokenChanges, postEffects, registerForPushes, setUpNotifications, unregister,
} from "./src/notifications";
import { SignInStore, connect, followAppState, keepDeviceKey, pushKeys } from "./src/session";
import { ChatScreen } from "./src/screens/ChatScreen";
import { ChatsScreen } from "./src/screens/ChatsScreen";
import { SignInScreen } from "./src/screens/SignInScreen";

const Stack = createNativeStackNavigator();
const navigation = createNavigationContainerRef();
const store = new SignInStore(SecureStore);
// Written by `eas init`; Expo needs it to make a push token.
const projectId = Constants.expoConfig?.extra?.eas?.projectId ?? Constants.easConfig?.projectId;

export default function App() {
  const [signIn, setSignIn] = useState(undefined); // undefined: still reading the saved one; null: signed out
  const [deviceID, setDeviceID] = useState(null);
  const signedIn = useRef(false);
  const taps = useMemo(() => new NotificationTaps({
    navigation, Notifications, canOpen: () => navigation.isReady() && signedIn.current,
  }), []);

  useEffect(() => {
    setUpNotifications({ Notifications, platform: Platform.OS }).catch(() => {});
    const stop = taps.listen();
    Promise.all([store.load(), store.deviceID()]).then(([saved, id]) => {
      setDeviceID(id);
      setSignIn(saved);
    });
    return stop;
  }, [taps]);

  const live = useMemo(() => (signIn && deviceID ? connect({ ...signIn, deviceID }) : null), [signIn, deviceID]);

  const signOut = useCallback(async () => {
    if (live) await unregister(live, deviceID);
    await store.forget();
    setSignIn(null);
  }, [live, deviceID]);

  useEffect(() => {
    if (!live) return undefined;
    // This install's push keys (made once; null without Web Crypto), so the server can encrypt its pushes to it.
    const pushes = {
      live, deviceID, Notifications, Device, projectId, keys: pushKeys(SecureStore).catch(() => null),
      keepDeviceKey: (key) => keepDeviceKey(SecureStore, key),
    };
    const stops = [
      followAppState(live, AppState),
      postEffects(live, Notifications),
      answerNotifications(live, deviceID, Notifications),
      live.on("effect", (effect) => {
        if (effect.type === "navigate" && navigation.isReady()) navigation.navigate(CHAT_ROUTE, { conversationId: effect.conversation });
      }),
      live.client.on("tokenRefused", () => { signOut(); }),
      followPushTokenChanges(pushes),
    ];
    live.start();
    live.open(chatOnScreen(navigation));
    registerForPushes(pushes).catch((error) => console.warn(`Herald: no pushes: ${error.message}`));
    signedIn.current = true;
    taps.ready(); // a notification tapped before sign-in opens now
    return () => {
      signedIn.current = false;
      stops.forEach((stop) => stop());
      live.stop();
    };
  }, [live, deviceID, taps, signOut]);

  const saveSignIn = useCallback(async (checked) => {
    await store.save(checked);
    setSignIn(checked);
  }, []);

  if (signIn === undefined || !deviceID) return null; // reading the Keychain: a moment at start
  return (
    <SafeAreaProvider>
      <HeraldContext.Provider value={live ? { live, me: signIn.user, deviceID, signOut } : null}>
        <NavigationContainer ref={navigation}
          onReady={() => { live?.open(chatOnScreen(navigation)); taps.ready(); }}
          onStateChange={() => live?.open(chatOnScreen(navigation))}>
          <Stack.Navigator>
            {live ? (
              <>
                <Stack.Screen name="Chats" component={ChatsScreen} />
                <Stack.Screen name={CHAT_ROUTE} component={ChatScreen} options={{ title: "" }} />
              </>
            ) : (
              <Stack.Screen name="Sign in">{() => <SignInScreen onSignedIn={saveSignIn} />}</Stack.Screen>
            )}
          </Stack.Navigator>
        </NavigationContainer>
        {live ? <Banner live={live} /> : null}
      </HeraldContext.Provider>
    </SafeAreaProvider>
  );
}
