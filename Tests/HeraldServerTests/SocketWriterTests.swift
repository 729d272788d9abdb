import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
@testable import HeraldServer

/// A stream's frames reach its socket in batches: what queued while the last batch was written goes out together,
/// with one flush; a socket that takes no more holds the writer, and the queue's budget then drops the connection.
@Suite("Frames reach the socket in batches, one flush each")
struct SocketWriterTests {
    @Test("what is queued is taken at once, in order; a finished queue still gives what it held, then nothing")
    func outboxGivesBatches() async {
        let overflows = NIOLockedValueBox(0)
        let outbox = Outbox(frameLimit: 100, byteLimit: 1_000) { overflows.withLockedValue { $0 += 1 } }
        for index in 1...5 { outbox.send(OutboundFrame(seq: Int64(index), text: "frame \(index)")) }
        #expect(await outbox.nextBatch().map(\.seq) == [1, 2, 3, 4, 5])

        async let waiting = outbox.nextBatch()
        try? await Task.sleep(for: .milliseconds(50))
        outbox.send(OutboundFrame(seq: 6, text: "frame 6"))
        #expect(await waiting.map(\.seq) == [6], "a waiting writer is woken by the next frame")

        outbox.send(OutboundFrame(seq: 7, text: "frame 7"))
        outbox.finish()
        outbox.send(OutboundFrame(seq: 8, text: "frame 8"))
        #expect(await outbox.nextBatch().map(\.seq) == [7])
        #expect(await outbox.nextBatch().isEmpty)
        #expect(!outbox.overflowed)
        #expect(overflows.withLockedValue { $0 } == 0, "finishing is no overflow")
    }

    @Test("the byte budget counts what is queued, not what was taken; beyond it the queue overflows and ends")
    func outboxBudget() async {
        let overflows = NIOLockedValueBox(0)
        let outbox = Outbox(frameLimit: 100, byteLimit: 10) { overflows.withLockedValue { $0 += 1 } }
        outbox.send(OutboundFrame(text: "12345"))
        outbox.send(OutboundFrame(text: "12345"))
        #expect(await outbox.nextBatch().count == 2)
        outbox.send(OutboundFrame(text: "1234567890"))
        #expect(!outbox.overflowed, "what was taken no longer counts")
        outbox.send(OutboundFrame(text: "1"))
        #expect(outbox.overflowed)
        outbox.send(OutboundFrame(text: "1"))
        #expect(overflows.withLockedValue { $0 } == 1, "told once")
        #expect(await outbox.nextBatch().count == 1, "what was queued before the overflow is still written")
        #expect(await outbox.nextBatch().isEmpty)
    }

    @Test("a batch is written in order with one flush; the next waits while the channel takes no more")
    func oneFlushPerBatch() async throws {
        let flushes = FlushCounter()
        let channel = NIOAsyncTestingChannel()
        try await channel.pipeline.addHandler(flushes)
        var writer = try await SocketWriter.attach(to: channel)

        try await writer.write((1...5).map { OutboundFrame(seq: Int64($0), text: "frame \($0)") })
        try await writer.drain()
        #expect(flushes.count == 1)
        for index in 1...5 {
            let frame = try await channel.readOutbound(as: WebSocketFrame.self)
            #expect(frame.map { String(buffer: $0.data) } == "frame \(index)")
            #expect(frame?.opcode == .text && frame?.fin == true)
        }

        // The channel is over its high-water mark: the batch is written, and the next one waits for it to drain.
        channel.isWritable = false
        try await writer.write(OutboundFrame(text: "while full"))
        try await withThrowingTaskGroup(of: Void.self) { next in
            next.addTask { [writer] in
                var writer = writer
                try await writer.write(OutboundFrame(text: "after"))
                try await writer.drain()
            }
            // Given a moment, it still has not flushed: it waits for the channel.
            try await Task.sleep(for: .milliseconds(100))
            #expect(flushes.count == 2, "the second batch waits")
            channel.isWritable = true
            channel.pipeline.fireChannelWritabilityChanged()
            try await next.waitForAll()
        }
        #expect(flushes.count == 3)
        _ = try await channel.finish(acceptAlreadyClosed: true)
    }

    @Test("a connection still open when its drop timer fires is closed; one closed before is left alone")
    func dropTimer() async throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 9)
        let channel = NIOAsyncTestingChannel()
        try await channel.connect(to: address)
        let writer = try await SocketWriter.attach(to: channel)
        let fired = NIOLockedValueBox(0)
        writer.close(after: .milliseconds(10)) { fired.withLockedValue { $0 += 1 } }
        await channel.testingEventLoop.advanceTime(by: .milliseconds(20))
        #expect(fired.withLockedValue { $0 } == 1)
        #expect(!channel.isActive)

        let other = NIOAsyncTestingChannel()
        try await other.connect(to: address)
        let otherWriter = try await SocketWriter.attach(to: other)
        otherWriter.close(after: .milliseconds(10)) { fired.withLockedValue { $0 += 1 } }
        _ = try await other.finish(acceptAlreadyClosed: true)
        await other.testingEventLoop.advanceTime(by: .milliseconds(20))
        #expect(fired.withLockedValue { $0 } == 1, "the client went away first")
    }

    @Test("a writer waiting on a full channel is released with an error when the connection closes")
    func closedWhileFull() async throws {
        let channel = NIOAsyncTestingChannel()
        var writer = try await SocketWriter.attach(to: channel)
        channel.isWritable = false
        try await writer.write(OutboundFrame(text: "stuck"))
        writer.close()
        await #expect(throws: (any Error).self) { try await writer.drain() }
    }
}

/// Counts flushes on their way to the socket.
private final class FlushCounter: ChannelOutboundHandler, Sendable {
    typealias OutboundIn = WebSocketFrame
    private let flushes = NIOLockedValueBox(0)

    var count: Int { flushes.withLockedValue { $0 } }

    func flush(context: ChannelHandlerContext) {
        flushes.withLockedValue { $0 += 1 }
        context.flush()
    }
}
