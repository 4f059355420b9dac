import ReelCore
import ReelJSON

extension ActionMeta {
    /// The members `dispatch`'s `meta` takes, for messages.
    static let memberList = Member.allCases.map { $0.rawValue }.joined(separator: ", ")

    /// Reads and checks `dispatch`'s `meta`: an object of at most the four members, each a string
    /// of at most ``maxLength`` bytes, `traceparent` in W3C form. A member set to `null` counts as
    /// absent, as in params; `null`, or an object without members, is no meta (`nil`).
    ///
    /// - Parameters:
    ///   - value: The `meta` member.
    ///   - label: Its name in messages (`params.meta`).
    /// - Throws: -32602 naming the member and what is wrong with it.
    static func read(params value: JSONValue, label: String) throws(RPCError) -> ActionMeta? {
        if value.isNull { return nil }
        guard case .object(let members) = value else {
            throw .invalidParams("\(label) must be an object with any of \(memberList) (strings), not \(value.described)")
        }
        if let unknown = members.keys.filter({ Member(rawValue: $0) == nil }).min() {
            throw .invalidParams("\(label) has no member \(JSONValue.string(unknown).jsonString) (it takes \(memberList))")
        }
        var meta = ActionMeta()
        for member in Member.allCases {
            guard let given = members[member.rawValue], !given.isNull else { continue }
            guard case .string(let text) = given else {
                throw .invalidParams("\(label).\(member.rawValue) must be a string, not \(given.described)")
            }
            if let problem = problem(with: text, as: member) {
                throw .invalidParams("\(label).\(member.rawValue) \(problem)")
            }
            meta[member] = text
        }
        return meta.isEmpty ? nil : meta
    }

    /// Reads a logged action's `meta` as a server wrote it: the members this build knows, each a
    /// string (later members are ignored, as clients ignore what later servers add).
    ///
    /// - Throws: -32600 naming the member that is not a string.
    init?(wire value: JSONValue?, seq: Int64) throws(RPCError) {
        guard let value, !value.isNull else { return nil }
        guard case .object(let members) = value else {
            throw .invalidRequest("a logged action at seq \(seq) has a meta that is not an object")
        }
        self.init()
        for member in Member.allCases {
            guard let given = members[member.rawValue], !given.isNull else { continue }
            guard case .string(let text) = given else {
                throw .invalidRequest("a logged action at seq \(seq) has a meta.\(member.rawValue) that is not a string")
            }
            self[member] = text
        }
        if isEmpty { return nil }
    }

    /// The members that are set, as a JSON object (what `dispatch`'s `meta` and a logged action's
    /// `meta` hold).
    public var jsonValue: JSONValue {
        .object(JSONObject(uniqueKeysWithValues: members.map { ($0.member.rawValue, JSONValue.string($0.value)) }))
    }

    /// Writes ``jsonValue``'s text: the members that are set, in sorted order.
    func writeWire(into bytes: inout [UInt8]) {
        bytes.appendJSONObject { object in
            for (member, value) in members { object.add(member.rawValue, value) }
        }
    }
}
