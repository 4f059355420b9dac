import Foundation
import PostgresNIO
import ReelStore

/// What an error from postgres-nio means for the shared log.
///
/// postgres-nio's errors print as a deliberately vague "Database error" (so as not to leak data);
/// the useful parts are the code, the server's SQLSTATE and message, and the underlying socket
/// error. This turns them into one line for people and into the two kinds of ``SharedLogError``:
/// - **unavailable** (retry later): the connection could not be made or was lost (refused,
///   reset, timed out, the server shutting down or starting up) and any server error that a
///   later attempt may not meet (out of memory, disk full, too many connections, a deadlock, a
///   statement timeout);
/// - **incompatible** (retrying will not help): the server refused us (authentication, a missing
///   database, missing privileges, an unexpected table) or sent data we cannot read.
/// A unique violation (23505) is neither: ``PostgresSharedLog/append(_:)`` answers it as a conflict.
enum PostgresFailure: Error, Sendable {
    /// The connection is gone or never came: nothing more will happen on it.
    case connection(reason: String)
    /// The server answered with an error; the connection is still usable (after a rollback).
    case server(sqlState: String, message: String, constraint: String?)
    /// The server or its data are not what the log expects (protocol, TLS, authentication, decoding).
    case refused(reason: String)
    /// The call's task was cancelled (its deadline passed, or the log was closed).
    case cancelled

    init(_ error: any Error) {
        switch error {
        case let failure as PostgresFailure:
            self = failure
        case is CancellationError:
            self = .cancelled
        case let error as PSQLError:
            self = Self(psql: error)
        case let error as PostgresDecodingError:
            self = .refused(reason: "a value of column \(error.columnName) cannot be read as \(error.targetType)")
        default:
            self = .connection(reason: Self.describe(error))
        }
    }

    private init(psql error: PSQLError) {
        switch error.code {
        case .server:
            let info = error.serverInfo
            self = .server(
                sqlState: info?[.sqlState] ?? "?????", message: info?[.message] ?? "an error without a message",
                constraint: info?[.constraintName]
            )
        case .connectionError:
            self = .connection(reason: error.underlying.map(Self.describe) ?? "cannot connect")
        case .serverClosedConnection:
            self = .connection(reason: "the server closed the connection")
        case .uncleanShutdown:
            self = .connection(reason: "the connection was lost")
        case .clientClosedConnection, .poolClosed:
            self = .connection(reason: "the connection was closed")
        case .queryCancelled:
            self = .cancelled
        case .sslUnsupported:
            self = .refused(reason: "the server does not offer TLS, which sslmode requires")
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            self = .refused(reason: "cannot authenticate (\(error.code)); check the user and password")
        default:
            // Protocol surprises (decoding, unexpected messages): the connection is dropped, and a
            // fresh one may well do better.
            self = .connection(reason: "\(error.code)" + (error.underlying.map { ": \(Self.describe($0))" } ?? ""))
        }
    }

    /// Whether the connection can serve another call (after a rollback, if in a transaction).
    var connectionSurvives: Bool {
        guard case .server(let sqlState, _, _) = self else { return false }
        // Class 08 (connection exception) and 57P0x (shutdown, crash, cannot connect now, the
        // database dropped) end the session; the server closes it.
        return !sqlState.hasPrefix("08") && !sqlState.hasPrefix("57P")
    }

    /// The failure in a few words, for people.
    var reason: String {
        switch self {
        case .connection(let reason), .refused(let reason): return reason
        case .server(let sqlState, let message, _): return "\(message) (SQLSTATE \(sqlState))"
        case .cancelled: return "cancelled"
        }
    }

    /// A unique violation: another entry already holds this seq or idempotency key.
    var isUniqueViolation: Bool {
        if case .server("23505", _, _) = self { return true }
        return false
    }

    /// The error for the store, with `action` (what was being done, "append 3 entries") and
    /// where the log is.
    func sharedLogError(location: String, action: String) -> SharedLogError {
        switch self {
        case .connection(let reason):
            return SharedLogError(.unavailable, "the shared log at \(location) is unreachable: \(reason)")
        case .cancelled:
            return SharedLogError(.unavailable, "the shared log at \(location) did not answer (cancelled while trying to \(action))")
        case .refused(let reason):
            return SharedLogError(.incompatible, "the shared log at \(location) cannot be used: \(reason)")
        case .server(let sqlState, let message, _):
            let line = "\(message) (SQLSTATE \(sqlState))"
            // 28: authentication; 3D: no such database; 42: no such table or column, no privilege;
            // 22 and 23 (but for the unique violation handled by append): data the table refuses.
            if ["28", "3D", "42", "22", "23"].contains(where: sqlState.hasPrefix) {
                return SharedLogError(.incompatible, "the shared log at \(location) refused to \(action): \(line)")
            }
            return SharedLogError(.unavailable, "the shared log at \(location) failed to \(action): \(line)")
        }
    }

    /// One line for a socket-level error: "connection refused", "no such file or directory"…
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first { return describe(first.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve the host name \(error.host)" }
            return "cannot connect to \(error.host):\(error.port)"
        case let error as ChannelError:
            if case .connectTimeout(let amount) = error {
                return "no connection within \(Double(amount.nanoseconds) / 1e9) s"
            }
            return "\(error)"
        case let error as PSQLError:
            return PostgresFailure(error).reason
        case let error as NIOSSLError:
            return "TLS failed: \(error)"
        default:
            return String(describing: error).split(separator: "\n").first.map(String.init) ?? "unknown error"
        }
    }
}
