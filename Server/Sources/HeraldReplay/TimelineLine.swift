import HeraldCore

/// One line of a replay's output: `at`, `type`, and the fields of that type (absent values written as null).
struct TimelineLine: Encodable {
    let timed: TimedEffect

    init(_ timed: TimedEffect) {
        self.timed = timed
    }

    private enum Key: String, CodingKey {
        case at, type, banner, reason, conversation, message, notification
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(timed.at.roundedSeconds, forKey: .at)
        switch timed.effect {
        case .dismiss(let bannerID, let reason):
            try container.encode("dismiss", forKey: .type)
            try container.encode(bannerID, forKey: .banner)
            try container.encode(reason, forKey: .reason)
        case .navigate(let conversationID):
            try container.encode("navigate", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
        case .drop(let bannerID, let reason):
            try container.encode("drop", forKey: .type)
            try container.encode(bannerID, forKey: .banner)
            try container.encode(reason, forKey: .reason)
        case .clear(let conversationID):
            try container.encode("clear", forKey: .type)
            try container.encode(conversationID, forKey: .conversation)
        case .withdraw(let notificationID):
            try container.encode("withdraw", forKey: .type)
            try container.encode(notificationID, forKey: .notification)
        case .skip(let messageID, let reason):
            try container.encode("skip", forKey: .type)
            try container.encode(messageID, forKey: .message)
            try container.encode(reason, forKey: .reason)
        case .show(let banner):
            try container.encode("show", forKey: .type)
            try container.encode(BannerFields(banner), forKey: .banner)
        case .update(let banner):
            try container.encode("update", forKey: .type)
            try container.encode(BannerFields(banner), forKey: .banner)
        case .local(let notification):
            try container.encode("local", forKey: .type)
            try container.encode(NotificationFields(notification), forKey: .notification)
        }
    }
}

/// A banner as the timeline shows it.
private struct BannerFields: Encodable {
    let banner: Banner

    init(_ banner: Banner) {
        self.banner = banner
    }

    private enum Key: String, CodingKey {
        case id, conversation, title, subtitle, body, initials, avatarURL, count, tone, icon
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(banner.id, forKey: .id)
        try container.encode(banner.conversationID, forKey: .conversation)
        try container.encode(banner.title, forKey: .title)
        try container.encode(banner.subtitle, forKey: .subtitle)
        try container.encode(banner.body, forKey: .body)
        try container.encode(banner.initials, forKey: .initials)
        try container.encode(banner.avatarURL?.absoluteString, forKey: .avatarURL)
        try container.encode(banner.count, forKey: .count)
        try container.encode(banner.tone, forKey: .tone)
        try container.encode(banner.icon, forKey: .icon)
    }
}

/// A local notification as the timeline shows it.
private struct NotificationFields: Encodable {
    let notification: LocalNotification

    init(_ notification: LocalNotification) {
        self.notification = notification
    }

    private enum Key: String, CodingKey {
        case message, title, body, thread, silent, identifier, count, onlyIfDelivered
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(notification.messageID, forKey: .message)
        try container.encode(notification.title, forKey: .title)
        try container.encode(notification.body, forKey: .body)
        try container.encode(notification.thread, forKey: .thread)
        if notification.silent { try container.encode(true, forKey: .silent) }
        try container.encode(notification.identifier, forKey: .identifier)
        if let count = notification.count { try container.encode(count, forKey: .count) }
        if notification.onlyIfDelivered { try container.encode(true, forKey: .onlyIfDelivered) }
    }
}
