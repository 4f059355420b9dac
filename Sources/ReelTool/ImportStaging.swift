#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ReelStorage

/// Where `reel import` builds its data directory: a staging directory inside the target, written
/// without a sync at each commit, synced once when the import finishes and only then moved into
/// place (its data file renamed to the target's, as a new data directory is made). So the target
/// is never a partial history: a failed import leaves it as it was, and one cut short (killed,
/// or the power lost) leaves only the staging directory, which the next import into the target
/// names. Syncing each commit of 4,096 actions took a sixth of a million-action import's time
/// and protected nothing anyone could use.
struct ImportStaging {
    static let name = ".reel-importing"

    /// The data directory the import makes.
    let target: String
    /// Whether `target` existed before (else a failed import removes it).
    let targetExisted: Bool

    /// The staging directory.
    var path: String { target + "/" + Self.name }

    /// Checks that `target` can take an import: new, empty, or holding only a data directory's
    /// files (whose history ``checkTarget(_:)`` then checks is empty).
    init(target: String) throws(ToolError) {
        self.target = target
        var isDirectory: ObjCBool = false
        targetExisted = FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory)
        guard targetExisted else { return }
        guard isDirectory.boolValue else {
            throw ToolError("cannot import into \(target): it exists and is not a directory")
        }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: target)) ?? []
        if entries.contains(Self.name) {
            throw ToolError(
                "\(target) holds \(Self.name), left by an import that did not finish (or one still running): remove it, then import again"
            )
        }
        // An empty data directory (LMDB's two files and the journal, no action) is taken; anything else is not.
        if entries.contains(where: { !["data.mdb", "lock.mdb", DataDirectory.journalFileName].contains($0) }) {
            throw ToolError("\(target) is not empty: import only builds a new data directory (choose a new path)")
        }
    }

    /// Refuses a target that is a data directory already holding a history (or made for other
    /// reducers), by opening it as the import would have: the same checks, the same words.
    func checkTarget(_ settings: ImportSettings) throws(ToolError) {
        guard access(target + "/data.mdb", F_OK) == 0 else { return }
        var settings = settings
        settings.sync = .everyCommit
        try ToolContext.current.openImport(target, settings).close()
    }

    /// Moves the finished, synced staging directory into place: the target's own files (of an
    /// empty data directory) are removed, the data file renamed into the target, the target
    /// synced, and the rest of the staging directory removed (the journal and LMDB's lock file
    /// are made again at the next open). Call it once the import is closed.
    func commit() throws(ToolError) {
        for name in [DataDirectory.journalFileName, "lock.mdb"] { unlink(target + "/" + name) }
        guard rename(path + "/data.mdb", target + "/data.mdb") == 0 else {
            throw ToolError("cannot move the imported data into \(target): \(String(cString: strerror(errno)))")
        }
        let directory = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if directory >= 0 { close(directory) } }
        guard directory >= 0, fsync(directory) == 0 else {
            throw ToolError("cannot sync \(target) after moving the imported data into it: \(String(cString: strerror(errno)))")
        }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes what the import made: the staging directory, and the target when it made it.
    func discard() {
        try? FileManager.default.removeItem(atPath: targetExisted ? path : target)
    }
}
