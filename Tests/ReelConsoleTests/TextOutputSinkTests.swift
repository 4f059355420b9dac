import Foundation
import Testing

@testable import ReelConsole

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pipe whose read end is drained after writing, for checking what a sink wrote to a descriptor.
struct TestPipe: ~Copyable {
    let readEnd: Int32
    let writeEnd: Int32

    init() {
        var descriptors: [Int32] = [0, 0]
        let result = pipe(&descriptors)
        precondition(result == 0, "pipe() failed")
        (readEnd, writeEnd) = (descriptors[0], descriptors[1])
    }

    /// Closes the write end and reads everything written.
    consuming func drain() -> String {
        close(writeEnd)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        close(readEnd)
        discard self
        return String(decoding: bytes, as: UTF8.self)
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

/// A pseudo-terminal's two ends; `nil` where the system has none to give.
///
/// Glibc's module leaves out `posix_openpt` and friends, so this speaks to `/dev/ptmx` directly.
func openPseudoTerminal() -> (primary: Int32, secondary: Int32)? {
    #if os(Linux)
    // From <asm-generic/ioctls.h>: _IOR('T', 0x30, unsigned int) and _IOW('T', 0x31, int).
    let getPTYNumber: UInt = 0x8004_5430
    let setPTYLock: UInt = 0x4004_5431
    let primary = open("/dev/ptmx", O_RDWR | O_NOCTTY)
    guard primary >= 0 else { return nil }
    var unlock: Int32 = 0
    var number: UInt32 = 0
    guard ioctl(primary, setPTYLock, &unlock) == 0, ioctl(primary, getPTYNumber, &number) == 0 else {
        close(primary)
        return nil
    }
    let secondary = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
    guard secondary >= 0 else {
        close(primary)
        return nil
    }
    return (primary, secondary)
    #else
    return nil
    #endif
}

@Suite struct TextOutputSinkTests {
    @Test func fileDescriptorSinkWritesEverythingInOrder() {
        let pipe = TestPipe()
        let sink = FileDescriptorSink(descriptor: pipe.writeEnd)
        sink.write("héllo ")
        sink.write("")
        sink.write("wörld\n")
        // More than a pipe buffer's worth would block without a reader; stay under it.
        let long = String(repeating: "0123456789", count: 3000)
        sink.write(long)
        #expect(pipe.drain() == "héllo wörld\n" + long)
    }

    @Test func aPipeIsNotATerminal() {
        let pipe = TestPipe()
        #expect(!FileDescriptorSink(descriptor: pipe.writeEnd).isTerminal)
        _ = pipe.drain()
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/ptmx"), "needs /dev/ptmx to open a pseudo-terminal"))
    func aPseudoTerminalIsATerminal() throws {
        let terminal = try #require(openPseudoTerminal(), "/dev/ptmx is there but no pseudo-terminal could be opened")
        defer {
            close(terminal.secondary)
            close(terminal.primary)
        }
        #expect(FileDescriptorSink(descriptor: terminal.secondary).isTerminal)
    }

    @Test func memorySinkKeepsAndTakesText() {
        let sink = MemorySink()
        sink.write("a")
        sink.write("b\n")
        #expect(sink.text == "ab\n")
        #expect(sink.takeText() == "ab\n")
        #expect(sink.text == "")
    }

    @Test func memorySinkTakesWritesFromManyTasks() async {
        let sink = MemorySink()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1000 { sink.write("x") }
                }
            }
        }
        #expect(sink.text.count == 8000)
    }
}
