import Synchronization

/// A progress line for long work (`reel verify`, `export`, `import`, `bisect` over a large log),
/// redrawn in place on a terminal and silent everywhere else.
///
/// ```swift
/// let progress = ProgressBar.standardError(total: actions.count, label: "verify")
/// for action in actions {
///     try check(action)
///     progress.advance()
/// }
/// progress.finish()
/// ```
///
/// - Only for people: ``standardError(total:label:)`` draws only when standard error is a
///   terminal, so pipes, files, CI logs and tests see nothing at all.
/// - Cheap in a hot loop: ``advance(by:)`` is an atomic add and a compare. The clock is read
///   only every so many calls (about every 10 ms of work, from the rate so far), and the line is
///   formatted and written at most every ``redrawInterval``. Work that ends within the first
///   interval never draws, so quick commands do not flicker.
/// - In place: each redraw starts with `\r` and pads over the previous line; ``finish()`` erases
///   the line. Nothing redraws between calls: a loop that stalls shows the last figures.
/// - Safe to advance from several tasks at once.
///
/// Work measured by position rather than by count (bytes read, the seq reached, bisect's probes
/// against an estimate that changes) sets the figures with ``update(completed:total:)`` instead.
public final class ProgressBar: Sendable {
    private let label: String
    private let output: (any TextOutputSink)?
    private let now: @Sendable () -> Duration
    private let start: Duration

    private let completed = Atomic(0)
    /// The total, or -1 when unknown.
    private let totalStorage: Atomic<Int>
    /// The clock is read when `completed` reaches this: the counter half of the throttle.
    private let nextCheck = Atomic(0)
    private let display: Mutex<Display>

    private struct Display {
        var lastDraw: Duration
        /// Columns of the line on screen, to erase; 0 when none is shown.
        var shownWidth = 0
        var finished = false
    }

    /// The least time between two redraws (at most ten a second), and the time before the first.
    public static let redrawInterval: Duration = .milliseconds(100)

    /// A progress bar that writes to `output`, or to nothing.
    ///
    /// - Parameters:
    ///   - total: The number of items, or `nil` when unknown (then no bar, percentage or ETA).
    ///   - label: A word for the work, shown first, such as `"verify"`.
    ///   - output: Where to draw; `nil` for a bar that does nothing. Use a terminal only.
    ///   - now: Monotonic time since any fixed origin; tests pass a clock they move by hand.
    public init(total: Int?, label: String = "", output: (any TextOutputSink)?, now: (@Sendable () -> Duration)? = nil) {
        self.totalStorage = Atomic(total.map { max(0, $0) } ?? -1)
        self.label = label
        self.output = output
        let origin = ContinuousClock.now
        let clock = now ?? { ContinuousClock.now - origin }
        let start = clock()
        self.now = clock
        self.start = start
        self.display = Mutex(Display(lastDraw: start))
        if output == nil { nextCheck.store(.max, ordering: .relaxed) }
    }

    /// A progress bar on standard error when it is a terminal, otherwise one that does nothing.
    ///
    /// - Parameters:
    ///   - total: The number of items, or `nil` when unknown.
    ///   - label: A word for the work, such as `"verify"`.
    public static func standardError(total: Int?, label: String = "") -> ProgressBar {
        let stderr = FileDescriptorSink.standardError
        return ProgressBar(total: total, label: label, output: stderr.isTerminal ? stderr : nil)
    }

    /// The number of items the work has, when known.
    public var total: Int? {
        let total = totalStorage.load(ordering: .relaxed)
        return total < 0 ? nil : total
    }

    /// Whether anything will ever be drawn.
    public var isEnabled: Bool { output != nil }

    /// The number of items done so far.
    public var completedCount: Int { completed.load(ordering: .relaxed) }

    /// Counts items as done, and redraws if it is time to.
    ///
    /// - Parameter count: How many items were just done.
    public func advance(by count: Int = 1) {
        let done = completed.wrappingAdd(count, ordering: .relaxed).newValue
        // Silent bars and finished ones keep `nextCheck` at `.max`: they stop here.
        if done >= nextCheck.load(ordering: .relaxed) { check(done) }
    }

    /// Sets how much is done, and redraws if it is time to.
    ///
    /// - Parameter done: How many items are done in all (a position, such as bytes read).
    public func update(completed done: Int) {
        completed.store(done, ordering: .relaxed)
        if done >= nextCheck.load(ordering: .relaxed) { check(done) }
    }

    /// Sets how much is done and how much there is, and redraws if it is time to.
    ///
    /// - Parameters:
    ///   - done: How many items are done in all.
    ///   - total: The total now, such as a new estimate, or `nil` when unknown.
    public func update(completed done: Int, total: Int?) {
        totalStorage.store(total.map { max(0, $0) } ?? -1, ordering: .relaxed)
        update(completed: done)
    }

    /// Erases the line, and draws no more. Safe to call more than once.
    public func finish() {
        nextCheck.store(.max, ordering: .relaxed)
        display.withLock { display in
            clearLine(&display)
            display.finished = true
        }
    }

    /// Writes text somewhere else on the same terminal (a result on standard output, say)
    /// without mixing it into the bar: the line is erased first and redrawn at the next check.
    ///
    /// - Parameters:
    ///   - text: The text to write, usually whole lines.
    ///   - sink: Where the text goes.
    public func write(_ text: String, to sink: some TextOutputSink) {
        guard isEnabled else { return sink.write(text) }
        display.withLock { display in
            clearLine(&display)
            sink.write(text)
            if !display.finished {
                // Redraw at the next call rather than after a whole interval: the figures are current.
                display.lastDraw = now() - Self.redrawInterval
                nextCheck.store(0, ordering: .relaxed)
            }
        }
    }

    /// The slow path of `advance`: read the clock, maybe redraw, and set when to look again.
    private func check(_ done: Int) {
        // If another thread is drawing, this call has nothing to add.
        _ = display.withLockIfAvailable { display in
            guard !display.finished, let output else {
                // `finish()` may have raced with a store below; keep the fast path closed.
                nextCheck.store(.max, ordering: .relaxed)
                return
            }
            let time = now()
            let elapsed = time - start
            if time - display.lastDraw >= Self.redrawInterval {
                draw(ProgressLine(label: label, completed: done, total: self.total, elapsed: elapsed), to: output, &display)
                display.lastDraw = time
            }
            // About 10 ms of work between clock reads at the rate so far, within bounds.
            let perTenMilliseconds = ProgressLine.rate(completed: done, elapsed: elapsed) / 100
            let stride = perTenMilliseconds.isFinite ? max(1, min(1 << 16, Int(perTenMilliseconds))) : 1
            nextCheck.store(done &+ stride, ordering: .relaxed)
        }
    }

    private func draw(_ line: ProgressLine, to output: any TextOutputSink, _ display: inout Display) {
        let text = line.text
        let width = TerminalText.width(of: text)
        output.write("\r" + text + String(repeating: " ", count: max(0, display.shownWidth - width)))
        display.shownWidth = width
    }

    private func clearLine(_ display: inout Display) {
        guard let output, display.shownWidth > 0 else { return }
        output.write("\r" + String(repeating: " ", count: display.shownWidth) + "\r")
        display.shownWidth = 0
    }
}
