import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension Thread {
    /// How a thread of Reel's own competes for the cores.
    public enum Priority: Sendable {
        /// As the threads that answer requests.
        case normal
        /// Work nobody waits for (a checkpoint's encoding): the kernel gives the cores to every
        /// normal thread that wants one first, and this thread what they leave, or a small share
        /// while they want all of it (``backgroundNice``).
        case background
    }

    /// The nice value of a ``Priority/background`` thread: at 10, a thread weighs about a tenth of
    /// a normal one when both want the same core (the kernel's CFS weights), so that it still
    /// progresses under a load that keeps every core busy.
    public static let backgroundNice: Int32 = 10

    /// Starts a thread that runs `body` under `name`, as Foundation knows it and as the kernel
    /// shows it (`top -H`, `ps -L`, `perf`, `/proc/PID/task/*/comm`), so that `name` must be at
    /// most 15 bytes. Threads it starts take its priority.
    ///
    /// Foundation on Linux hands a thread's name to the kernel only when the thread names itself:
    /// `thread.name = …` before `start()` is kept by Foundation alone, and a thread started from one
    /// of Dispatch's (the store opens on Swift's cooperative pool) shows that thread's name
    /// (`oot.default-qos`, the end of `com.apple.root.default-qos`).
    @discardableResult
    public static func startNamed(
        _ name: String, priority: Priority = .normal, _ body: @escaping @Sendable () -> Void
    ) -> Thread {
        precondition(name.utf8.count <= 15, "a thread's name shows its first 15 bytes only: \(name)")
        let thread = Thread {
            Thread.current.name = name  // (Foundation passes it to pthread_setname_np for this thread)
            if priority == .background { lowerOwnPriority() }
            body()
        }
        thread.name = name
        thread.start()
        return thread
    }

    /// The calling thread's nice value. Linux keeps one per thread (`PRIO_PROCESS` with 0 names
    /// the calling thread, not its process), and threads it starts inherit it.
    public static var currentNice: Int32 {
        #if os(Linux)
        return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #else
        return getpriority(PRIO_PROCESS, 0)
        #endif
    }

    /// Raises the calling thread's nice value to ``backgroundNice`` (never lowers it: an
    /// unprivileged process cannot take it back, so it is done only on threads that end with
    /// their work). A failure leaves the thread at its priority: slower answers while it runs, not
    /// a fault.
    private static func lowerOwnPriority() {
        #if os(Linux)
        guard currentNice < backgroundNice else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, backgroundNice)
        #endif
    }
}
