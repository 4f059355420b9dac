import Foundation
import ReelLMDB
import ReelTestSupport
import Testing

/// Misuses the type system cannot rule out must trap loudly, never deadlock or corrupt.
/// Each runs in a child process (an exit test) and checks the trap's own message. The parent owns
/// the temporary directory, since a child that traps runs no cleanup.
@Suite(.heavy) struct LMDBTransactionTrapTests {
    private func stderr(of result: ExitTest.Result?) -> String {
        result.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
    }

    @Test func nestedWriteOnTheSameThreadTraps() async throws {
        try await withTemporaryDirectory { dir in
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [dir = dir as String] in
                // Without the trap LMDB would deadlock on its own writer lock; the watchdog then
                // exits with success, which fails this expectation.
                exitSuccessfullyAfter(seconds: 20)
                let env = try! LMDBEnvironment(path: dir, options: testOptions())
                let db = try! env.openDatabase("kv", create: true)!
                try! env.write { txn in
                    try txn.put(bytes("outer"), forKey: 1, in: db)
                    try env.write { inner in try inner.put(bytes("inner"), forKey: 2, in: db) }
                }
            }
            #expect(stderr(of: result).contains("inside a write transaction of the same environment"))
        }
    }

    /// Writes, and reads through the generic `LMDBReadable` path: each checks the thread.
    @Test(arguments: ["put", "get", "forEach", "withCursor", "transactionID"])
    func writeTransactionUsedFromAnotherThreadTraps(operation: String) async throws {
        try await withTemporaryDirectory { dir in
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [dir = dir as String, operation = operation as String] in
                exitSuccessfullyAfter(seconds: 20)
                let env = try! LMDBEnvironment(path: dir, options: testOptions())
                let db = try! env.openDatabase("kv", create: true)!
                try! env.write { txn in
                    try txn.put(bytes("x"), forKey: 1, in: db)
                    // The transaction is ~Copyable and not Sendable, so only unsafe tricks get it
                    // onto another thread. Without the thread check the operation would succeed
                    // and the child would exit normally.
                    runOnAnotherThread {
                        if operation == "put" {
                            _ = try? txn.put(bytes("y"), forKey: 2, in: db)
                        } else {
                            read(operation, txn, db)
                        }
                    }
                }
            }
            #expect(stderr(of: result).contains("on a thread other than the one that began it"))
        }
    }

    /// Every scope that lends value bytes must block writes until it ends.
    @Test(arguments: ["withValue", "forEach", "withCursor"])
    func writingWhileValueBytesAreLentTraps(scope: String) async throws {
        try await withTemporaryDirectory { dir in
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [dir = dir as String, scope = scope as String] in
                exitSuccessfullyAfter(seconds: 20)
                let env = try! LMDBEnvironment(path: dir, options: testOptions())
                let db = try! env.openDatabase("kv", create: true)!
                try! env.write { txn in
                    try txn.put(bytes("value"), forKey: 1, in: db)
                    try writeWhileLending(scope, txn, db)
                }
            }
            #expect(stderr(of: result).contains("while value bytes of the same transaction are borrowed"))
        }
    }

    @Test func openingADatabaseInsideATransactionTraps() async throws {
        try await withTemporaryDirectory { dir in
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [dir = dir as String] in
                exitSuccessfullyAfter(seconds: 20)
                let env = try! LMDBEnvironment(path: dir, options: testOptions())
                _ = try! env.openDatabase("kv", create: true)!
                try! env.read { _ in _ = try env.openDatabase("kv") }
            }
            #expect(stderr(of: result).contains("openDatabase called inside a transaction"))
        }
    }

    @Test func databaseOfAnotherEnvironmentTraps() async throws {
        try await withTemporaryDirectory { dir in
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                [dir = dir as String] in
                exitSuccessfullyAfter(seconds: 20)
                let first = try! LMDBEnvironment(path: dir + "/first", options: testOptions())
                let second = try! LMDBEnvironment(path: dir + "/second", options: testOptions())
                let foreign = try! first.openDatabase("kv", create: true)!
                _ = try! second.openDatabase("kv", create: true)!
                // Same name and very likely the same MDB_dbi number: only the check tells them apart.
                try! second.read { txn in _ = try txn.get(1, in: foreign) }
            }
            #expect(stderr(of: result).contains("belongs to another LMDBEnvironment"))
        }
    }
}

/// One read operation through the generic `LMDBReadable` path, named by `operation`.
private func read(_ operation: String, _ txn: borrowing some LMDBReadable & ~Copyable, _ db: LMDBDatabase) {
    switch operation {
    case "get": _ = try? txn.get(1, in: db)
    case "forEach": try? txn.forEach(in: db) { _, _ in true }
    case "withCursor": _ = try? txn.withCursor(in: db) { try $0.next() }
    case "transactionID": _ = txn.transactionID
    default: fatalError("unknown operation \(operation)")
    }
}

/// Writes from inside the value-lending scope named by `scope`; the put could move the page the
/// lent bytes point into.
private func writeWhileLending(_ scope: String, _ txn: borrowing LMDBWriteTransaction, _ db: LMDBDatabase) throws {
    switch scope {
    case "withValue": _ = try txn.withValue(forKey: 1, in: db) { _ in try txn.put(bytes("other"), forKey: 2, in: db) }
    case "forEach": try txn.forEach(in: db) { _, _ in try txn.put(bytes("other"), forKey: 2, in: db) }
    case "withCursor": _ = try txn.withCursor(in: db) { _ in try txn.put(bytes("other"), forKey: 2, in: db) }
    default: fatalError("unknown scope \(scope)")
    }
}

/// Runs a non-escaping closure on a new thread and waits for it: the unsafe trick it takes to
/// move a transaction to another thread at all.
private func runOnAnotherThread(_ body: () -> Void) {
    withoutActuallyEscaping(body) { operation in
        nonisolated(unsafe) let operation = operation
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            operation()
            finished.signal()
        }
        finished.wait()
    }
}
