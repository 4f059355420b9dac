#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// When to color output: the values of a `--color auto|always|never` flag.
public enum ColorChoice: String, Sendable, CaseIterable {
    /// Color when a person is likely to see it: see ``usesColor(isTerminal:environment:)``.
    case auto
    /// Always color, also into a pipe or a file, and whatever `NO_COLOR` says.
    case always
    /// Never color.
    case never

    /// Whether output to a destination gets ANSI styles.
    ///
    /// `auto` colors only when all of these hold: the destination is a terminal (`isatty`);
    /// `NO_COLOR` is unset or empty (<https://no-color.org>: any non-empty value disables color);
    /// and `TERM` is not `dumb` (a terminal that cannot show escape sequences; an unset `TERM`
    /// does not count as dumb). `always` and `never` ignore all three, because a flag given for
    /// one run overrides the environment (as no-color.org asks).
    ///
    /// - Parameters:
    ///   - isTerminal: Whether the destination is a terminal.
    ///   - environment: Looks up an environment variable; `nil` when it is unset.
    /// - Returns: `true` to use color.
    public func usesColor(isTerminal: Bool, environment: (String) -> String?) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto:
            guard isTerminal else { return false }
            if let noColor = environment("NO_COLOR"), !noColor.isEmpty { return false }
            return environment("TERM") != "dumb"
        }
    }

    /// Whether output to `sink` gets ANSI styles, given this process's environment.
    ///
    /// - Parameter sink: The descriptor the output goes to.
    /// - Returns: `true` to use color. See ``usesColor(isTerminal:environment:)``.
    public func usesColor(for sink: FileDescriptorSink) -> Bool {
        // Only `auto` asks the descriptor and the environment.
        self == .auto ? usesColor(isTerminal: sink.isTerminal, environment: Self.processEnvironment) : self == .always
    }

    /// Reads a variable of this process's environment.
    private static func processEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
