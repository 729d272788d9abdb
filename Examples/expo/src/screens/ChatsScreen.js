// The chat list: each chat's name, last line and unread count, newest first, kept current by the stream.
import { useCallback, useEffect, useMemo, useState } from "react";
import { Button, FlatList, Pressable, RefreshControl, StyleSheet, Text, View } from "react-native";
import { useHerald } from "../HeraldContext";
import { ChatList, chatTitle, lineOf } from "../chats";
import { CHAT_ROUTE } from "../navigation";

export function ChatsScreen({ navigation }) {
  const { live, me, signOut } = useHerald();
  const list = useMemo(() => new ChatList({ api: live.client.api, me }), [live, me]);
  const [chats, setChats] = useState([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState(null);

  const reload = useCallback(() => {
    setLoading(true);
    list.load().then((loaded) => { setChats(loaded); setError(null); }, (failure) => setError(failure.message))
      .finally(() => setLoading(false));
  }, [list]);

  useEffect(() => {
    reload();
    const stops = [
      live.client.on("message", (incoming) => {
        if (list.apply(incoming, live.client.openConversation)) setChats(list.chats);
        else reload();
      }),
      live.client.on("ready", reload), // back from the background or a reconnect: counts as the server has them
    ];
    return () => stops.forEach((stop) => stop());
  }, [live, list, reload]);

  useEffect(() => navigation.setOptions({ headerRight: () => <Button title="Sign out" onPress={signOut} /> }), [navigation, signOut]);

  return (
    <FlatList data={chats} keyExtractor={(chat) => chat.id}
      refreshControl={<RefreshControl refreshing={loading} onRefresh={reload} />}
      ListEmptyComponent={<Text style={styles.empty}>{error ?? (loading ? "" : "No chats yet. Start one from the web page or herald chat.")}</Text>}
      renderItem={({ item: chat }) => (
        <Pressable style={styles.row} accessibilityRole="button"
          onPress={() => { list.read(chat.id); setChats(list.chats); navigation.navigate(CHAT_ROUTE, { conversationId: chat.id }); }}>
          <View style={styles.text}>
            <Text style={styles.title} numberOfLines={1}>{chatTitle(chat, me)}</Text>
            {chat.lastMessage ? <Text style={styles.line} numberOfLines={1}>{lineOf(chat, chat.lastMessage, me)}</Text> : null}
          </View>
          {chat.unreadCount > 0 ? <Text style={styles.unread} accessibilityLabel={`${chat.unreadCount} unread`}>{chat.unreadCount}</Text> : null}
        </Pressable>
      )} />
  );
}

const styles = StyleSheet.create({
  row: { flexDirection: "row", alignItems: "center", paddingHorizontal: 16, paddingVertical: 12, borderBottomWidth: StyleSheet.hairlineWidth, borderColor: "#ddd" },
  text: { flex: 1 },
  title: { fontWeight: "600", fontSize: 16 },
  line: { color: "#666", marginTop: 2 },
  unread: { minWidth: 24, paddingHorizontal: 6, borderRadius: 12, overflow: "hidden", backgroundColor: "#5b6cff", color: "white", textAlign: "center", fontWeight: "600" },
  empty: { padding: 24, color: "#666", textAlign: "center" },
});
