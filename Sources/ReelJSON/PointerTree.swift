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

    private struct Edge: Hashable {
        var parent: Node
        var token: String
    }

    private var edges: [Edge: Node] = [:]
    private var parents: [Node] = [-1]
    private var tokens: [String] = [""]
    private var byteCounts: [Int] = [0]

    public init() {}

    /// How many pointers the tree holds, the root included.
    public var count: Int { parents.count }

    /// `parent` followed by `token`, added to the tree when new.
    public mutating func child(of parent: Node, _ token: String) -> Node {
        let edge = Edge(parent: parent, token: token)
        if let node = edges[edge] { return node }
        let node = Node(parents.count)
        edges[edge] = node
        parents.append(parent)
        tokens.append(token)
        byteCounts.append(byteCounts[Int(parent)] + 1 + Self.escapedByteCount(token))
        return node
    }

    /// The node of `tokens` below `from`, or `nil` when the tree does not hold it (no lookup adds).
    public func existing(_ tokens: some Sequence<String>, from: Node = root) -> Node? {
        var node = from
        for token in tokens {
            guard let next = edges[Edge(parent: node, token: token)] else { return nil }
            node = next
        }
        return node
    }

    /// The parent of `node`; `nil` for the root.
    public func parent(of node: Node) -> Node? {
        node == Self.root ? nil : parents[Int(node)]
    }

    /// The last token of `node`'s pointer (`""` for the root).
    public func token(of node: Node) -> String { tokens[Int(node)] }

    /// The length in bytes of `node`'s pointer in its escaped string form.
    public func byteCount(of node: Node) -> Int { byteCounts[Int(node)] }

    /// The escaped string form of `node`'s pointer (`""` for the root).
    public func pointer(of node: Node) -> String {
        var path: [Node] = []
        var current = node
        while current != Self.root {
            path.append(current)
            current = parents[Int(current)]
        }
        var result = ""
        result.reserveCapacity(byteCounts[Int(node)])
        for step in path.reversed() { JSONPointer.append(tokens[Int(step)], to: &result) }
        return result
    }

    private static func escapedByteCount(_ token: String) -> Int {
        var count = 0
        for byte in token.utf8 { count += byte == UInt8(ascii: "~") || byte == UInt8(ascii: "/") ? 2 : 1 }
        return count
    }
}
