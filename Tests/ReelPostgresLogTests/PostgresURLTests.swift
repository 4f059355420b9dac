import Foundation
import Logging
@testable import ReelPostgresLog
import ReelStore
import Testing

/// The shared log's URL, read as libpq reads it; no server needed.
struct PostgresURLTests {
    @Test func aFullURL() throws {
        let url = try PostgresURL("postgresql://reel%40app:p%3Ass%2Fw@db.example:6543/reel%20log?sslmode=require")
        #expect(url.endpoint == .tcp(host: "db.example", port: 6543))
        #expect(url.user == "reel@app")
        #expect(url.password == "p:ss/w")
        #expect(url.database == "reel log")
        #expect(url.sslMode == .require)
        #expect(url.redacted == "postgresql://reel%40app:***@db.example:6543/reel%20log?sslmode=require")
    }

    @Test func defaults() throws {
        let url = try PostgresURL("postgres://reel@localhost")
        #expect(url.endpoint == .tcp(host: "localhost", port: 5432))
        #expect(url.database == "reel", "the database defaults to the user's name")
        #expect(url.password == nil)
        #expect(url.sslMode == .prefer)
        #expect(try PostgresURL("postgres://reel@[::1]:5433/db").endpoint == .tcp(host: "::1", port: 5433))
    }

    @Test func unixSockets() throws {
        #expect(try PostgresURL("postgres://reel@/db?host=/run/pg").endpoint == .unixSocket(path: "/run/pg/.s.PGSQL.5432"))
        #expect(try PostgresURL("postgres://reel@%2Frun%2Fpg:5433/db").endpoint == .unixSocket(path: "/run/pg/.s.PGSQL.5433"))
        #expect(try PostgresURL("postgres://reel@/db").endpoint == .unixSocket(path: "/var/run/postgresql/.s.PGSQL.5432"))
        #expect(try PostgresURL("postgres://reel@ignored/db?host=/tmp/&port=7").endpoint == .unixSocket(path: "/tmp/.s.PGSQL.7"))
    }

    @Test func thePasswordNeverShows() throws {
        let log = try PostgresSharedLog(url: "postgres://reel:secret@127.0.0.1:5432/db", logger: Logger(label: "test"))
        defer { log.close() }
        #expect(log.location == "postgres://reel:***@127.0.0.1:5432/db")
        let query = try PostgresSharedLog(url: "postgres://reel@127.0.0.1/db?password=secret&sslmode=disable", logger: Logger(label: "test"))
        defer { query.close() }
        #expect(query.location == "postgres://reel@127.0.0.1/db?password=***&sslmode=disable")
        let none = try PostgresSharedLog(url: "postgres://reel@127.0.0.1/db", logger: Logger(label: "test"))
        defer { none.close() }
        #expect(none.location == "postgres://reel@127.0.0.1/db")
    }

    @Test(arguments: [
        ("mysql://reel@host/db", "the scheme must be postgres:// or postgresql://, not mysql://"),
        ("reel@host/db", "expected postgres://user:password@host:port/database"),
        ("", "expected postgres://user:password@host:port/database"),
        ("postgres://reel@host:70000/db", "the port 70000 is out of range"),
        ("postgres://reel@host/db?port=x", "the port x is not a number"),
        ("postgres://reel@host/db?sslmode=sometimes", "sslmode sometimes is not one of disable, allow, prefer, require, verify-ca, verify-full"),
        ("postgres://reel@host/db?connect_timeout=3", "unknown parameter connect_timeout"),
        ("postgres://reel@host/db?host=/a&host=/b", "parameter host is given twice"),
        ("postgres://reel:secret@host/db#x", "a fragment"),
        ("postgres://reel@/db?host=/\(String(repeating: "d", count: 100))", "is too long"),
    ])
    func badURLsAreRefusedSayingWhy(url: String, reason: String) throws {
        let error = try #require(throws: SharedLogError.self) { try PostgresSharedLog(url: url, logger: Logger(label: "test")) }
        #expect(error.kind == .incompatible)
        #expect(error.message.contains(reason), "\(error.message)")
        #expect(error.message.hasPrefix("the shared log URL "))
        #expect(!error.message.contains("secret"))
    }
}
