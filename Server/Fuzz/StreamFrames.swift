import Foundation
@testable import HeraldProtocol

/// The stream's frames: what the server reads from a client's WebSocket (``ClientFrame``, its `id` read leniently for
/// a refusal, the focused conversation's id checked) and what a client reads from the server (``ServerFrame``).
enum StreamFramesTarget {
    static func run(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        _ = ClientFrame.reference(in: text)
        if let frame = try? ClientFrame(parsing: text) {
            // What a client writes reads back as the same frame.
            precondition((try? ClientFrame(parsing: frame.text)) == frame, "a client frame does not read back: \(frame)")
            switch frame {
            case .focus(let id?): _ = HeraldID.problem(with: id)
            case .send(let conversationID, let id, _, _, let mentions, _):
                for id in [conversationID, id] + mentions { _ = HeraldID.problem(with: id) }
            default: break
            }
        }
        // The confirmation read without a decoder is the one the decoder reads.
        if let through = ClientFrame.plainConfirmation(text) {
            let decoded = try? WireJSON.decoder().decode(ClientFrame.self, from: Data(text.utf8))
            precondition(decoded == .received(through: through), "the plain confirmation differs from the decoder's: \(text)")
        }
        if let frame = try? ServerFrame(parsing: text) {
            // A message frame written by hand is the encoder's, byte for byte (MessageFrameJSON), for the times a
            // server stamps (its clock's; before 1583 Foundation's calendar is the Julian one, the hand's Gregorian).
            if case .message(let incoming) = frame, incoming.message.sentAt >= Date(timeIntervalSince1970: 0),
               let written = MessageFrameJSON.text(incoming) {
                precondition(written == WireJSON.string(frame), "the hand-written message frame differs from the encoder's: \(text)")
            }
            _ = try? ServerFrame(parsing: frame.text)
        }
    }
}
