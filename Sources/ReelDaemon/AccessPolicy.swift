import Foundation

/// Which peers may read, dispatch, or use admin methods, decided from the peer credentials the
/// kernel reports for a Unix socket connection (`SO_PEERCRED`: uid, gid, pid).
///
/// Each operation has its own allow list (`--allow-read`, `--allow-dispatch`, `--allow-admin`);
/// the lists are independent (being allowed to dispatch does not imply being allowed to read). A
/// list is comma-separated entries:
///
/// | entry | matches a peer whose… |
/// | --- | --- |
/// | `1000`, `alice` | uid is this user's (names are resolved once, at startup) |
/// | `self` | uid is the daemon's own effective uid |
/// | `@1000`, `@reel` | gid is this group's, or uid is listed as a member of the group |
/// | `*` | anyone who can connect at all (the socket's mode and directory still apply) |
/// | `none` or nothing | nobody |
///
/// Default, for each operation: `self,root`.
///
/// Groups: `SO_PEERCRED` shows only the peer's effective (primary) gid, not its supplementary
/// groups, so `@GROUP` matches a peer whose primary gid is that group. Because people expect
/// "members of `reel`" to include users who have `reel` as a supplementary group, `@GROUP` also
/// matches the uids that the group database lists as the group's members, read once at startup
/// (restart the daemon after changing `/etc/group`). A process that joined the group only for
/// itself (`newgrp`, `sg`, `setgroups`) without it being its primary gid is not recognised.
///
/// The server maps methods to operations (see `ReelServer.Permission`): `dispatch` needs
/// ``Operation/dispatch``, `stats` needs ``Operation/admin``, everything else ``Operation/read``.
public struct AccessPolicy: Sendable, Equatable, CustomStringConvertible {
    /// What a request asks to do.
    public enum Operation: String, Sendable, CaseIterable, CustomStringConvertible {
        /// `hello`, `get`, `subscribe`, `unsubscribe`, `history`, `diff`, `replay`.
        case read
        /// `dispatch`, single or batch, including `@revert`.
        case dispatch
        /// `stats` and other operator methods.
        case admin
        public var description: String { rawValue }
    }

    /// One entry of an allow list.
    public enum Principal: Sendable, Hashable, CustomStringConvertible {
        /// Any peer.
        case anyone
        /// A peer with this uid.
        case user(uid: UInt32)
        /// A peer with this gid, or one of these member uids.
        case group(gid: UInt32, memberUIDs: Set<UInt32>)

        func matches(uid: UInt32, gid: UInt32) -> Bool {
            switch self {
            case .anyone: true
            case .user(let allowed): uid == allowed
            case .group(let allowed, let members): gid == allowed || members.contains(uid)
            }
        }

        public var description: String {
            switch self {
            case .anyone: "*"
            case .user(let uid): "\(uid)"
            case .group(let gid, _): "@\(gid)"
            }
        }
    }

    /// The allow list of each operation; an operation missing here is allowed to nobody.
    public var allowed: [Operation: [Principal]]

    /// - Parameter allowed: the allow list of each operation.
    public init(allowed: [Operation: [Principal]]) {
        self.allowed = allowed
    }

    /// The default: each operation allowed to the daemon's own user and to root.
    public static func ownerAndRoot(ownUID: UInt32) -> AccessPolicy {
        let principals: [Principal] = ownUID == 0 ? [.user(uid: 0)] : [.user(uid: ownUID), .user(uid: 0)]
        return AccessPolicy(allowed: Dictionary(uniqueKeysWithValues: Operation.allCases.map { ($0, principals) }))
    }

    /// Whether a peer with these credentials may do `operation`.
    public func allows(_ operation: Operation, uid: UInt32, gid: UInt32) -> Bool {
        allowed[operation, default: []].contains { $0.matches(uid: uid, gid: gid) }
    }

    /// For logs: `read=1000,0 dispatch=1000,0 admin=1000`.
    public var description: String {
        Operation.allCases.map { operation in
            let list = allowed[operation, default: []]
            return "\(operation)=\(list.isEmpty ? "none" : list.map(\.description).joined(separator: ","))"
        }.joined(separator: " ")
    }

    /// Parses one allow list.
    ///
    /// - Parameters:
    ///   - list: comma-separated entries (see ``AccessPolicy``); spaces around entries are ignored.
    ///   - ownUID: the uid `self` stands for.
    ///   - resolver: where user and group names are looked up.
    /// - Returns: the principals, in the order given, without duplicates.
    /// - Throws: a sentence naming the first entry that is not a known user or group.
    public static func parseList(
        _ list: String, ownUID: UInt32, resolver: IdentityResolver = .system
    ) throws(AccessListError) -> [Principal] {
        var principals: [Principal] = []
        let entries = list.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if entries == [""] || entries == ["none"] { return [] }
        for entry in entries {
            let principal = try parseEntry(entry, ownUID: ownUID, resolver: resolver)
            if !principals.contains(principal) { principals.append(principal) }
        }
        return principals
    }

    private static func parseEntry(_ entry: String, ownUID: UInt32, resolver: IdentityResolver) throws(AccessListError) -> Principal {
        if entry.isEmpty { throw AccessListError("an empty entry (two commas in a row?)") }
        if entry == "*" { return .anyone }
        if entry == "self" { return .user(uid: ownUID) }
        if entry.hasPrefix("@") {
            let name = String(entry.dropFirst())
            if let gid = UInt32(name) {
                return .group(gid: gid, memberUIDs: resolver.groupWithID(gid)?.memberUIDs ?? [])
            }
            guard !name.isEmpty, let group = resolver.groupNamed(name) else {
                throw AccessListError("'\(entry)': there is no group '\(name)'")
            }
            return .group(gid: group.gid, memberUIDs: group.memberUIDs)
        }
        if let uid = UInt32(entry) { return .user(uid: uid) }
        guard let uid = resolver.userID(entry) else {
            throw AccessListError("'\(entry)': there is no user '\(entry)' (groups are written '@\(entry)')")
        }
        return .user(uid: uid)
    }
}

/// Why an allow list cannot be parsed; the configuration loader adds which setting it was.
public struct AccessListError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
