import ReelJSON
import Testing

/// The tree interns each pointer once, whatever the tokens' lengths (the hash reads eight bytes at
/// a time, then a tail) and however large it grows (its table doubles at half full).
@Suite struct PointerTreeTests {
    /// Tokens of every length from 0 to 40 bytes, some alike but for one byte at either end, some
    /// with bytes that need escaping, some not ASCII.
    static let tokens: [String] = (0...40).flatMap { length -> [String] in
        let base = String(repeating: "a", count: length)
        return [base, "b" + base, base + "b", base + "~/", "é" + base]
    }

    @Test func eachPointerIsOneNodeFoundAgainByItsTokens() {
        var tree = PointerTree()
        var nodes: [[String]: PointerTree.Node] = [:]
        // Three levels: 205 × 4 × 64 = 52,480 pointers below the first level's.
        for first in Self.tokens {
            let parent = tree.child(of: PointerTree.root, first)
            nodes[[first]] = parent
            for second in ["x", "y", "0", "1"] {
                let middle = tree.child(of: parent, second)
                nodes[[first, second]] = middle
                for third in 0..<64 {
                    nodes[[first, second, "k\(third)"]] = tree.child(of: middle, "k\(third)")
                }
            }
        }
        #expect(tree.count == nodes.count + 1, "a node per pointer, and the root")
        #expect(Set(nodes.values).count == nodes.count)
        for (tokens, node) in nodes {
            #expect(tree.existing(tokens) == node)
            let pointer = tokens.reduce(into: "") { JSONPointer.append($1, to: &$0) }
            #expect(tree.pointer(of: node) == pointer)
            #expect(tree.byteCount(of: node) == pointer.utf8.count)
            var again = tree
            #expect(again.child(of: tree.parent(of: node)!, tokens.last!) == node, "interned again, the same node")
            #expect(again.count == tree.count)
        }
        #expect(tree.existing(["a", "x", "k64"]) == nil)
        #expect(tree.existing(["x"]) == nil)
        #expect(tree.existing(["aa", "z"]) == nil)
    }
}
