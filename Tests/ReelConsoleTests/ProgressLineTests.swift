import Testing

@testable import ReelConsole

@Suite struct ProgressLineTests {
    @Test func withATotal() {
        let line = ProgressLine(label: "verify", completed: 4520, total: 10000, elapsed: .seconds(4))
        #expect(line.text == "verify [=========>          ]   4520/10000   45%  1.1k/s  ETA 0:05")
    }

    @Test func withoutATotalOrALabel() {
        #expect(ProgressLine(label: "", completed: 12, total: nil, elapsed: .seconds(4)).text == "12  3.0/s")
    }

    @Test func atTheEdges() {
        #expect(ProgressLine(label: "", completed: 0, total: 5, elapsed: .seconds(1)).text == "[>                   ]  0/5    0%  0.0/s  ETA --:--")
        #expect(ProgressLine(label: "", completed: 0, total: 0, elapsed: .seconds(1)).text == "[====================]  0/0  100%  0.0/s  ETA 0:00")
        #expect(ProgressLine(label: "", completed: 7, total: 5, elapsed: .seconds(1)).text == "[====================]  7/5  100%  7.0/s  ETA 0:00")
    }

    @Test func labelsAreCutAndEscaped() {
        let line = ProgressLine(label: "a\nvery long label for a progress bar", completed: 1, total: nil, elapsed: .seconds(1))
        #expect(line.text == #"a\nvery long label for…"# + " 1  1.0/s")
    }

    @Test(arguments: [
        (0.0, "0.0"), (7.54, "7.5"), (10, "10"), (950.4, "950"), (999.4, "999"), (999.5, "1.0k"),
        (12_345, "12.3k"), (999_960, "1.0M"), (4e6, "4.0M"), (2.5e9, "2.5G"), (.infinity, "0"),
    ])
    func rates(rate: Double, text: String) {
        #expect(ProgressLine.formatRate(rate) == text)
    }

    @Test(arguments: [
        (0, 1.0, "0:00"), (10, 0, "--:--"), (59, 1, "0:59"), (592, 10, "1:00"), (3600, 1, "1:00:00"),
        (3725, 1, "1:02:05"), (1_000_000, 1, "--:--"),
    ])
    func etas(remaining: Int, rate: Double, text: String) {
        #expect(ProgressLine.eta(remaining: remaining, rate: rate) == text)
    }
}
