// The types of troubleshooting a device's notifications: a device's platform and reported permission, a test
// notification's answer, a message's delivery trail and the troubleshooter's checks (docs/push.md, "Why a phone did
// not ring"). index.d.ts exports them.

/** The push service a device's token belongs to. */
export type PushPlatform = "apns" | "fcm" | "expo" | "webpush";

/** Whether a device's system lets the app notify: "provisional" is iOS quiet delivery, "not_asked" iOS
 *  notDetermined and a browser's "default". */
export type DevicePermission = "granted" | "denied" | "provisional" | "not_asked" | "unknown";

/** What became of a test notification: "logged" (a demo server writes it to its log), "retry" (the push service
 *  said try later), "device_removed" (its token is dead: the device was removed), "no_provider" (the server has no
 *  push service for the platform: `reason` names the setting). */
export type TestOutcome = "sent" | "logged" | "retry" | "device_removed" | "refused" | "redirected" | "no_provider";

/** The answer to a test notification (`POST /v1/devices/{id}/test`). Like every answer of the server, it leaves out
 *  a field that has no value (`providerID`, `reason`): read a missing one as null. */
export interface TestNotification {
  device: string;
  platform: PushPlatform;
  outcome: TestOutcome;
  /** The push service's id for it. */
  providerID?: string | null;
  /** The push service's (or the server's) words, when it was not sent. */
  reason?: string | null;
}

/** What happened to a push, one step of a delivery trail. */
export type TrailStepKind = "queued" | "skipped" | "confirmed" | "read" | "dropped" | "sent" | "logged" | "retried"
  | "refused" | "device_removed" | "redirected" | "expired" | "delivered";

/** One step of a message's delivery trail. */
export interface TrailStep {
  at: string;
  step: TrailStepKind;
  /** Why: "quiet_hours", "burst", "waits_for_device", "waits_for_member", "delayed", "muted", "unmentioned",
   *  "snoozed", "no_provider", "follow_up". */
  reasons: string[];
  /** The push service's id or words. */
  detail?: string | null;
}

/** In one word, why a member was or was not told of a message. */
export type DeliverySummary = "own" | "silent" | "muted" | "unmentioned" | "snoozed" | "read" | "no_devices" | "pushed"
  | "confirmed" | "not_pushed" | "pending";

/** A message's delivery trail (`GET /v1/me/deliveries`). */
export interface Deliveries {
  conversation: string;
  message: { id: string; seq: number; sender: string; sentAt: string };
  /** How many hours steps are kept (0: the trail is off). */
  trailHours: number;
  members: {
    user: string;
    summary: DeliverySummary;
    read: boolean;
    /** Steps about the member, all their devices at once. */
    steps: TrailStep[];
    /** `platform` absent (or null): the device is gone since. */
    devices: { id: string; platform?: PushPlatform | null; confirmed: boolean; steps: TrailStep[] }[];
  }[];
}

/** How one of the troubleshooter's checks went. */
export type CheckState = "ok" | "warning" | "problem";

/** The troubleshooter's answer (`GET /v1/me/notifications/check`). */
export interface NotificationCheck {
  checkedAt: string;
  /** In this order: "devices", "permission", "level", "snooze", "quiet_hours", "pushes", "confirmations". */
  /** `action`: what to do, absent when there is nothing to do. */
  checks: { id: string; state: CheckState; title: string; detail: string; action?: string | null }[];
  devices: {
    id: string;
    platform: PushPlatform;
    lastSeen?: string | null;
    /** Absent (or null): it never reported one. */
    permission?: DevicePermission | null;
    /** Whether a stream of it is connected now. */
    connected: boolean;
    /** Whether its stream confirms what it takes in; absent (or null): it never connected one. */
    confirms?: boolean | null;
    /** Newest first, at most 5; `message` absent: it is gone. */
    lastPushes: { at: string; step: TrailStepKind; detail?: string | null; conversation: string; message?: string | null }[];
  }[];
}
