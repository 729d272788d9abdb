// Herald's JavaScript client: one import for React Native (Hermes), Expo, browsers and Node 20+.
// The modules may also be imported one by one (engine.js has no I/O at all).

export * from "./engine.js";
export * from "./api.js";
export * from "./stream.js";
export * from "./client.js";
export * from "./live.js";
export * from "./presentation.js";
export * from "./pushcrypto.js";
