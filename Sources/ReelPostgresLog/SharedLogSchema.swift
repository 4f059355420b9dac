import PostgresNIO
import ReelCore
import ReelStore

/// The two tables of a shared log, created by the first node to start and checked by every node:
///
/// ```sql
/// reel_log(seq bigint PRIMARY KEY CHECK (seq > 0), record bytea NOT NULL, type text NOT NULL,
///          idempotency_key text UNIQUE, appended_at timestamptz NOT NULL DEFAULT now())
/// reel_store(key text PRIMARY KEY, value text NOT NULL)   -- reducer_name, reducer_version
/// ```
///
/// The unique indexes are the log's guarantees (one entry per seq, one claim per key): a table
/// without them would take duplicates without a word, so their absence is an incompatibility, as
/// is a column of another type. Extra columns are tolerated (a later version may add some).
enum SharedLogSchema {
    /// Serialises `prepare` across nodes: `CREATE TABLE IF NOT EXISTS` is not safe against a
    /// concurrent identical statement (both may find the table missing, and the second then fails
    /// on the catalog's unique index). Any constant will do; this one is "reel_log" in ASCII.
    static let advisoryLock: Int64 = 0x7265_656C_5F6C_6F67

    static let createLog: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS reel_log (
            seq bigint PRIMARY KEY CHECK (seq > 0),
            record bytea NOT NULL,
            type text NOT NULL,
            idempotency_key text UNIQUE,
            appended_at timestamptz NOT NULL DEFAULT now()
        )
        """

    static let createStore: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS reel_store (key text PRIMARY KEY, value text NOT NULL)
        """

    /// The columns the log needs: name, type (as `format_type` spells it), NOT NULL.
    static let expectedColumns: [String: [(name: String, type: String, notNull: Bool)]] = [
        "reel_log": [
            ("seq", "bigint", true), ("record", "bytea", true), ("type", "text", true),
            ("idempotency_key", "text", false), ("appended_at", "timestamp with time zone", true),
        ],
        "reel_store": [("key", "text", true), ("value", "text", true)],
    ]

    /// The single-column unique indexes the log relies on, per table.
    static let expectedUniqueColumns: [String: Set<String>] = [
        "reel_log": ["seq", "idempotency_key"],
        "reel_store": ["key"],
    ]

    /// Creates what is missing, records `reducer` if no reducer is recorded yet, checks the
    /// tables' shape, and returns the recorded reducer. In one transaction, under the lock.
    ///
    /// Nothing is created or inserted that exists already, so a node whose user may only read and
    /// append (tables made by an administrator, no CREATE on the schema, as PostgreSQL 15 has it
    /// for `public` by default) prepares without error.
    static func prepare(_ session: Session, reducer: ReducerIdentity) async throws -> ReducerIdentity {
        try await session.transaction {
            try await session.query("SELECT pg_advisory_xact_lock(\(advisoryLock))")
            let existing = try await session.query(
                "SELECT to_regclass('reel_log') IS NOT NULL, to_regclass('reel_store') IS NOT NULL"
            )
            let (hasLog, hasStore) = try existing[0].decode((Bool, Bool).self)
            if !hasLog { try await session.query(createLog) }
            if !hasStore { try await session.query(createStore) }
            try await checkShape(session)
            if let recorded = try await recordedReducer(session) { return recorded }
            try await session.query("""
                INSERT INTO reel_store (key, value) VALUES ('reducer_name', \(reducer.name)), ('reducer_version', \(reducer.version))
                ON CONFLICT (key) DO NOTHING
                """)
            guard let recorded = try await recordedReducer(session) else {
                throw PostgresFailure.refused(reason: "reel_store lacks reducer_name or reducer_version")
            }
            return recorded
        }
    }

    /// The reducer in `reel_store`, if both its rows are there.
    private static func recordedReducer(_ session: Session) async throws -> ReducerIdentity? {
        var recorded: [String: String] = [:]
        for row in try await session.query("SELECT key, value FROM reel_store WHERE key IN ('reducer_name', 'reducer_version')") {
            let (key, value) = try row.decode((String, String).self)
            recorded[key] = value
        }
        guard let name = recorded["reducer_name"], let version = recorded["reducer_version"] else { return nil }
        return ReducerIdentity(name: name, version: version)
    }

    /// Throws ``PostgresFailure/refused(reason:)`` naming the first difference from the expected
    /// shape. The tables are found as the statements find them: through the search path.
    static func checkShape(_ session: Session) async throws {
        var columns: [String: [String: (type: String, notNull: Bool)]] = [:]
        let columnRows = try await session.query("""
            SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
            FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
            WHERE c.oid IN (to_regclass('reel_log'), to_regclass('reel_store')) AND a.attnum > 0 AND NOT a.attisdropped
            """)
        for row in columnRows {
            let (table, column, type, notNull) = try row.decode((String, String, String, Bool).self)
            columns[table, default: [:]][column] = (type, notNull)
        }
        var unique: [String: Set<String>] = [:]
        let indexRows = try await session.query("""
            SELECT c.relname, a.attname
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE i.indrelid IN (to_regclass('reel_log'), to_regclass('reel_store'))
              AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL
            """)
        for row in indexRows {
            let (table, column) = try row.decode((String, String).self)
            unique[table, default: []].insert(column)
        }
        for (table, expected) in expectedColumns.sorted(by: { $0.key < $1.key }) {
            for column in expected {
                guard let found = columns[table]?[column.name] else {
                    throw PostgresFailure.refused(reason: "table \(table) has no column \(column.name) (an unexpected schema)")
                }
                guard found.type == column.type, found.notNull == column.notNull else {
                    let want = column.type + (column.notNull ? " NOT NULL" : "")
                    let have = found.type + (found.notNull ? " NOT NULL" : "")
                    throw PostgresFailure.refused(reason: "column \(table).\(column.name) is \(have), expected \(want)")
                }
            }
            for column in expectedUniqueColumns[table, default: []].sorted() where !(unique[table]?.contains(column) ?? false) {
                throw PostgresFailure.refused(reason: "column \(table).\(column) has no unique index (an unexpected schema)")
            }
        }
    }
}
