import Foundation
import ReelCore
import ReelJSON
@testable import ReelStorage
import ReelTestSupport
import Synchronization
import Testing

/// The journal: one sync per acknowledged group, LMDB later, and nothing acknowledged lost or
/// unacknowledged served whatever state the two files are found in.
@Suite(.heavy) struct JournalTests {
    func envelope(_ seq: UInt64, key: String? = nil) -> ActionEnvelope { numberedEnvelope(seq, key: key) }

    /// Groups of `size` actions from `first`, the first action of each keyed "k<seq>".
    func groups(from first: UInt64, count: Int, size: UInt64 = 3) -> [CommitBatch] {
        (0..<UInt64(count)).map { index in
            let start = first + index * size
            let envelopes = (start..<(start + size)).map { envelope($0, key: "k\(start)") }
            return CommitBatch(envelopes: envelopes, dedup: [("k\(start)", DedupRecord(firstSeq: start, count: size))])
        }
    }

    /// LMDB's own count of logged actions, without the journal's tail.
    func actionsInLMDB(_ data: DataDirectory) throws -> Int {
        try data.env.stat(data.log).entries
    }

    func held(_ data: DataDirectory) throws -> [UInt64] {
        var seqs: [UInt64] = []
        try data.forEachEnvelope(from: 1) { seqs.append($0.seq); return true }
        return seqs
    }

    /// Four actions of about 2 KiB each after `seq`, which it advances.
    func bigGroup(after seq: inout UInt64) -> CommitBatch {
        let payload = JSONValue.string(String(repeating: "x", count: 2000))
        var envelopes: [ActionEnvelope] = []
        for _ in 1...4 {
            seq += 1
            envelopes.append(ActionEnvelope(seq: seq, action: Action(type: "set", payload: ["path": "/p", "value": payload]),
                                            time: Timestamp(nanosecondsSince1970: Int64(seq)), peer: Peer(uid: 1, gid: 1, pid: 1)))
        }
        return CommitBatch(envelopes: envelopes)
    }

    /// Options under which nothing reaches LMDB until the journal is drained.
    var journalOnly: DataDirectory.Options {
        var options = DataDirectory.Options()
        options.journalApplyDelay = 3600
        return options
    }

    /// Copies the directory's files as a kill -9 leaves them: the journal and data file now.
    ///
    /// `open`: the directory, still open, whose applier may be committing to LMDB meanwhile (the
    /// writer done). Its data file is then copied by LMDB, as one committed transaction's
    /// snapshot, which is what a kill leaves: a copy byte by byte while a commit lands can hold a
    /// meta page naming pages past the copy's end (seen once on a busy machine), which no kill
    /// leaves. The journal, which only the writer writes, is copied after it.
    func crashCopy(of dir: borrowing TemporaryDirectory, open: DataDirectory? = nil) throws -> TemporaryDirectory {
        let copy = try TemporaryDirectory()
        if let open {
            try open.env.copy(to: copy.path)
        } else {
            try FileManager.default.copyItem(atPath: dir.sub("data.mdb"), toPath: copy.sub("data.mdb"))
        }
        try FileManager.default.copyItem(atPath: dir.sub(DataDirectory.journalFileName), toPath: copy.sub(DataDirectory.journalFileName))
        return copy
    }

    /// What a file takes on disk (its allocated blocks), as `du` counts it.
    func sizeOnDisk(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_blocks) * 512 : 0
    }

    /// A backup holds what the store holds: the actions the LMDB copy lacks are in its journal,
    /// and none of the source journal's zeros allocated ahead; its size is the size on disk.
    @Test func aBackupCostsWhatItHolds() throws {
        let dir = try TemporaryDirectory()
        var options = journalOnly
        options.journalPreallocation = 16 << 20
        let data = try DataDirectory(path: dir.sub("live"), reducerName: "test", options: options)
        for batch in groups(from: 1, count: 3) { try data.appendDurably(batch) }  // journal only
        #expect(sizeOnDisk(dir.sub("live/\(DataDirectory.journalFileName)")) >= 16 << 20)
        let report = try data.backup(to: dir.sub("backups/monday/copy"))  // parents made
        let journal = dir.sub("backups/monday/copy/\(DataDirectory.journalFileName)")
        #expect(sizeOnDisk(journal) > 0 && sizeOnDisk(journal) < 64 << 10, "the copy's journal takes \(sizeOnDisk(journal)) bytes")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.sub("backups/monday/copy"))
        #expect(report.bytes == Int64(files.reduce(0) { $0 + sizeOnDisk(dir.sub("backups/monday/copy/\($1)")) }))
        #expect(report.seq == 9)
        let copy = try DataDirectory(path: dir.sub("backups/monday/copy"), reducerName: nil, options: .init(readOnly: true))
        #expect(try held(copy) == Array(1...9))

        // Once LMDB holds everything, a backup has no journal at all.
        try data.closeJournal()
        try data.backup(to: dir.sub("later"))
        #expect(!FileManager.default.fileExists(atPath: dir.sub("later/\(DataDirectory.journalFileName)")))
        let later = try DataDirectory(path: dir.sub("later"), reducerName: nil, options: .init(readOnly: true))
        #expect(try held(later) == Array(1...9))
    }

    /// A clean close gives the journal's space back; the next open allocates it again and
    /// appends go on from the log's end.
    @Test func aCleanCloseReleasesTheJournal() throws {
        let dir = try TemporaryDirectory()
        var options = DataDirectory.Options()
        options.journalPreallocation = 16 << 20
        do {
            let data = try DataDirectory(path: dir.path, reducerName: "test", options: options)
            for batch in groups(from: 1, count: 2) { try data.appendDurably(batch) }
            try data.closeJournal()
            #expect(sizeOnDisk(dir.sub(DataDirectory.journalFileName)) == 0)
            try data.appendDurably(groups(from: 7, count: 1)[0])  // appending after a close still works
            try data.closeJournal()
        }
        let reopened = try DataDirectory(path: dir.path, reducerName: "test", options: options)
        #expect(try held(reopened) == Array(1...9))
        #expect(sizeOnDisk(dir.sub(DataDirectory.journalFileName)) >= 16 << 20)
        try reopened.appendDurably(groups(from: 10, count: 1)[0])
        #expect(try reopened.latestSeq() == 12)
    }

    /// A take-over opens with little of the journal written, and writes the rest beside the writer.
    @Test func theJournalsSpaceIsWrittenLaterBesideAppends() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test")
        #expect(sizeOnDisk(dir.sub(DataDirectory.journalFileName)) < 8 << 20)
        let appends = Thread { for batch in self.groups(from: 1, count: 200) { try? data.appendDurably(batch) } }
        appends.start()
        try data.preallocateJournal(to: 12 << 20)
        #expect(sizeOnDisk(dir.sub(DataDirectory.journalFileName)) >= 12 << 20)
        try blockUntil("the appends are done") { (try? data.latestSeq()) == 600 }
        #expect(try held(data) == Array(1...600))
    }

    @Test func acknowledgedActionsAreReadBeforeLMDBHoldsThem() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: journalOnly)
        try data.commit(CommitBatch(envelopes: [envelope(1), envelope(2)]))
        for batch in groups(from: 3, count: 4) { try data.appendDurably(batch) }
        #expect(try actionsInLMDB(data) == 2)
        let backlog = groups(from: 3, count: 4).reduce(0) { $0 + EncodedBatch($1).byteCount }
        #expect(data.journalBacklogBytes == backlog)
        #expect(try data.latestSeq() == 14)
        #expect(try held(data) == Array(1...14))
        #expect(try data.envelope(at: 9) == envelope(9, key: "k9"))
        #expect(try data.dedupRecord(forKey: "k6") == DedupRecord(firstSeq: 6, count: 3))
        var ranged: [UInt64] = []
        try data.forEachEnvelope(from: 2, through: 7) { ranged.append($0.seq); return $0.seq < 5 }
        #expect(ranged == [2, 3, 4, 5])

        // A reader of the files (another process: `reel --data-dir`) sees the same, from the journal.
        let copy = try crashCopy(of: dir)
        let reader = try DataDirectory(path: copy.path, reducerName: nil, options: .init(readOnly: true))
        #expect(try actionsInLMDB(reader) == 2)
        #expect(try reader.latestSeq() == 14)
        #expect(try held(reader) == Array(1...14))

        try data.closeJournal()
        #expect(data.journalBacklogBytes == 0)
        #expect(try actionsInLMDB(data) == 14)
        #expect(try data.dedupRecord(forKey: "k6") == DedupRecord(firstSeq: 6, count: 3))
        #expect(try held(data) == Array(1...14))
    }

    /// A backlog of a few hundred KiB goes to LMDB at once, without waiting for the delay (an hour
    /// here): a large commit's writes would hold the journal's next sync up at the disk. What is
    /// below `Journal.applyBytes` waits (the test above: nothing of a few groups reaches LMDB).
    @Test func aBacklogGoesToLMDBWithoutWaitingForTheDelay() async throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: journalOnly)
        let commits = Mutex<[Duration]>([])
        data.observeJournalCommits { took in commits.withLock { $0.append(took) } }
        var seq: UInt64 = 0
        var appended = 0
        while appended < 160 << 10 {
            let group = bigGroup(after: &seq)
            appended += EncodedBatch(group).byteCount
            try data.appendDurably(group)
        }
        try await waitUntil("LMDB to hold some of \(appended) bytes of \(seq) actions, an hour before the delay is up") {
            (try? actionsInLMDB(data)) ?? 0 > 0
        }
        // The applier told the observer of its commit, after it (its writes and syncs took time).
        try await waitUntil("the commit observed") { !commits.withLock { $0.isEmpty } }
        #expect(commits.withLock { $0.allSatisfy { $0 > .zero } })
        #expect(try held(data) == Array(1...seq))
        try data.closeJournal()
    }

    /// The writer's lookup of a whole group's idempotency keys at once: those LMDB holds and those
    /// only the journal holds yet, the same answers as one key at a time.
    @Test func aGroupsKeysAreLookedUpTogetherInLMDBAndTheJournal() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: journalOnly)
        try data.commit(CommitBatch(envelopes: [envelope(1, key: "k1"), envelope(2, key: "k1")], dedup: [("k1", DedupRecord(firstSeq: 1, count: 2))]))
        for batch in groups(from: 3, count: 2) { try data.appendDurably(batch) }  // k3 and k6, journal only
        let found = try data.dedupRecords(forKeys: ["k6", "nope", "k1", "k3"])
        #expect(found == ["k1": DedupRecord(firstSeq: 1, count: 2), "k3": DedupRecord(firstSeq: 3, count: 3), "k6": DedupRecord(firstSeq: 6, count: 3)])
        for key in ["k1", "k3", "k6", "nope"] { #expect(try data.dedupRecord(forKey: key) == found[key]) }
        #expect(try data.dedupRecords(forKeys: []) == [:])
    }

    @Test func aKilledWriterLosesNoAcknowledgedGroup() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: journalOnly)
        for batch in groups(from: 1, count: 5) { try data.appendDurably(batch) }
        let copy = try crashCopy(of: dir)

        let reopened = try DataDirectory(path: copy.path, reducerName: "test")
        #expect(reopened.journalActionsRecovered == 15)
        #expect(try actionsInLMDB(reopened) == 15)
        #expect(try held(reopened) == Array(1...15))
        #expect(try reopened.envelope(at: 15) == envelope(15, key: "k13"))
        #expect(try reopened.dedupRecord(forKey: "k13") == DedupRecord(firstSeq: 13, count: 3))
        // Moved once: the next open finds nothing more to move, and appending goes on.
        try reopened.appendDurably(groups(from: 16, count: 1)[0])
        try reopened.closeJournal()
        let again = try crashCopy(of: copy)
        let third = try DataDirectory(path: again.path, reducerName: "test")
        #expect(third.journalActionsRecovered == 0)
        #expect(try held(third) == Array(1...18))
    }

    @Test func aTornLastRecordWasNeverAcknowledgedAndIsDropped() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: journalOnly)
        for batch in groups(from: 1, count: 3) { try data.appendDurably(batch) }
        let lastRecord = data.journal!.file.offset - JournalFormat.encode(JournalGroup(
            firstSeq: 7, records: (7...9).map { EnvelopeCodec.encode(envelope($0, key: "k7")) }, dedup: [("k7", DedupRecord(firstSeq: 7, count: 3))]
        )).count
        // Power failed while the last group's sectors were being written: its end never landed.
        for cut in [lastRecord + 40, lastRecord + 100, data.journal!.file.offset - 8] {
            let copy = try crashCopy(of: dir)
            let handle = try FileHandle(forUpdating: URL(fileURLWithPath: copy.sub(DataDirectory.journalFileName)))
            try handle.seek(toOffset: UInt64(cut))
            try handle.write(contentsOf: Data(count: 512))
            try handle.close()
            let reopened = try DataDirectory(path: copy.path, reducerName: "test")
            #expect(reopened.journalActionsRecovered == 6, "cut at \(cut)")
            #expect(try held(reopened) == Array(1...6))
        }
    }

    @Test func aDamagedAcknowledgedRecordIsRefusedNotSkipped() throws {
        let dir = try TemporaryDirectory()
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: journalOnly)
        for batch in groups(from: 1, count: 3) { try data.appendDurably(batch) }
        let copy = try crashCopy(of: dir)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: copy.sub(DataDirectory.journalFileName)))
        try handle.seek(toOffset: 60)  // inside the first record's payload
        let byte = try handle.read(upToCount: 1)![0]
        try handle.seek(toOffset: 60)
        try handle.write(contentsOf: Data([byte ^ 0x10]))
        try handle.close()
        for readOnly in [true, false] {
            do throws(StorageError) {
                _ = try DataDirectory(path: copy.path, reducerName: "test", options: .init(readOnly: readOnly))
                Issue.record("a journal with a damaged acknowledged record was opened (read-only: \(readOnly))")
            } catch {
                #expect(error.code == .corrupt)
                #expect(error.message.contains("acknowledged actions from seq 4"), "\(error.message)")
            }
        }
    }

    @Test func theFileIsReusedFromItsStartOnceLMDBHoldsIt() throws {
        let dir = try TemporaryDirectory()
        var options = DataDirectory.Options()
        options.journalCycleSize = 1 << 20
        options.journalApplyDelay = 0.001
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: options)
        // About 8 KiB per group: the 1 MiB file goes round several times.
        var seq: UInt64 = 0
        for _ in 0..<600 { try data.appendDurably(bigGroup(after: &seq)) }
        #expect(data.journal!.file.size == 1 << 20)
        #expect(data.journal!.file.offset < 1 << 20)
        let copy = try crashCopy(of: dir, open: data)  // with older records past the newest ones
        let reopened = try DataDirectory(path: copy.path, reducerName: "test")
        #expect(try reopened.latestSeq() == seq)
        #expect(try held(reopened) == Array(1...seq))
        try data.closeJournal()
        #expect(try actionsInLMDB(data) == Int(seq))
    }

    @Test func theApplierGrowsTheFileAheadOfTheWriter() async throws {
        let dir = try TemporaryDirectory()
        var options = DataDirectory.Options()
        options.journalCycleSize = 4 << 20
        options.journalApplyDelay = 0.001
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: options)
        let file = data.journal!.file
        #expect(file.size == JournalFile.initialSize)
        // About 8 KiB per group: past the middle of the first MiB after some 70 groups.
        var seq: UInt64 = 0
        var grownByApplier = false
        for _ in 0..<100 {
            try data.appendDurably(bigGroup(after: &seq))
            // The writer grows the file only when a record does not fit; before that, only the
            // applier can have grown it.
            if file.size > JournalFile.initialSize && file.offset < JournalFile.initialSize { grownByApplier = true }
            // Once the writer is past the middle, the applier grows the file when it has applied
            // the group that took it there: the next group waits for that, as a client's round
            // trips give the applier time (nothing is appended meanwhile, so only the applier
            // can grow it).
            if !grownByApplier && file.offset * 2 >= file.size {
                try await waitUntil("the applier to grow the journal past \(JournalFile.initialSize) bytes") {
                    file.size > JournalFile.initialSize
                }
            }
        }
        #expect(grownByApplier)
        #expect(file.size >= 2 << 20 && file.size <= 4 << 20)
        // The new space is allocated, not a hole.
        var info = stat()
        #expect(stat(file.path, &info) == 0)
        #expect(Int(info.st_blocks) * 512 >= Int(info.st_size))
        try data.closeJournal()
        let copy = try crashCopy(of: dir)
        #expect(try held(try DataDirectory(path: copy.path, reducerName: "test")) == Array(1...seq))
    }

    @Test func theJournalIsAllocatedAsAskedWhenOpenedForWriting() throws {
        let dir = try TemporaryDirectory()
        var options = DataDirectory.Options()
        options.journalPreallocation = 4 << 20
        options.journalCycleSize = 4 << 20  // as the daemon has it: the whole cycle allocated at once
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: options)
        #expect(data.journal!.file.size == 4 << 20)
        var info = stat()
        #expect(stat(data.journal!.file.path, &info) == 0)
        #expect(Int(info.st_size) == 4 << 20 && Int(info.st_blocks) * 512 >= 4 << 20, "allocated, not sparse")
        // Written, not only allocated, where the file system tells the two apart (ext4 here): a
        // sync into an unwritten block also writes the inode's extents.
        if FileExtents.keepsAllocatedBlocksUnwritten(probe: dir.path + "/probe") {
            #expect(FileExtents.unwrittenBytes(of: data.journal!.file.path) == 0)
        }
        var seq: UInt64 = 0
        for _ in 0..<300 { try data.appendDurably(bigGroup(after: &seq)) }  // 2.4 MiB: nothing to grow
        #expect(data.journal!.file.size == 4 << 20)
        try data.closeJournal()
        let copy = try crashCopy(of: dir)
        #expect(try held(try DataDirectory(path: copy.path, reducerName: "test")) == Array(1...seq))
    }

    @Test func aGroupThatCouldNotFitTheDataFileIsRefusedBeforeTheJournal() throws {
        let dir = try TemporaryDirectory()
        var options = journalOnly
        options.initialMapSize = 256 << 10
        options.maxMapSize = 1 << 20
        let data = try DataDirectory(path: dir.path, reducerName: "test", options: options)
        try data.appendDurably(CommitBatch(envelopes: [envelope(1)]))
        let huge = ActionEnvelope(seq: 2, action: Action(type: "set", payload: ["path": "/h", "value": .string(String(repeating: "z", count: 600 << 10))]),
                                  time: .now(), peer: Peer(uid: 1, gid: 1, pid: 1))
        #expect(throws: StorageError.self) { try data.appendDurably(CommitBatch(envelopes: [huge])) }
        #expect(try data.latestSeq() == 1)
        try data.appendDurably(CommitBatch(envelopes: [envelope(2)]))
        try data.closeJournal()
        let copy = try crashCopy(of: dir)
        #expect(try held(try DataDirectory(path: copy.path, reducerName: "test")) == [1, 2])
    }

    @Test func olderRecordsPastTheChainAreIgnoredAndNewerOnesAreDamage() throws {
        func record(_ first: UInt64, _ count: UInt64) -> [UInt8] {
            JournalFormat.encode(JournalGroup(firstSeq: first, records: (first..<(first + count)).map { EnvelopeCodec.encode(envelope($0)) }, dedup: []))
        }
        // Reused from the start: 21...26 over what held 1...20.
        let reused = record(21, 3) + record(24, 3) + Array(record(5, 5).dropFirst(40)) + record(10, 4) + [UInt8](repeating: 0, count: 64)
        #expect(try JournalFormat.unappliedGroups(in: reused, after: 20, path: "j").map(\.firstSeq) == [21, 24])
        #expect(try JournalFormat.unappliedGroups(in: reused, after: 23, path: "j").map(\.firstSeq) == [24])
        #expect(try JournalFormat.unappliedGroups(in: reused, after: 26, path: "j").isEmpty)
        // LMDB behind the journal's first record: acknowledged actions are missing.
        #expect(throws: StorageError.self) { try JournalFormat.unappliedGroups(in: reused, after: 18, path: "j") }
        // A damaged record followed by newer intact ones.
        var damaged = record(21, 3) + record(24, 3) + record(27, 2)
        damaged[record(21, 3).count + 50] ^= 1
        #expect(throws: StorageError.self) { try JournalFormat.unappliedGroups(in: damaged, after: 20, path: "j") }
        // The same damage in the last record is a torn write: dropped.
        var torn = record(21, 3) + record(24, 3)
        torn[torn.count - 20] ^= 1
        #expect(try JournalFormat.unappliedGroups(in: torn, after: 20, path: "j").map(\.firstSeq) == [21])
    }
}
