// `herald replay` in JavaScript: runs a trace (docs/replay.md) through the JavaScript engine (clients/js/src/engine.js) in virtual
// time and prints the timeline, one JSON object a line, as `herald replay` does. The conformance test
// (Tests/HeraldReplayTests/WebEngineConformanceTests.swift) runs every trace through both and compares.
//
//   node Tests/Web/replay.mjs [FILE]      (standard input without FILE)
//
// Traces here are ones `herald replay` accepts; this runner reads them without repeating its error checks.
import { readFileSync } from "node:fs";
import { Notifier, SECOND, bannerConfig, bannerInitials, generalBanner, notificationIdentifier } from "../../clients/js/src/engine.js";

const micros = (seconds) => Math.round(seconds * SECOND);
// A message's time without `sentAt`: `at` seconds after 2001-01-01, as `herald replay` counts.
const referenceDate = Date.UTC(2001, 0, 1);

function input(line) {
  switch (line.event) {
    case "app": return { type: "app", state: line.state };
    case "permission": return { type: "permission", granted: line.granted };
    case "open": return { type: "open", conversation: line.conversation };
    case "mute": return { type: "mute", conversation: line.conversation };
    case "unmute": return { type: "unmute", conversation: line.conversation };
    case "level": return {
      type: "level", conversation: line.conversation,
      choice: line.level == null ? null : { level: line.level, until: line.until ?? null },
    };
    case "settings": {
      const { at: _at, event: _event, ...settings } = line;
      return { type: "settings", settings };
    }
    case "message": return {
      type: "message",
      incoming: {
        message: {
          id: line.id, conversationId: line.conversation.id, senderId: line.sender.id,
          text: line.text ?? null, imageURL: line.imageURL ?? null,
          createdAt: line.sentAt ?? new Date(referenceDate + line.at * 1000).toISOString(),
          mentions: line.mentions ?? [], mentionsAll: line.mentionsAll ?? false,
          ...(line.seq !== undefined ? { seq: line.seq } : {}),
          ...(line.change ? { event: {
            type: line.change.type, members: line.change.members ?? [], title: line.change.title ?? null,
            ...(line.change.messageId !== undefined ? { messageId: line.change.messageId } : {}),
          } } : {}),
        },
        conversation: { id: line.conversation.id, kind: line.conversation.kind, title: line.conversation.title ?? null },
        sender: { id: line.sender.id, name: line.sender.name, avatarURL: line.sender.avatarURL ?? null },
      },
    };
    case "show": return {
      type: "show",
      banner: generalBanner({
        id: line.id, message: line.message, tone: line.tone, icon: line.icon ?? null,
        duration: line.duration === undefined ? 5 * SECOND : micros(line.duration),
      }),
    };
    case "tap": return { type: "gesture", gesture: { type: "tap" } };
    case "close": return { type: "gesture", gesture: { type: "close" } };
    case "swipe": return { type: "gesture", gesture: { type: "swipe", dy: line.dy } };
    case "touch": return { type: "gesture", gesture: { type: line.phase === "down" ? "touchDown" : "touchUp" } };
    case "dismissAll": return { type: "dismissAll" };
    case "pushed": return { type: "pushed", conversation: line.conversation, message: line.message };
    default: throw new Error(`unknown event ${line.event}`);
  }
}

function bannerFields(banner) {
  return {
    id: banner.id, conversation: banner.conversation, title: banner.title, subtitle: banner.subtitle,
    body: banner.body, initials: bannerInitials(banner), avatarURL: banner.avatarURL, count: banner.count,
    tone: banner.tone, icon: banner.icon,
  };
}

function timelineLine({ at, effect }) {
  const line = { at: at / SECOND, type: effect.type };
  switch (effect.type) {
    case "dismiss": case "drop": Object.assign(line, { banner: effect.banner, reason: effect.reason }); break;
    case "navigate": case "clear": line.conversation = effect.conversation; break;
    case "withdraw": line.notification = effect.notification; break;
    case "skip": Object.assign(line, { message: effect.message, reason: effect.reason }); break;
    case "show": case "update": line.banner = bannerFields(effect.banner); break;
    case "local": {
      const { seq, sender, replaces, ...shown } = effect.notification; // none is part of a timeline (replaces is the identifier)
      line.notification = { ...shown, identifier: notificationIdentifier(effect.notification) };
      break;
    }
  }
  return JSON.stringify(line);
}

const text = readFileSync(process.argv[2] ?? 0, "utf8");
let notifier;
const timeline = [];
let ended = false;
for (const raw of text.split("\n")) {
  if (raw.trim() === "" || ended) continue;
  const line = JSON.parse(raw);
  const at = micros(line.at);
  if (line.event === "configure") {
    notifier = new Notifier({
      userID: line.me,
      config: bannerConfig({
        capacity: line.capacity,
        duration: line.duration === undefined ? undefined : micros(line.duration),
        gap: line.gap === undefined ? undefined : micros(line.gap),
        coalesce: line.coalesce,
      }),
      localHold: line.localHold === undefined ? 0 : micros(line.localHold),
      ...(line.burstWindow === undefined ? {} : { burstWindow: micros(line.burstWindow) }),
    });
  } else if (line.event === "end") {
    timeline.push(...notifier.advance(at));
    ended = true;
  } else {
    timeline.push(...notifier.handle(input(line), at));
  }
}
if (!ended) {
  for (let deadline = notifier.nextDeadline; deadline !== null; deadline = notifier.nextDeadline) {
    timeline.push(...notifier.advance(deadline));
  }
}
process.stdout.write(timeline.map((entry) => timelineLine(entry) + "\n").join(""));
