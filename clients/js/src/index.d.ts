// Types of Herald's JavaScript client (the modules beside this file). Checked with `tsc --noEmit` against
// clients/js/test/usage.ts by the project's tests.

import type { PushPlatform, DevicePermission, TestNotification, Deliveries, NotificationCheck } from "./troubleshoot.js";
export type { PushPlatform, DevicePermission, TestOutcome, TestNotification, TrailStepKind, TrailStep, DeliverySummary, Deliveries, CheckState, NotificationCheck } from "./troubleshoot.js";
export * from "./pushcrypto.js";
// ---------------------------------------------------------------------------------------------------------------
// The wire (docs/protocol.md)

/** Who hears what in a conversation. */
export type NotificationLevel = "all" | "mentions" | "nothing";
/** A day of a quiet window. */
export type Weekday = "sun" | "mon" | "tue" | "wed" | "thu" | "fri" | "sat";

/** A quiet window: on `days`, from `start` to `end` ("HH:MM"; an end not after the start crosses midnight). */
export interface QuietWindow {
  days: Weekday[];
  start: string;
  end: string;
}

/** A user's notification settings, as `GET /v1/me/notifications` answers. */
export interface NotificationSettings {
  defaultLevel: NotificationLevel;
  snoozeUntil: string | null;
  timeZone: string | null;
  quietHours: QuietWindow[];
  mentionsDuringQuietHours: boolean;
  badgeCountsMuted: boolean;
}

/** A person as the stream names them. */
export interface Person {
  id: string;
  name: string;
  avatarURL?: string | null;
}

/** A group's change (`message.event`). */
export interface ConversationEvent {
  type: "member_added" | "member_removed" | "member_left" | "owner_added" | "owner_removed" | "renamed" | "deleted"
    | "message_edited" | "message_deleted";
  members?: { id: string; name: string }[];
  title?: string | null;
  /** The message a `message_edited` (the entry's `text` is the new one) or `message_deleted` is about. */
  messageId?: string;
}

/** A stored message or event. */
export interface Message {
  id: string;
  seq: number;
  conversationId: string;
  senderId: string;
  text: string | null;
  imageURL: string | null;
  createdAt: string;
  kind?: "message" | "event";
  event?: ConversationEvent;
  mentions?: string[];
  mentionsAll?: boolean;
  silent?: boolean;
  /** Present (true) once its sender edited it. */
  edited?: boolean;
  /** Present (true) on a deleted message's tombstone (no text, image or mentions). */
  deleted?: boolean;
}

/** What a notification needs to know of a conversation. */
export interface ConversationRef {
  id: string;
  kind: "direct" | "group";
  title: string | null;
}

/** A message as the stream delivers it: the message, its conversation and its sender. */
export interface IncomingMessage {
  message: Message;
  conversation: ConversationRef;
  sender: Person;
}

/** A group's change, as the client's `member` event gives it: its message always carries `event`, one of `memberEvents`. */
export interface GroupChange extends IncomingMessage {
  message: Message & { event: ConversationEvent & { type: Exclude<ConversationEvent["type"], "message_edited" | "message_deleted"> } };
}

/** A conversation: its members (ids), their names and pictures (`people`), its owners. */
export interface Conversation {
  id: string;
  kind: "direct" | "group";
  title: string | null;
  members: string[];
  people: Person[];
  owners: string[];
}

/** A conversation as the list shows it: the conversation, its newest entry, the caller's unread count and read
 *  marker, whether it is at `nothing` now, and the caller's own level (null: the default) and its end. */
export interface ConversationSummary extends Conversation {
  lastMessage: Message | null;
  unreadCount: number;
  readUpTo: number;
  muted: boolean;
  level: NotificationLevel | null;
  levelUntil: string | null;
}

/** A device registered for pushes. */
export interface Device {
  id: string;
  platform: PushPlatform;
  token: string;
  /** The permission it last reported; absent (or null): never. */
  permission?: DevicePermission | null;
  /** When it last registered or reported its permission. */
  lastSeen?: string | null;
}

/** Any frame the server sends on the stream. */
export type ServerFrame =
  | { type: "message"; message: Message; conversation: ConversationRef; sender: Person }
  | { type: "ready"; seq: number; horizon?: number }
  | { type: "ack"; id: string; seq: number }
  | { type: "error"; code: string; message: string; ref?: string; retryAfter?: number }
  | { type: "muted"; conversation: string; muted: boolean }
  | { type: "level"; conversation: string; level: NotificationLevel | null; until: string | null }
  | { type: "notifications"; settings: NotificationSettings }
  | { type: "pushed"; conversation: string; message: string; seq: number }
  | { type: "pong" };

/** A frame a client sends. */
export type ClientFrame =
  | { type: "focus"; conversation: string | null }
  | { type: "app"; state: AppState }
  | { type: "send"; conversation: string; id: string; text: string; imageURL?: string; mentions?: string[]; mentionsAll?: boolean }
  | { type: "ping" }
  | { type: "received"; through: number };

/** Whether the app is on screen. */
export type AppState = "foreground" | "background";

// ---------------------------------------------------------------------------------------------------------------
// The HTTP API (api.js)

/** An error the API (or the stream, for a send) answered with; `code` is stable. */
export class APIError extends Error {
  constructor(status: number | null, code: string, message: string, retryAfter?: number | null);
  /** The HTTP status; 0: the server could not be reached; null: a refusal on the stream. */
  status: number | null;
  code: string;
  retryAfter: number | null;
}

/** How long one request may take, in milliseconds. */
export const requestTimeout: number;
/** A base URL without its trailing slashes. */
export function trimBase(base: string | null | undefined): string;
/** A query string of the fields that have a value. */
export function queryString(fields: Record<string, string | number | boolean | null | undefined>): string;

/** Resolves to a fresh token for the one that expired (`used`); null or the same token: none to be had. */
export type TokenRenewal = (used: string) => Promise<string | null> | string | null;

export interface APIOptions {
  /** The server's base URL; "" in a page the server served. */
  url?: string;
  token?: string | null;
  renew?: TokenRenewal | null;
  fetch?: typeof fetch | null;
}

/** The HTTP API as one user. */
export class API {
  constructor(options?: APIOptions);
  url: string;
  token: string | null;
  renew: TokenRenewal | null;
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  send<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  conversations(options?: { cursor?: string | null; limit?: number; muted?: boolean; levelSet?: boolean }): Promise<{ conversations: ConversationSummary[]; next: string | null }>;
  conversation(id: string): Promise<ConversationSummary>;
  createConversation(options: { kind: "direct" | "group"; members: string[]; title?: string | null }): Promise<Conversation>;
  addMembers(conversation: string, members: string[], history?: "full" | "none"): Promise<Conversation>;
  removeMember(conversation: string, user: string): Promise<null>;
  rename(conversation: string, title: string | null): Promise<Conversation>;
  setOwner(conversation: string, user: string, owner: boolean): Promise<null>;
  deleteConversation(conversation: string): Promise<null>;
  users(q?: string, options?: { after?: string | null; limit?: number }): Promise<{ users: Person[]; next: string | null }>;
  messages(conversation: string, options?: { before?: number | null; after?: number | null; limit?: number }): Promise<Message[]>;
  postMessage(conversation: string, message: { id: string; text: string; imageURL?: string | null; mentions?: string[]; mentionsAll?: boolean }): Promise<Message>;
  /** Posts a notification's Reply under `id`; another member's message under that id (`id_conflict`) is answered by posting under `id` with a random suffix. */
  postReply(conversation: string, reply: { id: string; text: string }): Promise<Message>;
  /** Edits one's own message's text; answers it as it is now (`edited`). */
  editMessage(conversation: string, message: string, edit: { text: string; mentions?: string[]; mentionsAll?: boolean }): Promise<Message>;
  /** Deletes a message (one's own, or anyone's in a group one owns); answers its tombstone. */
  deleteMessage(conversation: string, message: string): Promise<Message>;
  markRead(conversation: string, upTo: number, device?: string | null): Promise<null>;
  setMuted(conversation: string, muted: boolean): Promise<null>;
  setLevel(conversation: string, level: NotificationLevel | null, until?: Date | string | null): Promise<null>;
  notificationSettings(): Promise<NotificationSettings>;
  changeNotificationSettings(change: Partial<NotificationSettings>): Promise<NotificationSettings>;
  snooze(until: Date | string | null): Promise<NotificationSettings>;
  devices(): Promise<Device[]>;
  /** Answers the device's new key, which reads what a private push withheld; `permission`: what its system says now; `keys`: the device's push keys (apns, fcm, expo), of which only the public key and auth are sent. */
  registerDevice(id: string, platform: PushPlatform, token: string, options?: { permission?: DevicePermission | null; keys?: import("./pushcrypto.js").PushRegistrationKeys | null }): Promise<{ deviceKey: string }>;
  removeDevice(id: string): Promise<null>;
  pushedMessage(conversation: string, message: string): Promise<import("./pushcrypto.js").PushedMessage>;
  /** Tells the server what the device's system says of notifications now. */
  reportPermission(id: string, permission: DevicePermission): Promise<null>;
  /** Sends the device a test notification; answers what its push service said. */
  testDevice(id: string): Promise<TestNotification>;
  /** The troubleshooter's checks and the user's devices. */
  notificationCheck(): Promise<NotificationCheck>;
  /** A message's delivery trail, as the user may see it. */
  deliveries(conversation: string, message: string): Promise<Deliveries>;
  webPushKey(): Promise<string>;
  static demoPeople(options?: APIOptions): Promise<Person[] | null>;
  static demoToken(user: string, options?: APIOptions): Promise<{ token: string }>;
}

// ---------------------------------------------------------------------------------------------------------------
// The stream (stream.js)

/** The error codes that mean the token is no good. */
export const tokenErrors: Set<string>;
/** The stream's WebSocket URL for a server's base URL. */
export function streamURL(url: string, query: string): string;

/** A WebSocket constructor: the runtime's, or one given. */
export type WebSocketConstructor = new (url: string) => WebSocketLike;
/** What the client uses of a WebSocket. */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: { data: any }) => void) | null;
  onclose: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
}

/** How the connection is. */
export type StreamState = "connecting" | "live" | "reconnecting";

export interface StreamOptions {
  url?: string;
  token: string;
  device?: string | null;
  after?: number | null;
  onFrame: (frame: ServerFrame) => void;
  onState?: (state: StreamState) => void;
  onOpen?: () => void;
  onRefused?: (frame: Extract<ServerFrame, { type: "error" }>) => void;
  renew?: TokenRenewal | null;
  WebSocket?: WebSocketConstructor | null;
  /** Milliseconds: the first wait (500) and the longest (5,000). */
  backoff?: { initial?: number; max?: number };
  /** Milliseconds of silence before a ping, and again before the connection is taken for dead (25,000; 0: never). */
  heartbeat?: number;
  /** Milliseconds a connection may take to open before it is given up and tried again (15,000). */
  connectTimeout?: number;
}

/** One WebSocket at a time, resumed, reconnected, renewed. */
export class Stream {
  constructor(options: StreamOptions);
  token: string;
  device: string | null;
  readonly lastSeq: number | null;
  readonly state: StreamState | null;
  start(): void;
  stop(): void;
  send(frame: ClientFrame): boolean;
  restart(): void;
}

// ---------------------------------------------------------------------------------------------------------------
// The client (client.js)

/** The group changes the `member` event carries. */
export const memberEvents: Set<string>;
/** A fresh message id. */
export function messageID(): string;

/** What the client says of its connection. */
export type ClientState = StreamState | "paused" | "refused" | "closed";

/** The client's events and what each carries. */
export interface ClientEvents {
  state: ClientState;
  open: null;
  message: IncomingMessage;
  member: GroupChange;
  ready: { seq: number; horizon?: number };
  ack: { id: string; seq: number };
  refused: { id: string; code: string; message: string };
  level: { conversation: string; level: NotificationLevel | null; until: string | null };
  muted: { conversation: string; muted: boolean };
  notifications: NotificationSettings;
  pushed: { conversation: string; message: string; seq: number };
  error: Extract<ServerFrame, { type: "error" }>;
  tokenRefused: Extract<ServerFrame, { type: "error" }>;
  frame: ServerFrame;
}

/** The least time between two `received` frames (ms). */
export const confirmationInterval: number;

export interface HeraldClientOptions {
  url?: string;
  token: string;
  renew?: TokenRenewal | null;
  device?: string | null;
  after?: number | null;
  WebSocket?: WebSocketConstructor | null;
  fetch?: typeof fetch | null;
  backoff?: { initial?: number; max?: number };
  heartbeat?: number;
}

/** One signed-in user's connection: API, stream, focus, app state, send queue, token renewal. */
export class HeraldClient {
  constructor(options: HeraldClientOptions);
  readonly api: API;
  readonly stream: Stream;
  readonly state: ClientState;
  readonly token: string | null;
  readonly lastSeq: number | null;
  readonly unsent: { id: string; conversation: string; text: string }[];
  readonly openConversation: string | null;
  readonly appState: AppState;
  on<K extends keyof ClientEvents>(name: K, listener: (value: ClientEvents[K]) => void): () => void;
  connect(): void;
  close(): void;
  /** Closes the stream until `resume` (state "paused"). */
  pause(): void;
  /** Opens the stream again after `pause`. */
  resume(): void;
  focus(conversation: string | null): void;
  setAppState(state: AppState): void;
  send(conversation: string, text: string, options?: { id?: string; imageURL?: string | null; mentions?: string[]; mentionsAll?: boolean }): Promise<{ id: string; seq: number }>;
}

// ---------------------------------------------------------------------------------------------------------------
// The engine (engine.js): HeraldCore's rules, pure, in virtual time (microseconds)

/** One second in the engine's unit (microseconds). */
export const SECOND: number;

export interface BannerConfig {
  capacity: number;
  duration: number;
  gap: number;
  coalesce: boolean;
  swipeThreshold: number;
}
export function bannerConfig(options?: Partial<BannerConfig>): BannerConfig;

/** The words the engine uses. */
export interface Formatter {
  previewLimit: number;
  imagePlaceholder: string;
  emptyPlaceholder: string;
  deletedPlaceholder?: string;
  unknownSenderName: string;
  systemSenderName: string;
  untitledGroupName: string;
}
export const standardFormatter: Readonly<Formatter>;

export type BannerTone = "message" | "primary" | "success" | "warning" | "danger" | "neutral" | "info";

/** A banner to draw. */
export interface Banner {
  id: string;
  conversation: string | null;
  title: string;
  subtitle: string | null;
  body: string | null;
  avatarURL: string | null;
  count: number;
  tone: BannerTone;
  icon: string | null;
  duration: number | null;
  sender: string | null;
  mention?: boolean;
}

/** A system notification to post. */
export interface LocalNotification {
  message: string;
  title: string;
  body: string;
  thread: string;
  silent?: boolean;
  /** The message's seq, when the server stored it: `notificationIdentifier` names the notification by it. */
  seq?: number;
  /** Who wrote it (none for an event or the app's backend): whom a Reply answers. */
  sender?: string;
  /** Inside a burst: the identifier of the burst's first notification, which this one replaces. */
  replaces?: string;
  /** Inside a burst: its messages so far, this one included. */
  count?: number;
  /** An edit of a notification posted before: replace it only if it is still shown, silently; else post nothing. */
  onlyIfDelivered?: boolean;
}

/** Why nothing was shown. */
export type SkipReason = "own" | "duplicate" | "silent" | "quiet" | "muted" | "unmentioned" | "snoozed" | "active" | "permission" | "pushed";

/** What the app must do. */
export type Effect =
  | { type: "show"; banner: Banner }
  | { type: "update"; banner: Banner }
  | { type: "dismiss"; banner: string; reason: string }
  | { type: "drop"; banner: string; reason: string }
  | { type: "navigate"; conversation: string }
  | { type: "local"; notification: LocalNotification }
  | { type: "clear"; conversation: string }
  | { type: "withdraw"; notification: string }
  | { type: "skip"; message: string; reason: SkipReason };

/** A gesture on the visible banner. */
export type Gesture = { type: "tap" | "close" | "touchDown" | "touchUp" } | { type: "swipe"; dy: number };

/** A conversation's own level, for ever (`until` null) or until an instant. */
export interface LevelChoice {
  level: NotificationLevel;
  until: string | number | null;
}

/** What the engine is told. */
export type NotifierInput =
  | { type: "message"; incoming: IncomingMessage }
  | { type: "app"; state: AppState }
  | { type: "permission"; granted: boolean }
  | { type: "open"; conversation: string | null }
  | { type: "mute" | "unmute"; conversation: string }
  | { type: "level"; conversation: string; choice: LevelChoice | null }
  | { type: "settings"; settings: Partial<NotificationSettings> }
  | { type: "show"; banner: Banner }
  | { type: "gesture"; gesture: Gesture }
  | { type: "dismiss" | "dismissAll" }
  | { type: "pushed"; conversation: string; message: string };

/** An effect and the instant (µs) it happened at. */
export interface TimedEffect {
  instant: number;
  effect: Effect;
}

export function graphemeClusters(text: string): Generator<string>;
export function foldWhitespace(text: string, limit?: number): { text: string; cut: boolean };
export function preview(text: string | null, hasImage: boolean, formatter?: Formatter): string;
export function senderName(person: { id: string; name?: string | null }, formatter?: Formatter): string;
/** Whether a name reads as the system sender's ("ADMIN", "Ａｄｍｉｎ"): such a person is shown with " (member)" after it. */
export function readsAsSystemName(name: string, formatter?: Formatter): boolean;
export function displayName(name: string | null | undefined, formatter?: Formatter): string;
export function groupTitle(title: string | null | undefined, formatter?: Formatter): string;
export function initials(name: string | null | undefined): string;
export function eventLine(event: ConversationEvent, sender: Person, conversation: ConversationRef, viewer?: string | null, formatter?: Formatter): string | null;
export function entryLine(incoming: IncomingMessage, viewer?: string | null, formatter?: Formatter): string | null;
/** A message's preview; a tombstone's words once deleted. */
export function messagePreview(message: Message, formatter?: Formatter): string;
/** Whether an event edits or deletes an earlier message. */
export function isAmendment(event: ConversationEvent | null | undefined): boolean;
/** `message` after `amendment` (an entry whose event edits or deletes it); unchanged when it is about another. */
export function amended(message: Message, amendment: Message): Message;
export function eventEnds(event: ConversationEvent, senderId: string, userID: string): boolean;
export function bannerFor(incoming: IncomingMessage, formatter?: Formatter, viewer?: string | null): Banner;
/** The identifier a message's notification and its push share: `herald-<seq>` (HeraldCore's `LocalNotification.identifier`). */
export function notificationIdentifier(notification: { seq?: number; thread: string; message: string; replaces?: string }): string;

/** One minute in microseconds: a burst's default window. */
export const defaultBurstWindow: number;

/** One interruption per burst (HeraldCore's `NotificationBursts`): the first notification of a burst alerts, the
 *  ones within the window replace it silently with a count, until the conversation is read. */
export class NotificationBursts {
  constructor(window?: number);
  readonly window: number;
  decide(key: string, identifier: string, namesMember: boolean, now: number, readMarker?: number): { alerts: boolean; identifier: string; count: number };
  end(key: string): void;
}
export function notificationFor(incoming: IncomingMessage, formatter?: Formatter, viewer?: string | null): LocalNotification;
export function announcement(banner: Banner): string;
export function generalBanner(options: { id: string; message: string; tone?: BannerTone; icon?: string | null; duration?: number }): Banner;
export function bannerInitials(banner: Banner): string | null;
export function defaultSettings(): NotificationSettings;
export function isMention(message: Message, userID: string, kind: "direct" | "group"): boolean;
export function namesUser(message: Message, userID: string): boolean;
export function levelAt(choice: LevelChoice | null, settings: Partial<NotificationSettings>, at: number): NotificationLevel;
export function isQuiet(settings: Partial<NotificationSettings>, at: number): boolean;
export function interruption(message: Message, kind: "direct" | "group", userID: string, choice: LevelChoice | null, settings: NotificationSettings): { skip: SkipReason } | "ring" | "quietly";
export function delivery(message: Message, kind: "direct" | "group", userID: string, device: DeviceState, alreadySeen: boolean): { skip: SkipReason } | "banner" | "local" | "quietLocal";
export function findMentions(text: string, members: { id: string; name: string }[]): { ids: string[]; all: boolean };
export function mentionCompletions(prefix: string, members: { id: string; name: string }[]): string[];

/** What the engine knows of the device. */
export interface DeviceState {
  appState: AppState;
  notificationsPermitted: boolean;
  openConversation: string | null;
  levels: Map<string, { level: NotificationLevel; until: number | null }>;
  settings: NotificationSettings;
}

/** The ids seen most recently, up to a limit. */
export class RecentIDs {
  constructor(limit: number);
  has(id: string): boolean;
  insert(id: string): boolean;
}

/** The banner queue: one visible, a few waiting, timers in virtual time. */
export class BannerQueue {
  constructor(config?: BannerConfig);
  readonly visible: Banner | null;
  readonly waiting: Banner[];
  readonly nextDeadline: number | null;
}

/** HeraldCore's Notifier: inputs and the instant in, effects out. */
export class Notifier {
  constructor(options: { userID: string; config?: BannerConfig; formatter?: Formatter; seenLimit?: number; localHold?: number; burstWindow?: number });
  readonly localHold: number;
  /** How much later than the promptest message so far (by the server's clock) a message may come and still be bannered at once, in ms. */
  static readonly lateAfter: number;
  readonly userID: string;
  readonly device: DeviceState;
  readonly queue: BannerQueue;
  readonly seen: RecentIDs;
  readonly nextDeadline: number | null;
  handle(input: NotifierInput, instant: number): TimedEffect[];
  advance(instant: number): TimedEffect[];
}

// ---------------------------------------------------------------------------------------------------------------
// Live notifications (live.js)

/** How long a system notification waits for the server's `pushed` (µs). */
export const localHold: number;

export interface LiveNotificationsOptions {
  client: HeraldClient;
  userID: string;
  config?: BannerConfig;
  /** Milliseconds from any origin (a steady clock by default). */
  now?: () => number;
  /** What the stream does while the app is in the background: "close" (the default) or "keep". */
  inBackground?: "close" | "keep";
}

/** The stream wired into the engine: effects out, the clock driven. */
export class LiveNotifications {
  constructor(options: LiveNotificationsOptions);
  readonly client: HeraldClient;
  readonly inBackground: "close" | "keep";
  readonly notifier: Notifier;
  readonly visible: Banner | null;
  on(name: "effect", listener: (effect: Effect) => void): () => void;
  start(): void;
  stop(): void;
  open(conversation: string | null): void;
  setAppState(state: AppState): void;
  setPermission(granted: boolean): void;
  gesture(gesture: Gesture): void;
  dismiss(all?: boolean): void;
  general(message: string, tone?: BannerTone, seconds?: number): string;
  setLevel(conversation: string, level: NotificationLevel | null, until?: Date | string | null): Promise<void>;
  setSettings(change: Partial<NotificationSettings>): Promise<NotificationSettings>;
  snooze(until: Date | string | null): Promise<NotificationSettings>;
}

// ---------------------------------------------------------------------------------------------------------------
// What a view needs (presentation.js)

/** The picture's address when it is http or https, else null: only those are ever loaded. */
export function safeImageURL(text: unknown): string | null;

/** The category of Herald's message notifications, and its actions' identifiers (the same on every platform). */
export const notificationCategory: "HERALD_MESSAGE";
export const replyAction: "HERALD_REPLY";
export const markReadAction: "HERALD_MARK_READ";
/** The longest reply taken, in characters. */
export const maxReplyCharacters: number;

/** What answering a message notification asks (docs/push.md, "Answering a notification"). */
export type NotificationAnswer =
  | { type: "reply"; conversationId: string; messageId: string; text: string }
  | { type: "read"; conversationId: string; seq: number };

/** The answer to `action` on the notification whose data is `data`, with the text typed for a Reply; null for
 *  anything else. A reply's id is made from the notification and the text, so a retry is stored once. */
export function notificationAnswer(action: string, data: unknown, text?: string | null): NotificationAnswer | null;
/** The colour of a person's initials avatar (an `hsl(...)` string), the same for the same id on every client. */
export function avatarColour(id: string | null | undefined): string;
/** Text safe to show: control characters (but tab and newline) and bidi overrides removed. */
export function cleanText(text: unknown): string;
