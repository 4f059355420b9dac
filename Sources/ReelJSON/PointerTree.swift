/// JSON Pointers interned as a tree of tokens: each pointer met is a node, numbered from 0 (the
/// root) in the order they were first met, and a pointer is extended by one token with one lookup
/// of the (parent, token) pair.
///
/// The change index names thousands of pointers per commit, most of them many times (every
/// action under `/users/u17` changes `/users` and the root): interned, a pointer's string is
/// built once per commit, not once per action that changed it, and a list of seqs is found by
/// its node's number instead of by hashing the whole string.
public struct PointerTree: Sendable {
    public typealias Node = Int32
    public static let root: Node = 0

    /// A node's parent and the length of its pointer, side by side: whoever reads one of a node
    /// (marking its ancestors, checking that its pointer fits a key) reads the other soon after,
    /// from the same cache line.
    private struct Links {
        var parent: Node
        var byteCount: Int32
    }

    /// Each node but the root, found by its parent and last token (``TokenHash``).
    private var edges = NodeTable()
    // (Set by the initializers only: a default value would be made, then replaced, by each.)
    private var links: [Links]
    private var tokens: [String]

    /// The length in bytes of the longest pointer the tree holds, in its escaped string form.
    public private(set) var longestByteCount = 0

    public init() {
        self.init(capacity: 0)
    }

    /// A tree with room for `capacity` pointers besides the root, allocated at once: a commit's
    /// tree grown one pointer at a time reallocated each of its arrays about log2(n) times.
    public init(capacity: Int) {
        edges = NodeTable(capacity: capacity)
        links = []
        links.reserveCapacity(capacity + 1)
        links.append(Links(parent: -1, byteCount: 0))
        tokens = []
        tokens.reserveCapacity(capacity + 1)
        tokens.append("")
    }

    /// How many pointers the tree holds, the root included.
    public var count: Int { links.count }

    /// `parent` followed by `token`, added to the tree when new.
    public mutating func child(of parent: Node, _ token: String) -> Node {
        let hash = Self.hash(token, below: parent)
        if let node = find(token, below: parent, hash: hash) { return node }
        let node = Node(links.count)
        edges.insert(node, hash: hash)
        // Saturating: a pointer longer than 2 GiB is as unlistable as one of 512 bytes.
        let (byteCount, overflow) = links[Int(parent)].byteCount.addingReportingOverflow(Int32(clamping: 1 + Self.escapedByteCount(token)))
        links.append(Links(parent: parent, byteCount: overflow ? .max : byteCount))
        tokens.append(token)
        longestByteCount = max(longestByteCount, Int(links[Int(node)].byteCount))
        return node
    }

    /// The node of `tokens` below `from`, or `nil` when the tree does not hold it (no lookup adds).
    public func existing(_ tokens: some Sequence<String>, from: Node = root) -> Node? {
        var node = from
        for token in tokens {
            guard let next = find(token, below: node, hash: Self.hash(token, below: node)) else { return nil }
            node = next
        }
        return node
    }

    /// The node of the path `tokens` from the root when `hash` is ``hash(of:)`` of them, found in
    /// `table` (which the caller keeps for paths it met, by that hash), compared token by token
    /// up the tree.
    func node(of tokens: [String], hash: UInt64, in table: NodeTable) -> Node? {
        table.find(hash: hash) { node in
            var current = node
            for token in tokens.reversed() {
                guard current != Self.root, self.tokens[Int(current)] == token else { return false }
                current = links[Int(current)].parent
            }
            return current == Self.root
        }
    }

    /// The hash of a path of tokens from the root, for ``node(of:hash:in:)``.
    static func hash(of tokens: [String]) -> UInt64 {
        var hash = TokenHash.processSeed
        for token in tokens { hash = TokenHash.hash(token, seed: hash) }
        return hash
    }

    private func find(_ token: String, below parent: Node, hash: UInt64) -> Node? {
        edges.find(hash: hash) { node in links[Int(node)].parent == parent && tokens[Int(node)] == token }
    }

    @inline(__always)
    private static func hash(_ token: String, below parent: Node) -> UInt64 {
        TokenHash.hash(token, seed: TokenHash.processSeed ^ (UInt64(UInt32(bitPattern: parent)) &* 0x9E37_79B9_7F4A_7C15))
    }

    /// The parent of `node`; `nil` for the root.
    public func parent(of node: Node) -> Node? {
        node == Self.root ? nil : links[Int(node)].parent
    }

    /// The last token of `node`'s pointer (`""` for the root).
    public func token(of node: Node) -> String { tokens[Int(node)] }

    /// The unescaped tokens of `node`'s pointer, outermost first (`[]` for the root).
    public func tokens(of node: Node) -> [String] {
        var tokens: [String] = []
        var node = node
        while let parent = parent(of: node) {
            tokens.append(token(of: node))
            node = parent
        }
        tokens.reverse()
        return tokens
    }

    /// The length in bytes of `node`'s pointer in its escaped string form.
    public func byteCount(of node: Node) -> Int { Int(links[Int(node)].byteCount) }

    /// The escaped string form of `node`'s pointer (`""` for the root).
    public func pointer(of node: Node) -> String {
        var path: [Node] = []
        var current = node
        while current != Self.root {
            path.append(current)
            current = links[Int(current)].parent
        }
        var result = ""
        result.reserveCapacity(byteCount(of: node))
        for step in path.reversed() { JSONPointer.append(tokens[Int(step)], to: &result) }
        return result
    }

    /// The escaped UTF-8 form of `node`'s pointer (``pointer(of:)``), appended to `bytes`.
    public func appendPointer(of node: Node, to bytes: inout [UInt8]) {
        guard node != Self.root else { return }
        appendPointer(of: links[Int(node)].parent, to: &bytes)
        bytes.append(UInt8(ascii: "/"))
        for byte in tokens[Int(node)].utf8 {
            switch byte {
            case UInt8(ascii: "~"):
                bytes.append(UInt8(ascii: "~"))
                bytes.append(UInt8(ascii: "0"))
            case UInt8(ascii: "/"):
                bytes.append(UInt8(ascii: "~"))
                bytes.append(UInt8(ascii: "1"))
            default:
                bytes.append(byte)
            }
        }
    }

    private static func escapedByteCount(_ token: String) -> Int {
        var count = 0
        for byte in token.utf8 { count += byte == UInt8(ascii: "~") || byte == UInt8(ascii: "/") ? 2 : 1 }
        return count
    }
}
