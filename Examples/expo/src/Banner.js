// The in-app banner: draws the banner `live` shows, at the top of every screen, and reports gestures. Every decision
// (which banner, how long, paused while held, mentions first, the gap between two) is the engine's.
import { useEffect, useRef, useState } from "react";
import { AccessibilityInfo, Animated, PanResponder, Pressable, StyleSheet, Text, View } from "react-native";
import { useSafeAreaInsets } from "react-native-safe-area-context";
import { announcement, avatarColour, bannerInitials } from "@herald-chat/client";

const HIDDEN = -200;

/** The banner of `live` (a `LiveNotifications`), over everything: slides in, follows a finger up, pauses while held. */
export function Banner({ live }) {
  const insets = useSafeAreaInsets();
  const [banner, setBanner] = useState(null);
  const offset = useRef(new Animated.Value(HIDDEN)).current;
  const reduceMotion = useRef(false);

  useEffect(() => {
    AccessibilityInfo.isReduceMotionEnabled().then((enabled) => { reduceMotion.current = enabled; }).catch(() => {});
    const subscription = AccessibilityInfo.addEventListener("reduceMotionChanged", (enabled) => { reduceMotion.current = enabled; });
    return () => subscription.remove();
  }, []);

  useEffect(() => live.on("effect", (effect) => {
    if (effect.type === "show" || effect.type === "update") {
      setBanner(effect.banner);
      if (effect.type === "show") AccessibilityInfo.announceForAccessibility(announcement(effect.banner));
      if (reduceMotion.current) offset.setValue(0);
      else Animated.spring(offset, { toValue: 0, useNativeDriver: true }).start();
    } else if (effect.type === "dismiss") {
      const hide = () => setBanner((shown) => (shown?.id === effect.banner ? null : shown));
      if (reduceMotion.current) hide();
      else Animated.timing(offset, { toValue: HIDDEN, duration: 200, useNativeDriver: true }).start(hide);
    }
  }), [live, offset]);

  const pan = useRef(PanResponder.create({
    onStartShouldSetPanResponder: () => true,
    onPanResponderGrant: () => live.gesture({ type: "touchDown" }),
    onPanResponderMove: (_, { dy }) => offset.setValue(dy < 0 ? dy : dy / 5),
    onPanResponderRelease: (_, { dx, dy }) => {
      live.gesture({ type: "touchUp" });
      if (Math.abs(dx) < 8 && Math.abs(dy) < 8) live.gesture({ type: "tap" });
      else live.gesture({ type: "swipe", dy });
      if (live.visible) Animated.spring(offset, { toValue: 0, useNativeDriver: true }).start();
    },
    onPanResponderTerminate: () => live.gesture({ type: "touchUp" }),
  })).current;

  if (!banner) return null;
  const general = banner.conversation === null;
  return (
    <Animated.View {...pan.panHandlers} accessibilityRole="button" accessibilityLiveRegion="polite"
      accessibilityLabel={announcement(banner)} accessibilityHint={general ? undefined : "Opens the chat"}
      style={[styles.banner, { top: insets.top + 8, transform: [{ translateY: offset }] }]}>
      <View style={[styles.avatar, { backgroundColor: avatarColour(banner.sender ?? banner.id) }]}>
        <Text style={styles.initials}>{bannerInitials(banner) ?? "!"}</Text>
      </View>
      <View style={styles.text}>
        <Text numberOfLines={1} style={styles.title}>
          {banner.title}
          {banner.subtitle ? <Text style={styles.subtitle}> {banner.subtitle}</Text> : null}
          {banner.count > 1 ? ` (${banner.count})` : ""}
        </Text>
        {banner.body ? <Text numberOfLines={1} style={styles.body}>{banner.body}</Text> : null}
      </View>
      <Pressable accessibilityRole="button" accessibilityLabel="Dismiss" hitSlop={12} onPress={() => live.gesture({ type: "close" })}>
        <Text style={styles.close}>×</Text>
      </Pressable>
    </Animated.View>
  );
}

const styles = StyleSheet.create({
  banner: {
    position: "absolute", left: 16, right: 16, minHeight: 64, flexDirection: "row", alignItems: "center", padding: 12,
    borderRadius: 12, backgroundColor: "white", shadowColor: "black", shadowOpacity: 0.15, shadowRadius: 12,
    shadowOffset: { width: 0, height: 4 }, elevation: 6,
  },
  avatar: { width: 40, height: 40, borderRadius: 20, alignItems: "center", justifyContent: "center", marginRight: 10 },
  initials: { color: "white", fontWeight: "600" },
  text: { flex: 1 },
  title: { fontWeight: "700", fontSize: 15 },
  subtitle: { fontWeight: "400", color: "#666" },
  body: { fontSize: 13, color: "#555" },
  close: { fontSize: 22, paddingHorizontal: 6, color: "#999" },
});
