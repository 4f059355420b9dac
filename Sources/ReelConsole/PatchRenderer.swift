import ReelJSON

/// A JSON Patch (RFC 6902) as lines a person reads, as `reel show` and `reel diff` print it.
///
/// One line per operation, in patch order:
///
/// ```
/// + /todos/3  {"title":"milk"}          add (green)
/// - /todos/1  (was "eggs")              remove (red)
/// ~ /character/hp  10 → -5              replace (yellow)
/// > /a moved from /b                    move
/// = /x copied from /y                   copy
/// ? /x  test "v"                        test (dim)
/// ```
///
/// Given the document as it was before the patch, removes and replaces show the value they
/// overwrote (`(was …)`, `old → new`), and an `add` that lands on an existing object member or
/// the root — which replaces it — is shown as the replacement it is. Old values are looked up in
/// the document as it stands before each operation (the patch is replayed on a copy), so an
/// earlier operation that shifted array elements does not make a later line show the wrong value.
/// If the patch does not apply to that document, lines from the failing operation on show no old
/// values.
///
/// Values are compact JSON, cut with `…` beyond ``valueWidth`` terminal columns; the whole
/// document is `(root)`. Control characters in paths are escaped, as JSON already escapes them in
/// values.
public struct PatchRenderer: Sendable {
    /// Colors each line by its kind of change when enabled.
    public var styler: Styler
    /// The most terminal columns one value may take before it is abbreviated.
    public var valueWidth: Int

    /// A renderer.
    ///
    /// - Parameters:
    ///   - styler: Colors lines when enabled.
    ///   - valueWidth: The most columns a value may take; longer ones end in `…`.
    public init(styler: Styler = .plain, valueWidth: Int = 60) {
        self.styler = styler
        self.valueWidth = valueWidth
    }

    /// The lines for `patch`, without newlines.
    ///
    /// - Parameters:
    ///   - patch: The operations to show.
    ///   - before: The document the patch applies to, to show old values; `nil` to show none.
    /// - Returns: One line per operation, in patch order.
    public func lines(for patch: JSONPatch, before: JSONValue? = nil) -> [String] {
        let overwritten = before.map(patch.overwrittenValues(in:))
        return patch.operations.indices.map { line(for: patch.operations[$0], old: overwritten?[$0] ?? nil) }
    }

    /// The lines for `patch`, each ending in `\n`.
    ///
    /// - Parameters:
    ///   - patch: The operations to show.
    ///   - before: The document the patch applies to, to show old values; `nil` to show none.
    public func render(_ patch: JSONPatch, before: JSONValue? = nil) -> String {
        lines(for: patch, before: before).reduce(into: "") { $0 += $1 + "\n" }
    }

    /// One operation's line; `old` is what it overwrote or removed (``JSONPatch/overwrittenValues(in:)``).
    private func line(for operation: JSONPatch.Operation, old: JSONValue?) -> String {
        switch operation {
        case .add(let path, let value):
            // An add that replaced an object member or the root is the replacement it is.
            if let old {
                return styler.apply(.yellow, to: "~ \(show(path))  \(show(old)) → \(show(value))")
            }
            return styler.apply(.green, to: "+ \(show(path))  \(show(value))")
        case .remove(let path):
            let was = old.map { "  (was \(show($0)))" } ?? ""
            return styler.apply(.red, to: "- \(show(path))\(was)")
        case .replace(let path, let value):
            let change = old.map { "\(show($0)) → " } ?? "→ "
            return styler.apply(.yellow, to: "~ \(show(path))  \(change)\(show(value))")
        case .move(let from, let path):
            return styler.apply(.cyan, to: "> \(show(path)) moved from \(show(from))")
        case .copy(let from, let path):
            return styler.apply(.cyan, to: "= \(show(path)) copied from \(show(from))")
        case .test(let path, let value):
            return styler.apply(.dim, to: "? \(show(path))  test \(show(value))")
        }
    }

    private func show(_ pointer: JSONPointer) -> String {
        pointer.isRoot ? "(root)" : TerminalText.escapingControlCharacters(pointer.description)
    }

    private func show(_ value: JSONValue) -> String {
        TerminalText.truncating(value.jsonString, toWidth: valueWidth)
    }
}
