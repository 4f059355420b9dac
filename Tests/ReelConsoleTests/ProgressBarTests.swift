import Synchronization
import Testing

@testable import ReelConsole

/// A clock that moves only when told to.
final class ManualClock: Sendable {
    private let time = Mutex(Duration.zero)

    var now: @Sendable () -> Duration {
        { [self] in time.withLock { $0 } }
    }

    func set(_ duration: Duration) {
        time.withLock { $0 = duration }
    }
}

@Suite struct ProgressBarTests {
    @Test func drawsAtMostEveryIntervalAndClearsWhenFinished() {
        let clock = ManualClock()
        let sink = MemorySink()
        let bar = ProgressBar(total: 1000, label: "verify", output: sink, now: clock.now)

        bar.advance(by: 10)
        clock.set(.milliseconds(50))
        bar.advance(by: 10)
        #expect(sink.takeText() == "", "nothing in the first interval")

        clock.set(.milliseconds(150))
        bar.advance(by: 130)
        #expect(sink.takeText() == "\rverify [===>                ]   150/1000   15%  1.0k/s  ETA 0:01")

        bar.advance(by: 5)
        clock.set(.milliseconds(200))
        bar.advance(by: 5)
        #expect(sink.takeText() == "", "50 ms after the last redraw")

        clock.set(.milliseconds(400))
        bar.advance(by: 840)
        let last = "verify [====================]  1000/1000  100%  2.5k/s  ETA 0:00"
        #expect(sink.takeText() == "\r" + last)
        #expect(bar.completedCount == 1000)

        bar.finish()
        #expect(sink.takeText() == "\r" + String(repeating: " ", count: last.count) + "\r")
        clock.set(.seconds(5))
        bar.advance()
        bar.finish()
        #expect(sink.takeText() == "", "finished bars stay quiet")
    }

    @Test func aShorterLinePadsOverTheLongerOne() {
        let clock = ManualClock()
        let sink = MemorySink()
        let bar = ProgressBar(total: nil, label: "export", output: sink, now: clock.now)
        clock.set(.milliseconds(100))
        bar.advance(by: 1000)
        #expect(sink.takeText() == "\rexport 1000  10.0k/s")
        // At 10,000 a second the clock is next read 100 calls later (10 ms of work).
        clock.set(.seconds(10))
        bar.advance(by: 99)
        #expect(sink.takeText() == "")
        bar.advance()
        #expect(sink.takeText() == "\rexport 1100  110/s  ")
    }

    @Test func quickWorkDrawsNothing() {
        let clock = ManualClock()
        let sink = MemorySink()
        let bar = ProgressBar(total: 3, output: sink, now: clock.now)
        for _ in 0..<3 { bar.advance() }
        clock.set(.milliseconds(99))
        bar.finish()
        #expect(sink.text == "")
    }

    @Test func theClockIsReadOnlyEverySoManyCalls() {
        let reads = Atomic(0)
        let clock = ManualClock()
        let now = clock.now
        let bar = ProgressBar(total: nil, output: MemorySink()) {
            reads.add(1, ordering: .relaxed)
            return now()
        }
        clock.set(.seconds(1))
        bar.advance(by: 100_000)  // the rate so far: 100,000 a second, so 1,000 calls per 10 ms
        let before = reads.load(ordering: .relaxed)
        for _ in 0..<999 { bar.advance() }
        #expect(reads.load(ordering: .relaxed) == before)
        bar.advance()
        #expect(reads.load(ordering: .relaxed) == before + 1)
    }

    @Test func textForElsewhereClearsTheLineFirst() {
        let clock = ManualClock()
        let bar = ProgressBar(total: 10, label: "bisect", output: MemorySink(), now: clock.now)
        let progress = MemorySink()
        let barWithSink = ProgressBar(total: 10, label: "bisect", output: progress, now: clock.now)
        _ = bar
        clock.set(.seconds(1))
        barWithSink.advance(by: 5)
        let line = "bisect [==========>         ]   5/10   50%  5.0/s  ETA 0:01"
        #expect(progress.takeText() == "\r" + line)

        let results = MemorySink()
        barWithSink.write("found: seq 5\n", to: results)
        #expect(results.text == "found: seq 5\n")
        #expect(progress.takeText() == "\r" + String(repeating: " ", count: line.count) + "\r")

        // Back at the next call, without waiting for a whole interval.
        barWithSink.advance()
        #expect(progress.takeText() == "\rbisect [============>       ]   6/10   60%  6.0/s  ETA 0:01")
    }

    @Test func positionsAndChangingTotals() {
        let clock = ManualClock()
        let sink = MemorySink()
        let bar = ProgressBar(total: nil, label: "bisect", output: sink, now: clock.now)
        #expect(bar.total == nil)
        clock.set(.seconds(2))
        bar.update(completed: 3, total: 20)
        #expect(bar.total == 20)
        #expect(bar.completedCount == 3)
        #expect(sink.takeText() == "\rbisect [===>                ]   3/20   15%  1.5/s  ETA 0:12")
        clock.set(.seconds(4))
        bar.update(completed: 10, total: 12)
        #expect(sink.takeText() == "\rbisect [================>   ]  10/12   83%  2.5/s  ETA 0:01")
        clock.set(.seconds(5))
        bar.update(completed: 11)
        #expect(bar.total == 12)
        let longer = "bisect [==================> ]  11/12   91%  2.2/s  ETA 0:01"
        #expect(sink.takeText() == "\r" + longer)
        clock.set(.seconds(6))
        bar.update(completed: 12, total: nil)
        #expect(bar.total == nil)
        let shorter = "bisect 12  2.0/s"
        #expect(sink.takeText() == "\r" + shorter + String(repeating: " ", count: longer.count - shorter.count))
    }

    @Test func aBarWithoutOutputDoesNothing() {
        let bar = ProgressBar(total: 10, output: nil)
        #expect(!bar.isEnabled)
        for _ in 0..<20 { bar.advance() }
        #expect(bar.completedCount == 20)
        let results = MemorySink()
        bar.write("passes through\n", to: results)
        bar.finish()
        #expect(results.text == "passes through\n")
    }

    @Test func countsEveryAdvanceFromManyTasks() async {
        let sink = MemorySink()
        let bar = ProgressBar(total: 80_000, label: "import", output: sink)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<10_000 { bar.advance() }
                }
            }
        }
        #expect(bar.completedCount == 80_000)
        bar.finish()
        // Whatever was drawn, the line ends erased.
        let text = sink.text
        #expect(text.isEmpty || text.hasSuffix(" \r"))
    }
}
