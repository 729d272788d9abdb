import Foundation

/// An IP address, as the bytes a socket connects to.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes for IPv4, 16 for IPv6.
    let bytes: [UInt8]

    /// The address written as `text`: a dotted quad (exactly four decimal parts, as `inet_pton` reads it: `127.1`,
    /// `0x7f.0.0.1` and `2130706433` are not addresses here) or an IPv6 address without brackets or zone.
    init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &v6) { Array($0) }
    }

    init(bytes: [UInt8]) {
        precondition(bytes.count == 4 || bytes.count == 16)
        self.bytes = bytes
    }

    var isV4: Bool { bytes.count == 4 }

    /// The address in its usual text form (`203.0.113.7`, `2001:db8::1`).
    var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = isV4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether the first `length` bits equal `prefix`'s.
    func isIn(_ prefix: [UInt8], length: Int) -> Bool {
        guard prefix.count == bytes.count else { return false }
        var bits = length
        for (own, other) in zip(bytes, prefix) {
            guard bits > 0 else { return true }
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if own & mask != other & mask { return false }
            bits -= 8
        }
        return true
    }

    /// The IPv4 address an IPv6 address carries in its last 32 bits, for the forms that mean "this IPv4 address":
    /// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated) and IPv4-translated
    /// (`::ffff:0:a.b.c.d`).
    var embeddedV4: IPAddress? {
        guard !isV4 else { return nil }
        let head = bytes[0..<12]
        let mapped = head.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        let translated = head.prefix(8).allSatisfy { $0 == 0 } && bytes[8] == 0xFF && bytes[9] == 0xFF
            && bytes[10] == 0 && bytes[11] == 0
        // `::` and `::1` are not IPv4-compatible forms of 0.0.0.0 and 0.0.0.1; they are judged as IPv6.
        let compatible = head.allSatisfy { $0 == 0 } && bytes[12...].contains { $0 != 0 } && !(bytes[12...14].allSatisfy { $0 == 0 })
        guard mapped || translated || compatible else { return nil }
        return IPAddress(bytes: Array(bytes[12...]))
    }
}

/// Where Herald may connect on someone else's say-so: a browser's Web Push endpoint is a URL that a user registered,
/// so without a check anyone could make the server send requests into its own network (server-side request forgery).
///
/// The policy is applied twice, and the second time is what counts: when a URL is registered its host is judged as
/// written (names that are local by definition, address literals, every IPv6 form), and before every request the
/// name is resolved once, each address judged, and the connection made to the address judged (``GuardedHTTP``), so a
/// name that resolves elsewhere the second time (DNS rebinding) changes nothing.
///
/// An address may be connected to only if it is public unicast: IPv4 outside the special-purpose ranges (RFC 6890
/// and its successors: this network, private, shared, loopback, link-local, documentation, benchmarking, 6to4 relay,
/// multicast, reserved, broadcast), IPv6 inside global unicast (`2000::/3`) and outside its special ranges (Teredo
/// and the other IETF assignments in `2001::/23`, documentation, 6to4 `2002::/16`, SRv6). IPv6 forms that carry an
/// IPv4 address (mapped, compatible, translated) are judged by that address; NAT64 (`64:ff9b::/96` and
/// `64:ff9b:1::/48`) is refused outright, since the IPv4 address it reaches is whatever the network's translator
/// makes of it. Zone ids (`fe80::1%eth0`) are refused.
struct AddressPolicy: Hashable, Sendable {
    /// Take private and local hosts too (`HERALD_WEBPUSH_ALLOW_PRIVATE=1`): for tests, and for push services run
    /// inside the operator's own network.
    var allowPrivate: Bool

    /// Names that are local by definition (RFC 6761, RFC 8375) or by wide convention.
    private static let localSuffixes = ["localhost", "local", "internal", "home.arpa", "localdomain", "lan", "intranet"]

    /// What is wrong with `host` as written in a URL (a name, an IPv4 literal, or an IPv6 literal with or without
    /// brackets), or nil when it may be public. A name's addresses are judged only when it is resolved.
    func problem(withHost host: String) -> String? {
        guard !allowPrivate else { return nil }
        var bare = host
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        if bare.contains("%") { return "must not name a network interface (an IPv6 zone id): \(host)" }
        if bare.contains(":") {
            guard let address = IPAddress(bare) else { return "is not an IPv6 address: \(host)" }
            return problem(with: address)
        }
        let name = (bare.hasSuffix(".") ? String(bare.dropLast()) : bare).lowercased()
        if let address = IPAddress(name) { return problem(with: address) }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        // As browsers read URLs (WHATWG URL, "ends in a number"): a host whose last label is a number is an IPv4
        // address, and any spelling but the dotted quad (`127.1`, `0x7f.1`, `2130706433`) is refused.
        if let last = labels.last, Self.isNumeric(last) {
            return "must write an IPv4 address as four decimal numbers: \(host)"
        }
        if labels.count < 2 || labels.contains(where: \.isEmpty) {
            return "must be on a public host, not \(name)"
        }
        for suffix in Self.localSuffixes where name == suffix || name.hasSuffix("." + suffix) {
            return "must be on a public host, not \(name)"
        }
        return nil
    }

    /// What is wrong with connecting to `address`, or nil when it is public unicast (or private ones are allowed).
    func problem(with address: IPAddress) -> String? {
        guard !allowPrivate else { return nil }
        if let v4 = address.embeddedV4 {
            return Self.isPublic(v4: v4) ? nil : "must not be a loopback, private, link-local or reserved address (\(address))"
        }
        if address.isV4 {
            return Self.isPublic(v4: address) ? nil : "must not be a loopback, private, link-local or reserved address (\(address))"
        }
        return Self.isPublic(v6: address) ? nil : "must not be a loopback, private, link-local, translated or reserved address (\(address))"
    }

    private static func isNumeric(_ label: Substring) -> Bool {
        guard !label.isEmpty else { return false }
        let lower = label.lowercased()
        if lower.hasPrefix("0x") { return lower.dropFirst(2).allSatisfy(\.isHexDigit) }
        return lower.allSatisfy(\.isASCII) && lower.allSatisfy(\.isNumber)
    }

    /// IPv4 ranges that are not public unicast (IANA's special-purpose registry).
    private static let v4Special: [([UInt8], Int)] = [
        ([0, 0, 0, 0], 8),  // this network
        ([10, 0, 0, 0], 8),  // private
        ([100, 64, 0, 0], 10),  // shared address space (carrier-grade NAT)
        ([127, 0, 0, 0], 8),  // loopback
        ([169, 254, 0, 0], 16),  // link-local (cloud metadata services live here)
        ([172, 16, 0, 0], 12),  // private
        ([192, 0, 0, 0], 24),  // IETF protocol assignments
        ([192, 0, 2, 0], 24),  // documentation
        ([192, 88, 99, 0], 24),  // 6to4 relay anycast
        ([192, 168, 0, 0], 16),  // private
        ([198, 18, 0, 0], 15),  // benchmarking
        ([198, 51, 100, 0], 24),  // documentation
        ([203, 0, 113, 0], 24),  // documentation
        ([224, 0, 0, 0], 4),  // multicast
        ([240, 0, 0, 0], 4),  // reserved, and the broadcast address
    ]

    /// IPv6 ranges inside global unicast that are not public unicast.
    private static let v6Special: [([UInt8], Int)] = [
        (v6([0x2001, 0]), 23),  // IETF protocol assignments, Teredo (2001::/32) among them
        (v6([0x2001, 0x0db8]), 32),  // documentation
        (v6([0x2002]), 16),  // 6to4: an IPv4 address in disguise
        (v6([0x3fff]), 20),  // documentation
        (v6([0x5f00]), 16),  // segment routing
    ]

    private static func v6(_ groups: [UInt16]) -> [UInt8] {
        var bytes = groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        bytes += [UInt8](repeating: 0, count: 16 - bytes.count)
        return bytes
    }

    private static func isPublic(v4 address: IPAddress) -> Bool {
        !v4Special.contains { address.isIn($0.0, length: $0.1) }
    }

    private static func isPublic(v6 address: IPAddress) -> Bool {
        // Global unicast is 2000::/3; everything else (loopback, unspecified, NAT64 64:ff9b::/96 and 64:ff9b:1::/48,
        // discard 100::/64, unique local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast) is outside it.
        address.isIn(v6([0x2000]), length: 3) && !v6Special.contains { address.isIn($0.0, length: $0.1) }
    }
}
