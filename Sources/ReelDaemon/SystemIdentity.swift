#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Looks up users and groups, so that settings can name them (`reel`, `@wheel`) instead of numbers.
///
/// ``system`` asks the system's user and group databases (`/etc/passwd`, `/etc/group`, NSS).
/// Tests pass their own tables.
public struct IdentityResolver: Sendable {
    /// A group as the group database describes it.
    public struct Group: Sendable, Equatable {
        public var name: String
        public var gid: UInt32
        /// The users listed as members (the group's supplementary members), by uid. Users whose
        /// primary group this is are not listed here; they match through their gid.
        public var memberUIDs: Set<UInt32>

        public init(name: String, gid: UInt32, memberUIDs: Set<UInt32> = []) {
            self.name = name
            self.gid = gid
            self.memberUIDs = memberUIDs
        }
    }

    /// The uid of the user with this name, or `nil` when there is none.
    public var userID: @Sendable (_ name: String) -> UInt32?
    /// The group with this name, or `nil`.
    public var groupNamed: @Sendable (_ name: String) -> Group?
    /// The group with this gid, or `nil` when the database has no entry for it.
    public var groupWithID: @Sendable (_ gid: UInt32) -> Group?

    public init(
        userID: @escaping @Sendable (String) -> UInt32?,
        groupNamed: @escaping @Sendable (String) -> Group?,
        groupWithID: @escaping @Sendable (UInt32) -> Group?
    ) {
        self.userID = userID
        self.groupNamed = groupNamed
        self.groupWithID = groupWithID
    }

    /// The system's user and group databases.
    public static let system = IdentityResolver(
        userID: { name in SystemDatabase.user(named: name) },
        groupNamed: { name in SystemDatabase.lookUpGroup { getgrnam_r(name, &$0, $1, $2, $3) } },
        groupWithID: { gid in SystemDatabase.lookUpGroup { getgrgid_r(gid_t(gid), &$0, $1, $2, $3) } }
    )
}

/// The reentrant `getpw*_r` / `getgr*_r` calls, with a buffer that grows on `ERANGE`.
enum SystemDatabase {
    static func user(named name: String) -> UInt32? {
        var entry = passwd()
        return withGrowingBuffer { buffer, size in
            var result: UnsafeMutablePointer<passwd>?
            let status = getpwnam_r(name, &entry, buffer, size, &result)
            return (status, result.map { _ in UInt32(entry.pw_uid) })
        }
    }

    static func lookUpGroup(
        _ lookup: (inout group, UnsafeMutablePointer<CChar>, Int, UnsafeMutablePointer<UnsafeMutablePointer<group>?>) -> Int32
    ) -> IdentityResolver.Group? {
        var entry = group()
        return withGrowingBuffer { buffer, size in
            var result: UnsafeMutablePointer<group>?
            let status = lookup(&entry, buffer, size, &result)
            guard status == 0, result != nil else { return (status, nil) }
            var members: Set<UInt32> = []
            if var member = entry.gr_mem {
                while let name = member.pointee {
                    // A member listed by name whose user no longer exists matches nobody.
                    if let uid = user(named: String(cString: name)) { members.insert(uid) }
                    member += 1
                }
            }
            let group = IdentityResolver.Group(name: String(cString: entry.gr_name), gid: UInt32(entry.gr_gid), memberUIDs: members)
            return (status, group)
        }
    }

    /// Runs a lookup with a buffer of 4 KiB, doubling it while the call answers `ERANGE`.
    private static func withGrowingBuffer<T>(_ body: (UnsafeMutablePointer<CChar>, Int) -> (Int32, T?)) -> T? {
        var size = 4096
        while size <= 1 << 24 {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            let (status, value) = body(buffer, size)
            if status == ERANGE {
                size *= 2
                continue
            }
            return status == 0 ? value : nil
        }
        return nil
    }
}

/// The text of an `errno` value, such as "Permission denied".
func errnoDescription(_ code: Int32) -> String {
    String(cString: strerror(code))
}
