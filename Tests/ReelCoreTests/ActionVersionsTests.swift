import ReelCore
import ReelJSON
import Testing

/// Versioned action types: upcasters chained from a payload's version to the latest, and what a
/// store cannot read.
struct ActionVersionsTests {
    /// `note` at version 3: version 1 had `text`, 2 renamed it `body`, 3 added `tags`.
    static let note = ActionDescription(
        type: "note", version: 3, schema: JSONSchema.any, example: .null,
        upcasters: [
            Upcaster(from: 2) { payload throws(ReducerError) in
                guard case .object(var members) = payload else { throw .rejected("not an object") }
                members["tags"] = []
                return .object(members)
            },
            Upcaster(from: 1) { payload throws(ReducerError) in
                guard case .object(var members) = payload, let text = members.removeValue(forKey: "text") else {
                    throw .rejected("a version 1 note needs a text")
                }
                members["body"] = text
                return .object(members)
            },
        ]
    )
    static let versions = ActionVersions([note, ActionDescription(type: "plain", schema: JSONSchema.any, example: .null)])

    @Test func anOlderPayloadGoesThroughEveryUpcasterInOrder() throws {
        let one = try Self.versions.upcast(Action(type: "note", payload: ["text": "hi"]), from: 1)
        #expect(one == Action(type: "note", payload: ["body": "hi", "tags": []], version: 3))
        let two = try Self.versions.upcast(Action(type: "note", payload: ["body": "hi"]), from: 2)
        #expect(two == Action(type: "note", payload: ["body": "hi", "tags": []], version: 3))
        let three = try Self.versions.upcast(Action(type: "note", payload: ["body": "hi", "tags": ["a"]]), from: 3)
        #expect(three.payload == ["body": "hi", "tags": ["a"]])
        #expect(Self.note.readableVersions == [1, 2, 3])
    }

    @Test func aDispatchWithoutAVersionIsAtTheLatestAndTypesAtOneStayUnversioned() throws {
        let latest = try Self.versions.upcastDispatched(Action(type: "note", payload: ["body": "x", "tags": []]))
        #expect(latest.payload == ["body": "x", "tags": []])
        #expect(latest.version == 3)
        // A type at version 1 is logged without one, named or not.
        #expect(try Self.versions.upcastDispatched(Action(type: "plain", payload: 1, version: 1)).version == nil)
        #expect(try Self.versions.upcastDispatched(Action(type: "plain", payload: 1)).version == nil)
        #expect(Self.versions.latest(of: "plain") == 1)
        #expect(ActionVersions([Self.note]).isEmpty == false)
        #expect(ActionVersions(StoreDefinition<JSONValue>.stock.actionDescriptions).isEmpty)
    }

    @Test func aLoggedActionIsUpcastFromTheVersionItWasLoggedAt() throws {
        let logged = ActionEnvelope(
            seq: 4, action: Action(type: "note", payload: ["text": "old"]), time: Timestamp(nanosecondsSince1970: 0), peer: .unknown
        )
        #expect(logged.version == 1)
        let read = try Self.versions.upcastLogged(logged)
        #expect(read.payload == ["body": "old", "tags": []])
        #expect(read.seq == 4)
        #expect(read.version == 3)
    }

    @Test func versionsItCannotReadAreRefusedWithTheReason() throws {
        #expect(throws: ReducerError(.invalidPayload, "version 4 of 'note' is newer than this build reads (version 3)")) {
            try Self.versions.upcast(Action(type: "note", payload: [:]), from: 4)
        }
        #expect(throws: ReducerError(.invalidPayload, "version 2 of 'plain' is newer than this build reads (version 1)")) {
            try Self.versions.upcastDispatched(Action(type: "plain", payload: 1, version: 2))
        }
        // Without the upcaster from 1, versions 2 and 3 are read and 1 is not.
        var gap = Self.note
        gap.upcasters.removeAll { $0.from == 1 }
        let versions = ActionVersions([gap])
        #expect(gap.readableVersions == [2, 3])
        #expect(versions.problem(reading: "note", version: 1) == "'note' has no upcaster from version 1 to 2, so version 1 cannot be read (this build reads versions 2–3)")
        #expect(versions.problem(reading: "note", version: 2) == nil)
        #expect(versions.problem(reading: "note", version: 0) != nil)
        // What an upcaster throws refuses the action.
        #expect(throws: ReducerError.rejected("a version 1 note needs a text")) {
            try Self.versions.upcast(Action(type: "note", payload: ["body": "wrong shape"]), from: 1)
        }
    }

    @Test func aDefinitionNamesWhatItCannotReadIncludingTypesNoReducerHandles() {
        let definition = StoreDefinition.stock
        #expect(definition.problem(reading: "set", version: 1) == nil)
        #expect(definition.problem(reading: "set", version: 2) == "version 2 of 'set' is newer than this build reads (version 1)")
        #expect(definition.problem(reading: "fly", version: 1) == "no reducer handles 'fly'")
        #expect(definition.problem(reading: "@revert", version: 1) == nil)
        #expect(definition.problem(reading: "@teleport", version: 1) != nil)
    }

    @Test func aTypedPayloadDescribesItsVersionAndUpcasters() throws {
        struct Renamed: ActionPayload {
            static let actionType = "renamed"
            static let version = 2
            static let upcasters = [Upcaster(from: 1) { _ throws(ReducerError) in ["title": "upcast"] }]
            var title: String
        }
        let description = Renamed.actionDescription
        #expect(description.version == 2)
        #expect(description.readableVersions == [1, 2])
        #expect(try Action(Renamed(title: "t")).version == 2)
        let definition = StoreDefinition(name: "r", version: "1", initialState: JSONValue.object([:]), reducer: On(Renamed.self) { _, _ throws(ReducerError) in })
        #expect(definition.versions.latest(of: "renamed") == 2)
        #expect(definition.problem(reading: "renamed", version: 1) == nil)
    }
}
