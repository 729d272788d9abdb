/// Herald's version, as `herald --version` says it.
public enum HeraldVersion {
    /// Major.minor.patch: the minor number moves with each capability that lands.
    public static let current = "0.42.0"
}
