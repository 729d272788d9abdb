import CHeapUsage

/// Bytes the allocator has handed out and not taken back, for measuring what a structure costs.
public enum HeapUsage {
    /// The bytes in use now, or nil where the platform does not tell.
    public static func bytesInUse() -> Int? {
        let bytes = herald_heap_bytes_in_use()
        return bytes < 0 ? nil : Int(bytes)
    }
}
