import Foundation
import NIOConcurrencyHelpers
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many file descriptors this process may open: its soft limit, first raised to the hard one (as servers do,
/// since the default soft limit is often far below what the system allows).
public enum FileDescriptorLimit {
    /// Descriptors kept for everything but connections: the database and its journal, the lock and secret files,
    /// standard streams, NIO's event loops and pipes.
    public static let reserve = 64

    /// Raises the soft limit to the hard one where allowed, and returns the soft limit in force.
    @discardableResult
    public static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 1_024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}

/// Counts open connections and turns away those beyond the limit, before the process runs out of descriptors:
/// at the descriptor limit the kernel would leave new connections waiting unanswered in the listen queue.
final class ConnectionGate: Sendable {
    /// The most connections open at once.
    let limit: Int
    private let open = NIOLockedValueBox(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Counts `channel` in until it closes; false (and nothing counted) when the server is full.
    func admit(_ channel: any Channel) -> Bool {
        let admitted = open.withLockedValue { open -> Bool in
            guard open < limit else { return false }
            open += 1
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { _ in self.open.withLockedValue { $0 -= 1 } }
        }
        return admitted
    }

    /// The answer for a connection turned away, written as raw bytes (the HTTP handlers are never added to it):
    /// ``APIError/serverBusy``'s status, `Retry-After` and body, and a close.
    static let busyResponse: ByteBuffer = {
        let error = APIError.serverBusy
        let head = "HTTP/1.1 \(error.status.code) \(error.status.reasonPhrase)\r\n"
            + "Content-Type: application/json; charset=utf-8\r\nContent-Length: \(error.body.count)\r\n"
            + "Retry-After: \(error.retryAfter ?? 1)\r\nConnection: close\r\n\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(error.body)
        return buffer
    }()
}

/// The only handler of a connection the ``ConnectionGate`` turned away: it writes the 503 as soon as the connection
/// is active, reads nothing, and closes.
final class BusyResponder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { answer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func answer(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let channel = context.channel
        context.writeAndFlush(NIOAny(ConnectionGate.busyResponse)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
