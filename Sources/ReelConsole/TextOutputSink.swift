import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where text for people goes: standard output or error, or memory in tests.
///
/// Everything in this module that prints takes a sink rather than calling `print`, so a test can
/// capture exactly what a person would see.
public protocol TextOutputSink: Sendable {
    /// Writes `text` exactly as given; no newline is added.
    func write(_ text: String)
}

/// Writes to a file descriptor with one `write(2)` per call and no buffer of its own.
///
/// No buffer, so output on standard output and standard error reaches a terminal in the order it
/// was written (the progress bar on stderr gets out of the way of a result on stdout) and nothing
/// is lost if the process exits without flushing. Still cheap: each call hands the string's own
/// UTF-8 storage to one system call, so callers should write whole lines or blocks, not pieces.
///
/// Failures are dropped: console output has nowhere to report its own failure, and a closed pipe
/// normally ends the process with `SIGPIPE` before `write` could fail.
public struct FileDescriptorSink: TextOutputSink {
    /// The descriptor written to. It is not closed by this type.
    public let descriptor: Int32

    /// Writes to `descriptor`, which the caller keeps open.
    ///
    /// - Parameter descriptor: An open file descriptor.
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Standard output (descriptor 1): results.
    public static let standardOutput = FileDescriptorSink(descriptor: 1)
    /// Standard error (descriptor 2): progress, warnings and errors.
    public static let standardError = FileDescriptorSink(descriptor: 2)

    /// Whether the descriptor is a terminal (`isatty`), that is, whether a person is likely watching.
    public var isTerminal: Bool { isatty(descriptor) == 1 }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var remaining = UnsafeRawBufferPointer(buffer)
            while !remaining.isEmpty {
                let written = systemWrite(descriptor, remaining.baseAddress, remaining.count)
                if written >= 0 {
                    remaining = UnsafeRawBufferPointer(rebasing: remaining[written...])
                } else if errno == EAGAIN || errno == EWOULDBLOCK {
                    // Someone made the descriptor non-blocking (a shared terminal can be): wait
                    // until it takes more rather than spin or drop the rest.
                    var waiting = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&waiting, 1, -1)
                } else if errno != EINTR {
                    return
                }
            }
        }
    }
}

/// `write(2)`, which `FileDescriptorSink.write(_:)` would otherwise shadow.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, bytes, count)
    #elseif canImport(Musl)
    Musl.write(descriptor, bytes, count)
    #else
    Darwin.write(descriptor, bytes, count)
    #endif
}

/// Keeps everything written, for tests. Safe to write to from several threads.
public final class MemorySink: TextOutputSink {
    private let storage = Mutex("")

    /// An empty sink.
    public init() {}

    public func write(_ text: String) {
        storage.withLock { $0 += text }
    }

    /// Everything written so far.
    public var text: String {
        storage.withLock { $0 }
    }

    /// Returns everything written so far and forgets it, to check output step by step.
    @discardableResult
    public func takeText() -> String {
        storage.withLock { text in
            defer { text = "" }
            return text
        }
    }
}
