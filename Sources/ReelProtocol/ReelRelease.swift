/// Which release of Reel this is: what `reeld --version` and `reel --version` print, and the
/// `version` of the `hello` result.
public enum ReelRelease {
    /// The release's version (semantic versioning).
    public static let version = "0.1.0"

    /// One line for `--version`: the program's name, the release and the protocol version, such as
    /// `reeld 0.1.0 (protocol 1)`.
    public static func versionLine(program: String) -> String {
        "\(program) \(version) (protocol \(WireProtocol.version))"
    }
}
