import Foundation
import HeraldCore
import HeraldProtocol
import HeraldRecords
import Hummingbird

/// `GET /v1/push/conversations/{conversationId}/messages/{messageId}`: a message whose push was sent to the
/// caller's device, read with the device's key (`Authorization: Bearer <device key>`) instead of a user's token
/// (docs/push.md, "Private pushes"). A Notification Service Extension fetches the words its private push left out.
///
/// The key reads what its device was pushed privately (``PushContentMode/sender`` or ``PushContentMode/none``) in the
/// last ``PushGrant/lifetime``, while its user is a member:
/// another device's message, another user's, one never pushed to it, or anything after the device was removed or
/// registered again is refused alike (404, or 401 for a key no device has).
struct PushMessagesController {
    let store: any DeviceStore & EntryStore
    let clock: WallClock

    func addRoutes(to router: Router<HeraldRequestContext>) {
        router.get("v1/push/conversations/:id/messages/:messageId", use: message)
    }

    @Sendable func message(_ request: Request, context: HeraldRequestContext) async throws -> WirePushedMessage {
        guard let key = AuthenticationMiddleware.token(in: request, allowQuery: false) else {
            throw APIError(.unauthorized, .missingToken, "send the device key as `Authorization: Bearer <device key>`")
        }
        guard let digest = DeviceReadKey.digest(of: key) else {
            throw APIError(.unauthorized, .invalidDeviceKey, "that is not a device key: `PUT /v1/devices/{id}` returns one")
        }
        let conversationID = try context.parameters.id("id")
        let messageID = try context.parameters.id("messageId")
        let since = clock.now().addingTimeInterval(-PushGrant.lifetime)
        let grant: PushGrant
        switch try await store.pushedMessage(keyDigest: digest, conversationID: conversationID, messageID: messageID, since: since) {
        case .unknownKey:
            throw APIError(.unauthorized, .invalidDeviceKey, "no device has this key: register the device again for a new one")
        case .notGranted:
            throw Self.notPushed
        case .granted(let granted):
            grant = granted
        }
        guard let entry = try await store.entries(for: grant.userID, after: grant.seq - 1, through: grant.seq, limit: 1).first,
              entry.message.seq == grant.seq
        else { throw Self.notPushed }
        // The words a full push would have carried, as this device's user reads them.
        let content = PushContent(alert: entry, badge: 0, viewer: grant.userID)
        var data = content.data
        data["badge"] = nil
        return WirePushedMessage(title: content.title, body: content.body ?? "", data: data, message: WireMessage(entry.message))
    }

    private static let notPushed = APIError(.notFound, .notFound, "no message with that id was pushed to this device")
}

extension WirePushedMessage: @retroactive ResponseEncodable {}
