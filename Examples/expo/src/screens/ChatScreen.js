// One chat: its history and live messages, a composer, and the read marker moved as messages are seen (which clears
// this chat's notifications on the user's other devices). Its id comes from the route, often from a tapped push:
// untrusted, so a chat the user is not in goes back to the list.
import { useEffect, useState } from "react";
import { Button, FlatList, KeyboardAvoidingView, Platform, StyleSheet, Text, TextInput, View } from "react-native";
import { useHerald } from "../HeraldContext";
import { cleanText, senderName } from "@herald-chat/client";
import { chatTitle, lineOf, mergeMessages, personIn } from "../chats";
import { clearConversation } from "../notifications";
import * as Notifications from "expo-notifications";

export function ChatScreen({ route, navigation }) {
  const { conversationId } = route.params;
  const { live, me, deviceID } = useHerald();
  const { api } = live.client;
  const [conversation, setConversation] = useState(null);
  const [messages, setMessages] = useState([]);
  const [draft, setDraft] = useState("");

  useEffect(() => {
    let gone = false;
    Promise.all([api.conversation(conversationId), api.messages(conversationId)]).then(([found, history]) => {
      if (gone) return;
      setConversation(found);
      navigation.setOptions({ title: chatTitle(found, me) });
      setMessages((shown) => mergeMessages(shown, history));
    }, () => { if (!gone) navigation.goBack(); }); // not a member (or gone): back to the list
    const stop = live.client.on("message", ({ message }) => {
      if (message.conversationId === conversationId) setMessages((shown) => mergeMessages(shown, [message]));
    });
    clearConversation(Notifications, conversationId).catch(() => {});
    return () => { gone = true; stop(); };
  }, [api, conversationId, live, me, navigation]);

  const last = messages.reduce((highest, message) => (typeof message.seq === "number" && message.seq > highest ? message.seq : highest), 0);
  useEffect(() => {
    if (last > 0) api.markRead(conversationId, last, deviceID).catch(() => {});
  }, [api, conversationId, deviceID, last]);

  function send() {
    const text = draft.trim();
    if (!text) return;
    setDraft("");
    live.client.send(conversationId, text).catch(() => setDraft(text)); // refused for good: the text comes back
  }

  return (
    <KeyboardAvoidingView style={styles.page} behavior={Platform.OS === "ios" ? "padding" : undefined} keyboardVerticalOffset={90}>
      <FlatList data={[...messages].reverse()} inverted keyExtractor={(message) => message.id}
        renderItem={({ item: message }) => (
          <View style={[styles.message, message.senderId === me ? styles.mine : null]}>
            {conversation?.kind === "group" && message.senderId !== me && !message.event
              ? <Text style={styles.sender}>{senderName(personIn(conversation, message.senderId))}</Text> : null}
            <Text>{message.event ? (conversation ? lineOf(conversation, message, me) : "") : cleanText(message.text ?? "")}</Text>
          </View>
        )} />
      <View style={styles.composer}>
        <TextInput style={styles.input} value={draft} onChangeText={setDraft} placeholder="Message" multiline accessibilityLabel="Message" />
        <Button title="Send" disabled={!draft.trim()} onPress={send} />
      </View>
    </KeyboardAvoidingView>
  );
}

const styles = StyleSheet.create({
  page: { flex: 1 },
  message: { marginHorizontal: 12, marginVertical: 4, padding: 10, borderRadius: 10, backgroundColor: "#eee", alignSelf: "flex-start", maxWidth: "85%" },
  sender: { fontWeight: "600", fontSize: 12, marginBottom: 2 },
  mine: { alignSelf: "flex-end", backgroundColor: "#dfe3ff" },
  composer: { flexDirection: "row", alignItems: "center", padding: 8, gap: 8, borderTopWidth: StyleSheet.hairlineWidth, borderColor: "#ddd" },
  input: { flex: 1, maxHeight: 120, borderWidth: StyleSheet.hairlineWidth, borderColor: "#999", borderRadius: 8, padding: 8 },
});
