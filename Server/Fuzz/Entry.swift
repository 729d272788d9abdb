import Foundation

// Herald's fuzz targets, one executable for libFuzzer (scripts/fuzz builds and runs it; docs/testing.md): each input
// goes to the target HERALD_FUZZ_TARGET names. A target throws nothing and ignores refusals: what it finds is a
// crash (a trap, a failed precondition on a property the code promises, AddressSanitizer's report), a leak or a
// timeout.

/// The targets, by name.
let targets: [String: @Sendable (Data) -> Void] = [
    "stream-frames": StreamFramesTarget.run,
    "request-targets": RequestTargetsTarget.run,
    "ids": IDsTarget.run,
    "tokens": TokensTarget.run,
    "webhook-signature": WebhookSignatureTarget.run,
    "replay-trace": ReplayTraceTarget.run,
    "keys": KeysTarget.run,
]

/// The target of this run.
let target: @Sendable (Data) -> Void = {
    let name = ProcessInfo.processInfo.environment["HERALD_FUZZ_TARGET"] ?? ""
    guard let target = targets[name] else {
        FileHandle.standardError.write(Data(
            "herald-fuzz: HERALD_FUZZ_TARGET must name one of \(targets.keys.sorted().joined(separator: ", ")), not `\(name)`\n".utf8))
        exit(2)
    }
    return target
}()

/// libFuzzer's entry: one input.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    target(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}

/// libFuzzer's driver: what its own `main` calls (a C function, named by its symbol: pointers and integers pass
/// alike in Swift's and C's calling conventions).
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The program's entry. A debug build names an executable's entry `<module>_main` and links `main` to it (so tests can
/// import executables), which takes the place of libFuzzer's `main`: this does what that one does.
@_cdecl("herald_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc, argv = argv
    return runDriver(&argc, &argv, testOneInput)
}

/// The result of async `work`, waited for on this thread (libFuzzer's entry is synchronous).
func waitFor<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    // An unstructured task: libFuzzer's entry is synchronous, with no task for it to be a child of.
    Task {
        box.value = await work()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// Where an async task leaves its result for a waiting thread (the semaphore orders the two).
final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

extension Data {
    /// The bytes before the first `separator` and those after it (all and nothing when there is none).
    func split(at separator: UInt8) -> (Data, Data) {
        guard let index = firstIndex(of: separator) else { return (self, Data()) }
        return (self[startIndex..<index], self[(index + 1)...])
    }
}
