import ReelCore
import ReelJSON
import Testing

struct StoreStateTests {
    /// Unsharing gives an equal value whichever the shape.
    @Test(arguments: [
        JSONValue.object(["a": 1, "b": ["c": [1, 2, 3]], "d": .null]),
        JSONValue.array([1, "two", ["three": 3], [4]]),
        JSONValue.object([:]), JSONValue.array([]), JSONValue.string("s"), JSONValue.int(7), JSONValue.null,
    ])
    func unsharingKeepsTheValue(_ original: JSONValue) {
        #expect(original.unsharingTopLevelStorage() == original)
    }

    /// A typed state keeps the default: itself.
    @Test func aTypedStateUnsharesAsItself() {
        struct Counter: StoreState { var count = 3 }
        #expect(Counter().unsharingTopLevelStorage() == Counter())
    }
}
