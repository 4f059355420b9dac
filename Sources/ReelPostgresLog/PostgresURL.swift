import Foundation
import PostgresNIO
import ReelStore

/// Where the shared log is and how to log in, from a libpq-style URL:
/// `postgres://user:password@host:port/database?sslmode=…` (or `postgresql://`).
///
/// libpq's conventions, so that the URL an operator already uses with `psql` works here:
/// - the user, password, host and database are percent-decoded; the port defaults to 5432, the
///   user to this process's user, the database to the user's name;
/// - a Unix socket is a directory, given as `?host=/dir` or as a percent-encoded host starting
///   with `/` (`postgres://reel@%2Fvar%2Frun%2Fpostgresql/db`); the socket file is
///   `<dir>/.s.PGSQL.<port>`. No host at all means Debian's `/var/run/postgresql`;
/// - `sslmode` is `disable`, `allow` or `prefer` (TLS when the server offers it, the default),
///   `require` (TLS or nothing), as in libpq without checking the certificate, or `verify-ca` /
///   `verify-full` (checked against the system's trust roots, and the host name for `verify-full`).
///   TLS does not apply to Unix sockets.
///
/// Anything else (another scheme, an unknown parameter, a bad port) is refused: a URL that does not
/// mean what its writer thought is better refused at start than obeyed in part.
struct PostgresURL: Sendable {
    enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        case unixSocket(path: String)
    }

    enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    var endpoint: Endpoint
    var user: String
    var password: String?
    var database: String
    var sslMode: SSLMode
    /// The URL as given, with the password (in the user part or as `?password=`) shown as `***`.
    var redacted: String

    /// Debian's (and libpq's default build's) socket directory, for a URL without a host.
    static let defaultSocketDirectory = "/var/run/postgresql"
    static let supportedParameters = ["host", "port", "user", "password", "dbname", "sslmode"]

    init(_ text: String) throws(SharedLogError) {
        func refuse(_ reason: String) -> SharedLogError {
            SharedLogError(.incompatible, "the shared log URL \(Self.redact(text)) is invalid: \(reason)")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw refuse("expected postgres://user:password@host:port/database")
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw refuse("the scheme must be postgres:// or postgresql://, not \(scheme)://")
        }
        guard components.fragment == nil else { throw refuse("a fragment (#…) means nothing here") }

        var parameters: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard Self.supportedParameters.contains(item.name) else {
                throw refuse("unknown parameter \(item.name) (supported: \(Self.supportedParameters.joined(separator: ", ")))")
            }
            guard parameters[item.name] == nil else { throw refuse("parameter \(item.name) is given twice") }
            parameters[item.name] = item.value ?? ""
        }

        // The user part, percent-decoded (URLComponents decodes `user` and `password` itself).
        let user = parameters["user"] ?? components.user.flatMap { $0.isEmpty ? nil : $0 } ?? Self.processUser()
        guard let user, !user.isEmpty else { throw refuse("no user, and this process's user name is unknown") }
        self.user = user
        password = parameters["password"] ?? components.password

        var port = 5432
        if let portText = parameters["port"] {
            guard let value = Int(portText) else { throw refuse("the port \(portText) is not a number") }
            port = value
        } else if let value = components.port {
            port = value
        }
        guard (1...65_535).contains(port) else { throw refuse("the port \(port) is out of range (1–65535)") }

        // `path` is decoded ("/db%2Fx" gives "/db/x"): a database name may hold any character.
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = parameters["dbname"] ?? (path.isEmpty ? user : path)

        let modeText = parameters["sslmode"] ?? SSLMode.prefer.rawValue
        guard let sslMode = SSLMode(rawValue: modeText) else {
            throw refuse("sslmode \(modeText) is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.sslMode = sslMode

        // ?host= wins over the URL's host, as in libpq. A host starting with "/" is a directory.
        var host = parameters["host"] ?? components.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }  // [::1]
        if host.isEmpty { host = Self.defaultSocketDirectory }
        if host.hasPrefix("/") {
            let socketPath = (host.hasSuffix("/") ? String(host.dropLast()) : host) + "/.s.PGSQL.\(port)"
            // sockaddr_un holds 108 bytes, the terminating zero included.
            guard socketPath.utf8.count < 108 else { throw refuse("the socket path \(socketPath) is too long (over 107 bytes)") }
            endpoint = .unixSocket(path: socketPath)
        } else {
            endpoint = .tcp(host: host, port: port)
        }
        redacted = Self.redact(text)
    }

    /// `text` with its password replaced by `***` (``redactingPassword(inURL:)``).
    static func redact(_ text: String) -> String { redactingPassword(inURL: text) }

    /// The process's user name, libpq's default user.
    private static func processUser() -> String? {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }

    /// The connection settings for postgres-nio. `callTimeout` bounds connecting too, and becomes
    /// the server's `statement_timeout` and `idle_in_transaction_session_timeout` for these
    /// sessions: a node that gave up on a call (or hangs, or lost its network in the middle of an
    /// append) must not leave a transaction holding the next seq locked for everyone else.
    func connectionConfiguration(callTimeout: Duration) throws(SharedLogError) -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint {
        case .unixSocket(let path):
            configuration = .init(unixSocketPath: path, username: user, password: password, database: database)
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: try tls())
        }
        let milliseconds = max(1, Int64((callTimeout / .milliseconds(1)).rounded(.up)))
        configuration.options.connectTimeout = .milliseconds(milliseconds)
        configuration.options.additionalStartupParameters = [
            ("application_name", "reeld"),
            ("statement_timeout", String(milliseconds)),
            ("idle_in_transaction_session_timeout", String(milliseconds)),
        ]
        return configuration
    }

    private func tls() throws(SharedLogError) -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable: return .disable
        // libpq encrypts without checking the certificate in these modes; so does this.
        case .allow, .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: tls)
        } catch {
            throw SharedLogError(.incompatible, "cannot set up TLS for the shared log at \(redacted): \(error)")
        }
        switch sslMode {
        case .allow, .prefer: return .prefer(context)
        default: return .require(context)
        }
    }
}
