extension Duration {
    /// This duration in seconds, as a `Double`.
    public var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
