#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import NIOPosix

/// A socket call's failure in words a person can act on: what happened to which address, without
/// SwiftNIO's call names ("connect(descriptor:addr:size:)") or its error types' cases.
public enum SocketErrorText {
    /// Why connecting to the Unix socket at `path` failed, as the end of "cannot reach … at PATH: ".
    public static func connecting(to path: String, _ error: any Error) -> String {
        if let pathError = error as? SocketAddressError, case .unixDomainSocketPathTooLong = pathError {
            return "the path is \(path.utf8.count) bytes, longer than a Unix socket path may be (107): use a shorter one (a relative path works)"
        }
        guard let errno = errnoCode(of: error) else { return "\(error)" }
        switch errno {
        case ENOENT: return "there is no socket there (is reeld running?)"
        case ECONNREFUSED: return "nothing is listening there (a socket file left by a daemon that stopped?)"
        case EACCES, EPERM: return "this user may not open it (permission denied: see the socket's group and reeld's --socket-mode)"
        case ENOTSOCK: return "it is not a socket"
        case ENOTDIR: return "a part of the path is not a directory"
        case EAGAIN: return "the daemon's queue of new connections is full; try again"
        default: return text(errno)
        }
    }

    /// Why listening on `address` (such as `127.0.0.1:8765`) failed.
    public static func listening(on address: String, _ error: any Error) -> String {
        guard let errno = errnoCode(of: error) else { return "\(error)" }
        switch errno {
        case EADDRINUSE: return "\(address) is in use by another program"
        case EACCES, EPERM: return "this user may not listen on \(address) (permission denied)"
        default: return "cannot listen on \(address): \(text(errno))"
        }
    }

    /// The errno of an I/O failure, looking through the wrappers NIO puts around it.
    public static func errnoCode(of error: any Error) -> Int32? {
        if let io = error as? IOError { return io.errnoCode }
        if let failure = error as? NIOConnectionError {
            // Every address tried failed: the last attempt's reason is the one to show.
            return failure.connectionErrors.last.flatMap { errnoCode(of: $0.error) }
        }
        return nil
    }

    /// `strerror`'s sentence, lower-cased to sit inside one of ours.
    static func text(_ errno: Int32) -> String {
        guard let message = strerror(errno) else { return "error \(errno)" }
        let text = String(cString: message)
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}
