#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Stops the process with `message` unless `condition` holds: the loud trap for misuse the type
/// system cannot rule out (wrong thread, nested write, writing while bytes are lent).
///
/// Not `precondition`: optimized builds drop its message, and a daemon built in release mode must
/// still say why it stopped. `fatalError` prints in every build except `-Ounchecked`.
@inline(__always)
func lmdbPrecondition(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if _slowPath(!condition()) { lmdbTrap(message(), file: file, line: line) }
}

/// The out-of-line failure path of ``lmdbPrecondition(_:_:file:line:)``.
@inline(never)
func lmdbTrap(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("ReelLMDB: " + message, file: file, line: line)
}

/// The calling OS thread, comparable across calls (a `pthread_t` as an integer).
@inline(__always)
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}
