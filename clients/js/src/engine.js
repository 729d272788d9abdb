// Herald's notification engine in JavaScript (browsers, React Native, Node): the policy, the wording and the banner
// queue of HeraldCore, as a pure state machine. Time is an input (whole microseconds from an origin the caller
// chooses), never read here, so the same inputs give the same effects in a page, under node, and in `herald replay`.
//
// It is a port of Sources/HeraldCore and is held to it by a conformance test
// (Tests/HeraldReplayTests/WebEngineConformanceTests.swift): every replay trace runs through both and the timelines
// must be identical. Change a rule here and there together. The rules: docs/behaviour.md §1–3. Its parts:
// config.js (time, options), wording.js (what it says), policy.js (who is told), banners.js (the queue),
// notifier.js (one device).

export {
  bannerConfig,
  SECOND,
} from "./config.js";
export {
  amended,
  announcement,
  bannerFor,
  bannerInitials,
  displayName,
  entryLine,
  eventEnds,
  eventLine,
  foldWhitespace,
  generalBanner,
  graphemeClusters,
  groupTitle,
  initials,
  isAmendment,
  messagePreview,
  notificationFor,
  notificationIdentifier,
  preview,
  readsAsSystemName,
  senderName,
  standardFormatter,
} from "./wording.js";
export {
  defaultBurstWindow,
  defaultSettings,
  delivery,
  findMentions,
  interruption,
  isMention,
  isQuiet,
  levelAt,
  mentionCompletions,
  namesUser,
  NotificationBursts,
} from "./policy.js";
export {
  BannerQueue,
  RecentIDs,
} from "./banners.js";
export {
  Notifier,
} from "./notifier.js";
