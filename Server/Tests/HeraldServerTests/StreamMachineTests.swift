import HeraldProtocol
import NIOCore
import NIOWebSocket
import Testing
@testable import HeraldServer

/// A stream's rules, as a pure state machine: phases, the frame budget, the bounded queue, the keep-alive and the
/// closes. Frames are values, time is a number of seconds since the stream opened and the socket's state is a flag:
/// no channel, no clock, no hub.
@Suite("A stream's rules: phases, budget, queue, keep-alive and closes, without a socket")
struct StreamMachineTests {
    /// The machine and a stand-in for its handler: it carries out the pulls (``StreamMachine/Action/writeQueued``,
    /// ``StreamMachine/Action/handleFrames``) as the handler does and says what it did, as text.
    struct Driver {
        var machine: StreamMachine
        /// Whether the socket takes more.
        var writable = true
        /// Seconds since the stream opened.
        var now: Duration = .zero

        init(limits: ServerLimits = ServerLimits(), overflowDrain: Duration = .seconds(10)) {
            machine = StreamMachine(limits: limits, overflowDrain: overflowDrain)
        }

        mutating func run(_ actions: [StreamMachine.Action]) -> [String] {
            var done: [String] = []
            for action in actions {
                switch action {
                case .writeQueued:
                    while writable, let frame = machine.nextQueued() { done.append("write \(String(buffer: frame.bytes))") }
                    let next = machine.queueWritten()
                    done += run(next)
                case .handleFrames:
                    while let text = machine.nextFrame() {
                        done.append("handle \(text)")
                        if text == "send" { machine.sending() }
                    }
                    let next = machine.framesHandled()
                    done += run(next)
                case .write(let frame): done.append("write \(String(buffer: frame.bytes))")
                case .flush: done.append("flush")
                case .read: done.append("read")
                case .pong(let data): done.append("pong \(String(buffer: data))")
                case .ping: done.append("ping")
                case .sendClose(let closing):
                    done.append("close \(UInt16(webSocketErrorCode: closing.code)) \(closing.reason)\(closing.stopReading ? " and stop reading" : "")")
                case .answerClose(let code): done.append("answer close \(UInt16(webSocketErrorCode: code))")
                case .cut(let after, let noting): done.append("cut after \(after.components.seconds)s\(noting ? " noting" : "")")
                case .close: done.append("disconnect")
                case .refuseLater(let after): done.append("refuse after \(after.components.seconds)s")
                case .note(let note): done.append("note \(note)")
                }
            }
            return done
        }

        /// A frame from the client.
        mutating func receive(_ opcode: WebSocketOpcode, _ text: String, fin: Bool = true) -> [String] {
            let actions = machine.received(
                WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(string: text)), at: now, writable: writable)
            return run(actions)
        }

        mutating func enqueue(_ seq: Int64) -> [String] {
            let actions = machine.enqueue(OutboundFrame(seq: seq, text: "m\(seq)"), writable: writable)
            return run(actions)
        }

        /// A frame for the client as a lane hands it to the handler: ``StreamMachine/enqueueDirectly(_:writable:)``
        /// first, then ``StreamMachine/enqueue(_:flushing:writable:)`` when that says to decide.
        mutating func deliver(_ seq: Int64) -> [String] {
            switch machine.enqueueDirectly(OutboundFrame(seq: seq, text: "m\(seq)"), writable: writable) {
            case .write(let frame): return ["write \(String(buffer: frame.bytes))"]
            case .skip: return []
            case .decide: return enqueue(seq)
            }
        }

        /// Starts the stream and makes it live after `through`; what that wrote.
        mutating func goLive(through: Int64 = 0) -> [String] {
            let started = machine.start() ?? []
            var done = run(started)
            let live = machine.goLive(through: through, horizon: nil)
            done += run(live)
            return done
        }

        /// Gives the machine an input and carries out its actions.
        mutating func step(_ input: (inout StreamMachine) -> [StreamMachine.Action]?) -> [String] {
            let actions = input(&machine) ?? []
            return run(actions)
        }

        mutating func writableAgain() -> [String] {
            writable = true
            let actions = machine.writable()
            return run(actions)
        }
    }

    @Test("the frame budget: a burst is handled, the excess refused, and a client that goes on is closed 1008 and not read")
    func budget() {
        var limits = ServerLimits()
        limits.streamFrameBurst = 2
        limits.streamFramesPerSecond = 1
        var stream = Driver(limits: limits, overflowDrain: .seconds(10))
        _ = stream.goLive()
        #expect(stream.receive(.text, "a") == ["handle a"])
        #expect(stream.receive(.text, "b") == ["handle b"])
        let refused = stream.receive(.text, "c")
        #expect(refused.count == 2 && refused.first?.contains("rate_limited") == true && refused.last == "flush")
        #expect(stream.receive(.text, "d").first?.contains("rate_limited") == true, "refusals have a budget too")
        #expect(stream.receive(.text, "e") == [
            "note flooding", "cut after 10s noting", "close 1008 too many frames and stop reading",
        ])
        #expect(stream.receive(.text, "f").isEmpty, "closing: nothing more is handled")

        // A second later a token is back: the frame is handled.
        var patient = Driver(limits: limits)
        _ = patient.goLive()
        _ = patient.receive(.text, "a")
        _ = patient.receive(.text, "b")
        patient.now = .seconds(1)
        #expect(patient.receive(.text, "c") == ["handle c"])
    }

    @Test("a slow reader: frames queue while the socket takes no more; past the bounds, the queue is written, then 1008")
    func slowReader() {
        var limits = ServerLimits()
        limits.streamBufferFrames = 2
        var stream = Driver(limits: limits, overflowDrain: .seconds(10))
        _ = stream.goLive()
        #expect(stream.enqueue(1) == ["write m1"], "live, nothing queued and the socket takes it: written at once")
        #expect(stream.step { $0.flush() } == ["flush"])
        stream.writable = false
        #expect(stream.enqueue(2).isEmpty)
        #expect(stream.enqueue(3).isEmpty)
        #expect(stream.machine.queued.frames == 2)
        // The third overflows: the close is due, and the client has the drain time to take what was queued.
        #expect(stream.enqueue(4) == ["note tooSlow", "cut after 10s noting"])
        #expect(stream.enqueue(5).isEmpty, "closing: nothing more is queued")
        #expect(stream.writableAgain() == [
            "write m2", "write m3", "flush", "close 1008 too slow: reconnect with after", "cut after 5s",
        ])
        #expect(stream.machine.writtenThrough == 3)
    }

    @Test("a lane's delivery without a list of actions does what enqueue does, in every phase")
    func directDelivery() {
        var limits = ServerLimits()
        limits.streamBufferFrames = 2
        func scenario(_ deliver: (inout Driver, Int64) -> [String]) -> [[String]] {
            var stream = Driver(limits: limits, overflowDrain: .seconds(10))
            var steps = [stream.run(stream.machine.start() ?? [])]
            steps.append(deliver(&stream, 1))  // catching up: queued
            steps.append(deliver(&stream, 3))
            steps.append(stream.run(stream.machine.goLive(through: 2, horizon: nil)))
            steps.append(deliver(&stream, 2))  // the catch-up had it
            steps.append(deliver(&stream, 4))
            steps.append(stream.step { $0.flush() })
            steps.append(stream.step { $0.flush() })
            stream.writable = false
            for seq in Int64(5)...7 { steps.append(deliver(&stream, seq)) }
            steps.append(stream.writableAgain())
            steps.append(deliver(&stream, 8))
            return steps
        }
        let listed = scenario { $0.enqueue($1) }
        let direct = scenario { $0.deliver($1) }
        #expect(direct == listed)
        #expect(direct[1].isEmpty && direct[2].isEmpty, "queued while catching up")
        #expect(direct[3].contains("write m3") && !direct[3].contains("write m1"), "after ready: what came after the catch-up")
        #expect(direct[4].isEmpty, "a message the catch-up wrote is not written again")
        #expect(direct[5] == ["write m4"] && direct[6] == ["flush"] && direct[7].isEmpty)
        #expect(direct[8].isEmpty && direct[9].isEmpty, "queued while the socket takes no more")
        #expect(direct[10] == ["note tooSlow", "cut after 10s noting"])
        #expect(direct[12].isEmpty, "closing: nothing more")
    }

    @Test("the catch-up: live frames queue meanwhile; ready, then those after the catch-up's end")
    func catchUp() {
        var stream = Driver()
        _ = stream.step { $0.start() }
        #expect(stream.enqueue(2).isEmpty && stream.enqueue(3).isEmpty, "catching up: queued")
        let page = stream.machine.catchUp([OutboundFrame(seq: 1, text: "m1"), OutboundFrame(seq: 2, text: "m2")])
        #expect(stream.run(page ?? []) == ["write m1", "write m2", "flush"])
        let live = stream.machine.goLive(through: 2, horizon: nil)
        let done = stream.run(live)
        #expect(done.count == 3 && done[0].contains("\"ready\"") && done[1] == "write m3" && done[2] == "flush")
        #expect(stream.machine.writtenThrough == 3)
        #expect(stream.machine.catchUp([]) == nil, "live: no more catch-up")
    }

    @Test("a refusal waits for the client's first frame (or a second), then an error frame and 1008 with its code")
    func refusal() {
        var silent = Driver()
        #expect(silent.step { $0.refuse(APIError(.unauthorized, .invalidToken, "bad token")) } == ["refuse after 1s"])
        let due = silent.machine.refusalDue()
        let sent = silent.run(due)
        #expect(sent.count == 2 && sent[0].contains("invalid_token") && sent[1] == "close 1008 invalid_token and stop reading")
        #expect(silent.step { $0.refusalDue() }.isEmpty, "once")

        var talking = Driver()
        _ = talking.step { $0.refuse(APIError(.unauthorized, .invalidToken, "bad token")) }
        #expect(talking.receive(.text, "{}").last == "close 1008 invalid_token and stop reading")
    }

    @Test("the WebSocket protocol: fragments joined up to the limit, 1002 and 1009 and 1007, pings answered, a close answered")
    func webSocket() {
        var limits = ServerLimits()
        limits.maxAcceptedFrameBytes = 8
        var stream = Driver(limits: limits)
        _ = stream.goLive()
        #expect(stream.receive(.text, "ab", fin: false).isEmpty)
        #expect(stream.receive(.continuation, "cd") == ["handle abcd"])
        #expect(stream.receive(.ping, "hi") == ["pong hi"])
        #expect(stream.receive(.text, "12345", fin: false).isEmpty)
        #expect(stream.receive(.continuation, "6789") == ["close 1009 message too large and stop reading"])
        #expect(stream.receive(.ping, "hi").isEmpty, "no pong after the close")

        var stray = Driver()
        #expect(stray.receive(.continuation, "x") == ["close 1002 a continuation with no message and stop reading"])
        var nested = Driver()
        _ = nested.receive(.text, "a", fin: false)
        #expect(nested.receive(.text, "b") == ["close 1002 a new message inside a fragmented one and stop reading"])

        var garbled = Driver()
        _ = garbled.goLive()
        let actions = garbled.machine.received(
            WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: [0x7B, 0xFF, 0x7D])), at: .zero, writable: true)
        #expect(garbled.run(actions) == ["close 1007 text is not UTF-8 and stop reading"])

        var closing = Driver()
        var code = ByteBuffer()
        code.write(webSocketErrorCode: .goingAway)
        let close = closing.machine.received(WebSocketFrame(fin: true, opcode: .connectionClose, data: code), at: .zero, writable: true)
        #expect(closing.run(close) == ["answer close 1001"])
        #expect(closing.receive(.connectionClose, "") == ["disconnect"], "a second close: the connection goes")
    }

    @Test("the server's close: what is queued first; a client that is still read must answer the close within 5 s")
    func serverClose() {
        var stream = Driver(overflowDrain: .seconds(10))
        _ = stream.goLive()
        stream.writable = false
        _ = stream.enqueue(1)
        let close = stream.machine.close(StreamMachine.Closing(code: .normalClosure, reason: "bye", stopReading: false))
        #expect(stream.run(close) == ["cut after 10s noting"], "nothing written: no close frame yet")
        #expect(stream.writableAgain() == ["write m1", "flush", "close 1000 bye", "cut after 5s"])
        #expect(stream.step { $0.close(StreamMachine.Closing(code: .goingAway, reason: "", stopReading: true)) }.isEmpty)
    }

    @Test("a send holds the frames after it; past the read-ahead the socket is not read until they are handled")
    func sendHoldsFrames() {
        var stream = Driver()
        _ = stream.goLive()
        #expect(stream.receive(.text, "send") == ["handle send"])
        for index in 0..<StreamMachine.readAhead {
            #expect(stream.receive(.text, "f\(index)").isEmpty, "waits behind the send")
        }
        #expect(stream.machine.readRequested() == false, "too many wait: the read is held back")
        let answer = stream.machine.sent(OutboundFrame(text: "ack"), writable: true)
        let done = stream.run(answer)
        #expect(done.prefix(2) == ["write ack", "flush"])
        #expect(Array(done.dropFirst(2).dropLast()) == (0..<StreamMachine.readAhead).map { "handle f\($0)" })
        #expect(done.last == "read", "room again: the held read goes on")
        let reads = stream.machine.readRequested()
        #expect(reads)

        var opening = Driver()
        #expect(opening.receive(.text, "early").isEmpty, "before the start, frames wait")
        #expect(opening.step { $0.start() } == ["handle early"])
    }

    @Test("the keep-alive: a ping each period; a client that answered nothing since the last one is disconnected")
    func keepAlive() {
        var stream = Driver()
        #expect(stream.step { $0.tick() } == ["ping"])
        _ = stream.receive(.pong, "")
        #expect(stream.step { $0.tick() } == ["ping"], "it answered")
        #expect(stream.step { $0.tick() } == ["disconnect"])
    }

    @Test("once the connection ended, nothing is written, queued or started")
    func ended() {
        var stream = Driver()
        _ = stream.goLive()
        stream.writable = false
        _ = stream.enqueue(1)
        let first = stream.machine.ended()
        let second = stream.machine.ended()
        #expect(first)
        #expect(!second, "once")
        #expect(stream.machine.queued.frames == 0)
        #expect(stream.enqueue(2).isEmpty)
        #expect(stream.writableAgain().isEmpty)
        #expect(stream.machine.start() == nil)
    }
}
