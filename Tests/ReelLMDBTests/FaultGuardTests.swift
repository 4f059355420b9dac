import CReelFaultGuard
import Glibc
import ReelLMDB
import Testing

/// The guard that turns a memory fault inside a guarded read into an error.
struct FaultGuardTests {
    /// A thread that recovered from one fault must still be able to recover from the next: the
    /// guard jumps back without restoring the signal mask (a system call per read otherwise), so it
    /// must unblock the fault signals itself. Were they left blocked, the second fault would end
    /// the test process.
    @Test func aThreadRecoversFromOneFaultAfterAnother() throws {
        LMDBEnvironment.guardMapFaults(message: "test: the guarded region faulted outside a guarded read")
        let length = Int(sysconf(Int32(_SC_PAGESIZE)))
        let page = try #require(mmap(nil, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        #expect(page != MAP_FAILED)
        let id: UInt64 = 0x7E57_FA17
        reel_fault_guard_set_region(id, page, length)
        defer {
            reel_fault_guard_set_region(id, page, 0)
            munmap(page, length)
        }
        let address = page.assumingMemoryBound(to: UInt8.self)
        var value: UInt8 = 0
        for _ in 0..<3 {
            #expect(reel_guarded_read_byte(address, &value) == REEL_LMDB_FAULTED)
        }

        // Readable memory reads as usual through the same guard.
        var readable: UInt8 = 42
        #expect(withUnsafePointer(to: &readable) { reel_guarded_read_byte($0, &value) } == 0)
        #expect(value == 42)
    }
}
