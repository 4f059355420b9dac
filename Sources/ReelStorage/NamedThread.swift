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
    /// The thread names itself, with `pthread_setname_np` (``nameCallingThread(_:)``): Foundation
    /// on Linux passes a `Thread`'s `name` to the kernel only once `start()` has stored the thread
    /// it made, so that a thread that ran before its starter got there (a busy machine) kept the
    /// name it inherited, that of the thread that started it (`oot.default-qos`, the end of
    /// Dispatch's `com.apple.root.default-qos`, for the store opened on Swift's cooperative pool);
    /// and Foundation's getter reads the calling thread's name, whichever `Thread` it is asked of.
    @discardableResult
    public static func startNamed(
        _ name: String, priority: Priority = .normal, _ body: @escaping @Sendable () -> Void
    ) -> Thread {
        precondition(name.utf8.count <= 15, "a thread's name shows its first 15 bytes only: \(name)")
        let thread = Thread {
            nameCallingThread(name)
            if priority == .background { lowerOwnPriority() }
            body()
        }
        thread.start()
        return thread
    }

    /// Gives the calling thread `name` in the kernel. glibc's `pthread_setname_np` is not in
    /// Swift's Glibc module (it is a GNU extension), so it is looked up once by name.
    private static func nameCallingThread(_ name: String) {
        #if os(Linux)
        _ = setName?(pthread_self(), name)
        #endif
    }

    #if os(Linux)
    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    private static let setName: SetName? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "pthread_setname_np") else { return nil }
        return unsafeBitCast(symbol, to: SetName.self)
    }()
    #endif

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
