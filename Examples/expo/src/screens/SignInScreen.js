// Sign-in by token: the server's address and a token your backend minted (or, against `herald serve --demo`, one of
// the demo people at a tap). The token is checked with the server before it is kept.
import { useState } from "react";
import { ActivityIndicator, Button, ScrollView, StyleSheet, Text, TextInput, View } from "react-native";
import { checkSignIn, demoPeople, demoToken, serverAddress } from "../session";

/** `onSignedIn({server, token, user})` once the server took the token. */
export function SignInScreen({ onSignedIn, initialServer = process.env.EXPO_PUBLIC_HERALD_URL ?? "" }) {
  const [server, setServer] = useState(initialServer);
  const [token, setToken] = useState("");
  const [people, setPeople] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  async function attempt(work) {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (failure) {
      setError(failure.message);
    } finally {
      setBusy(false);
    }
  }

  const signIn = (withToken) => attempt(async () => onSignedIn(await checkSignIn({ server, token: withToken })));
  const findDemo = () => attempt(async () => {
    const found = await demoPeople(serverAddress(server));
    if (!found) throw new Error("No demo there: run herald serve --demo --host 0.0.0.0, or paste a token");
    setPeople(found);
  });

  return (
    <ScrollView contentContainerStyle={styles.page} keyboardShouldPersistTaps="handled">
      <Text style={styles.label}>Server</Text>
      <TextInput style={styles.input} value={server} onChangeText={setServer} placeholder="http://192.168.1.20:8080"
        autoCapitalize="none" autoCorrect={false} keyboardType="url" accessibilityLabel="Server address" />
      <Text style={styles.label}>Token</Text>
      <TextInput style={[styles.input, styles.token]} value={token} onChangeText={setToken} placeholder="eyJ…"
        autoCapitalize="none" autoCorrect={false} multiline accessibilityLabel="Token" />
      <Button title="Sign in" disabled={busy || !token.trim()} onPress={() => signIn(token)} />
      <View style={styles.gap} />
      <Button title="Demo people" disabled={busy || !server.trim()} onPress={findDemo} />
      {people?.map((person) => (
        <Button key={person.id} title={`Continue as ${person.name}`} disabled={busy}
          onPress={() => attempt(async () => onSignedIn(await checkSignIn({ server, token: await demoToken(serverAddress(server), person.id) })))} />
      ))}
      {busy ? <ActivityIndicator style={styles.gap} /> : null}
      {error ? <Text style={styles.error} accessibilityRole="alert">{error}</Text> : null}
    </ScrollView>
  );
}

const styles = StyleSheet.create({
  page: { padding: 20, gap: 8 },
  label: { fontWeight: "600", marginTop: 8 },
  input: { borderWidth: StyleSheet.hairlineWidth, borderColor: "#999", borderRadius: 8, padding: 10 },
  token: { minHeight: 80, textAlignVertical: "top" },
  gap: { height: 16 },
  error: { color: "#b00020", marginTop: 12 },
});
