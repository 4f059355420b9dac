import ReelMetrics
import Foundation
import Logging

/// Turns the text of a setting into its value. Every setting arrives as text (from a flag, an
/// environment variable or a config file scalar), so each is parsed in exactly one place and says
/// the same thing about a bad value wherever it came from. Each function returns `nil` with the
/// reason in `expected`, which the loader puts after the setting's name and source.
enum SettingValueParsers {
    /// A whole number in `range`, with optional `_` digit separators (`10_000`).
    static func integer<T: FixedWidthInteger>(_ text: String, in range: ClosedRange<T>) -> Result<T, Expectation> {
        let digits = text.replacingOccurrences(of: "_", with: "")
        guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let value = T(digits), range.contains(value) else {
            return .failure(Expectation("a whole number from \(range.lowerBound) to \(range.upperBound)"))
        }
        return .success(value)
    }

    /// A size in bytes: a whole number with an optional binary unit (`K`/`KiB`, `M`/`MiB`,
    /// `G`/`GiB`, `T`/`TiB`, any case): `1048576`, `1MiB` and `1m` are the same.
    static func byteCount(_ text: String, in range: ClosedRange<Int>) -> Result<Int, Expectation> {
        let expectation = Expectation(
            "a size in bytes from \(formatBytes(range.lowerBound)) to \(formatBytes(range.upperBound)), such as 1048576 or 1MiB"
        )
        var body = text.trimmingCharacters(in: .whitespaces).lowercased().replacingOccurrences(of: "_", with: "")
        var shift = 0
        for (suffixes, unitShift) in [(["kib", "k"], 10), (["mib", "m"], 20), (["gib", "g"], 30), (["tib", "t"], 40)] {
            if let suffix = suffixes.first(where: { body.hasSuffix($0) }) {
                body = String(body.dropLast(suffix.count)).trimmingCharacters(in: .whitespaces)
                shift = unitShift
                break
            }
        }
        if shift == 0, body.hasSuffix("b") { body.removeLast() }
        guard !body.isEmpty, body.allSatisfy(\.isASCIIDigit), let number = Int(body),
            number <= Int.max >> shift, range.contains(number << shift)
        else { return .failure(expectation) }
        return .success(number << shift)
    }

    /// A duration in seconds, possibly fractional, with an optional `s` (`30`, `2.5`, `30s`).
    static func seconds(_ text: String, in range: ClosedRange<Double>) -> Result<Duration, Expectation> {
        var body = text.trimmingCharacters(in: .whitespaces).lowercased()
        if body.hasSuffix("s") { body.removeLast() }
        guard !body.isEmpty, body.allSatisfy({ $0.isASCIIDigit || $0 == "." }), let value = Double(body),
            range.contains(value)
        else {
            return .failure(Expectation("a number of seconds from \(range.lowerBound.formatted) to \(range.upperBound.formatted), such as 30 or 2.5"))
        }
        return .success(.nanoseconds(Int64((value * 1e9).rounded())))
    }

    /// An octal file mode (`0660`, `660`, `0o660`) that is not world-writable.
    static func socketMode(_ text: String) -> Result<UInt32, Expectation> {
        var digits = text.trimmingCharacters(in: .whitespaces).lowercased()
        if digits.hasPrefix("0o") { digits.removeFirst(2) }
        guard !digits.isEmpty, digits.count <= 4, let mode = UInt32(digits, radix: 8), mode <= 0o777 else {
            return .failure(Expectation("an octal permission mode such as 0600 or 0660"))
        }
        if mode & 0o002 != 0 {
            return .failure(Expectation("a mode that is not world-writable, such as 0600 or 0660"))
        }
        if mode & 0o600 != 0o600 {
            return .failure(Expectation("a mode that lets the owner read and write (0600 at least)"))
        }
        return .success(mode)
    }

    /// `on` or `off` (also `true`/`false`, `yes`/`no`, `1`/`0`), any case.
    static func onOff(_ text: String) -> Result<Bool, Expectation> {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "on", "true", "yes", "1": .success(true)
        case "off", "false", "no", "0": .success(false)
        default: .failure(Expectation("on or off"))
        }
    }

    /// A swift-log level by name, any case.
    static func logLevel(_ text: String) -> Result<Logger.Level, Expectation> {
        guard let level = Logger.Level(rawValue: text.trimmingCharacters(in: .whitespaces).lowercased()) else {
            let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(Expectation("one of \(names)"))
        }
        return .success(level)
    }

    /// Where metrics are served, or off.
    static func metricsAddress(_ text: String) -> Result<MetricsAddress?, Expectation> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "off" || trimmed == "none" { return .success(nil) }
        guard let address = MetricsAddress(trimmed) else {
            return .failure(Expectation("HOST:PORT (such as 127.0.0.1:9464), unix:PATH, or off"))
        }
        return .success(address)
    }

    /// A PostgreSQL URL for the shared log, or off. Only its scheme is checked here; the rest is
    /// the shared log's to judge when it connects.
    static func sharedLogURL(_ text: String) -> Result<String?, Expectation> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "off" || trimmed == "none" || trimmed.isEmpty { return .success(nil) }
        guard trimmed.hasPrefix("postgres://") || trimmed.hasPrefix("postgresql://") else {
            return .failure(Expectation("a postgres:// URL, such as postgres://reel@db.example/reel, or off"))
        }
        return .success(trimmed)
    }

    /// An http:// or https:// URL with a host, or off.
    static func httpURL(_ text: String) -> Result<String?, Expectation> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "off" || trimmed == "none" || trimmed.isEmpty { return .success(nil) }
        guard let url = URL(string: trimmed), url.scheme == "http" || url.scheme == "https", url.host?.isEmpty == false else {
            return .failure(Expectation("an http:// or https:// URL, such as http://127.0.0.1:4318, or off"))
        }
        return .success(trimmed)
    }

    static func path(_ text: String) -> Result<String, Expectation> {
        guard !text.isEmpty, !text.contains("\0") else { return .failure(Expectation("a file path")) }
        return .success(text)
    }

    /// "1 MiB" for 1048576, for messages about sizes.
    static func formatBytes(_ bytes: Int) -> String {
        for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift) \(unit)"
        }
        return "\(bytes) bytes"
    }
}

/// What a setting's value should have looked like.
struct Expectation: Error {
    var text: String
    init(_ text: String) { self.text = text }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension Double {
    /// `30` rather than `30.0`.
    var formatted: String { self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self) }
}
