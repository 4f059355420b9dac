/// What may name a branch of the history (`reel branch create NAME`): letters, digits, `-`, `_`,
/// `.` and `/`, at most 128 bytes, so that a name is safe in a command line, a URL and a message.
public enum BranchName {
    public static let maxLength = 128

    /// Why `name` cannot name a branch; `nil` when it can.
    public static func problem(_ name: String) -> String? {
        guard !name.isEmpty else { return "a branch name is not empty" }
        guard name.utf8.count <= maxLength else { return "a branch name is at most \(maxLength) bytes" }
        let allowed = name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_./".unicodeScalars.contains(scalar))
        }
        return allowed ? nil : "a branch name holds letters, digits, '-', '_', '.' and '/' only: '\(name)' does not"
    }
}
