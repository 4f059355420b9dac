import Foundation
import ReelJSON
import ReelTestSupport
import Testing

/// docs/OPERATIONS.md's backup and restore, step by step, with the real daemon and `reel`: a hot
/// backup, more dispatches, the daemon stopped, its directory moved aside and the backup copied in,
/// verified, served again at the backup's seq; the actions after the backup still readable from
/// the old directory. (Two minutes: the daemon started twice and some twenty `reel` processes,
/// one after another, took 10 to 14 s beside a busy loop on each core, 29 s once with a build
/// running too.)
@Suite(.serialized, .timeLimit(.minutes(2)), .heavy) struct OperationsRestoreTests {
    @Test func theDocumentedRestoreServesTheBackupsSeq() async throws {
        let dir = try TemporaryDirectory()
        let data = dir.sub("data"), socket = dir.sub("reel.sock"), backup = dir.sub("backup")
        let daemon = SpawnedDaemon(dataDirectory: data, socketPath: socket)
        try await daemon.start()
        func reel(_ arguments: [String]) async throws -> ProgramResult {
            try await runProgram("reel", arguments)
        }
        for n in 1...10 {
            #expect(try await reel(["dispatch", "set", #"{"path":"/n","value":\#(n)}"#, "--socket", socket]).status == 0)
        }
        // reel backup /backups/reel-$(date +%F), live.
        let backedUp = try await reel(["backup", backup, "--socket", socket])
        #expect(backedUp.status == 0, "\(backedUp.errors)")
        for n in 11...15 {
            #expect(try await reel(["dispatch", "set", #"{"path":"/n","value":\#(n)}"#, "--socket", socket]).status == 0)
        }
        // systemctl stop reeld.socket reeld
        #expect(try await daemon.stop() == 0)
        // mv /var/lib/reel /var/lib/reel.before-restore; cp -a /backups/… /var/lib/reel
        try FileManager.default.moveItem(atPath: data, toPath: data + ".before-restore")
        try FileManager.default.copyItem(atPath: backup, toPath: data)
        // reel verify --data-dir /var/lib/reel
        let verified = try await reel(["verify", "--data-dir", data])
        #expect(verified.status == 0, "\(verified.output)\(verified.errors)")
        // systemctl start …; reel stats: seq is the backup's.
        try await daemon.start()
        let stats = try await reel(["stats", "--json", "--socket", socket]).output
        #expect(try JSONValue(parsing: stats)["seq"] == 10)
        let value = try await reel(["get", "/n", "--json", "--socket", socket]).output
        #expect(try JSONValue(parsing: value)["value"] == 10, "\(value)")
        #expect(try await reel(["dispatch", "set", #"{"path":"/n","value":"after"}"#, "--socket", socket]).status == 0)
        #expect(try await daemon.stop() == 0)
        // The actions after the backup, from the directory kept aside: reel export --from SEQ.
        let later = try await reel(["export", "--from", "11", "--data-dir", data + ".before-restore"])
        #expect(later.status == 0, "\(later.errors)")
        let seqs = try later.output.split(separator: "\n").map { try JSONValue(parsing: String($0))["seq"]?.intValue }
        #expect(seqs == [11, 12, 13, 14, 15])
    }
}
