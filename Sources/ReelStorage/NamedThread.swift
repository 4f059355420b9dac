import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Thread {
    /// Starts a thread that runs `body` under `name`, as Foundation knows it and as the kernel
    /// shows it (`top -H`, `ps -L`, `perf`, `/proc/PID/task/*/comm`), so that `name` must be at
    /// most 15 bytes.
    ///
    /// Foundation on Linux hands a thread's name to the kernel only when the thread names itself:
    /// `thread.name = …` before `start()` is kept by Foundation alone, and a thread started from one
    /// of Dispatch's (the store opens on Swift's cooperative pool) shows that thread's name
    /// (`oot.default-qos`, the end of `com.apple.root.default-qos`).
    @discardableResult
    public static func startNamed(_ name: String, _ body: @escaping @Sendable () -> Void) -> Thread {
        precondition(name.utf8.count <= 15, "a thread's name shows its first 15 bytes only: \(name)")
        let thread = Thread {
            Thread.current.name = name  // (Foundation passes it to pthread_setname_np for this thread)
            body()
        }
        thread.name = name
        thread.start()
        return thread
    }
}
