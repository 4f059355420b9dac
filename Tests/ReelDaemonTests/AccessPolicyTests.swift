import ReelDaemon
import Testing

struct AccessPolicyTests {
    let resolver = DaemonConfigurationTests.resolver

    func list(_ text: String, ownUID: UInt32 = 1000) throws -> [AccessPolicy.Principal] {
        try AccessPolicy.parseList(text, ownUID: ownUID, resolver: resolver)
    }

    @Test func entries() throws {
        #expect(try list("1001") == [.user(uid: 1001)])
        #expect(try list("alice") == [.user(uid: 1001)])
        #expect(try list("self") == [.user(uid: 1000)])
        #expect(try list(" self , root ") == [.user(uid: 1000), .user(uid: 0)])
        #expect(try list("@reel") == [.group(gid: 990, memberUIDs: [1002])])
        #expect(try list("@990") == [.group(gid: 990, memberUIDs: [1002])])
        #expect(try list("@4242") == [.group(gid: 4242, memberUIDs: [])])
        #expect(try list("*") == [.anyone])
        #expect(try list("") == [])
        #expect(try list("none") == [])
        #expect(try list("alice,1001,alice") == [.user(uid: 1001)])
    }

    @Test func badEntries() {
        #expect(throws: AccessListError.self) { try list("mallory") }
        #expect(throws: AccessListError.self) { try list("@") }
        #expect(throws: AccessListError.self) { try list("@nogroup") }
        #expect(throws: AccessListError.self) { try list("alice,") }
        #expect(throws: AccessListError.self) { try list("-1") }
    }

    @Test func matching() throws {
        let policy = AccessPolicy(allowed: [
            .read: try list("*"),
            .dispatch: try list("self,@reel"),
            .admin: try list("root"),
        ])
        #expect(policy.allows(.read, uid: 31337, gid: 31337))
        #expect(policy.allows(.dispatch, uid: 1000, gid: 1000))
        #expect(policy.allows(.dispatch, uid: 4000, gid: 990), "primary gid of the group")
        #expect(policy.allows(.dispatch, uid: 1002, gid: 100), "listed member of the group")
        #expect(!policy.allows(.dispatch, uid: 1001, gid: 100))
        #expect(policy.allows(.admin, uid: 0, gid: 0))
        #expect(!policy.allows(.admin, uid: 1000, gid: 990))
        #expect(!AccessPolicy(allowed: [:]).allows(.read, uid: 0, gid: 0), "an operation with no list is allowed to nobody")
        #expect(policy.description == "read=* dispatch=1000,@990 admin=0")
    }

    @Test func defaultIsOwnerAndRoot() {
        let policy = AccessPolicy.ownerAndRoot(ownUID: 1000)
        for operation in AccessPolicy.Operation.allCases {
            #expect(policy.allows(operation, uid: 1000, gid: 5))
            #expect(policy.allows(operation, uid: 0, gid: 5))
            #expect(!policy.allows(operation, uid: 1001, gid: 1000), "the daemon's gid alone is not enough")
        }
        #expect(AccessPolicy.ownerAndRoot(ownUID: 0).allowed[.read] == [.user(uid: 0)])
    }

    @Test func systemDatabaseKnowsRoot() throws {
        #expect(try AccessPolicy.parseList("root,@root", ownUID: 1000) == [.user(uid: 0), .group(gid: 0, memberUIDs: IdentityResolver.system.groupWithID(0)?.memberUIDs ?? [])])
    }
}
