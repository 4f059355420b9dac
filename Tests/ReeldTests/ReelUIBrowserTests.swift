import Foundation
import ReelTestSupport
import Testing

/// `reel ui` in Chromium, through Selenium and chromium-driver (Tools/bootstrap --test installs them):
/// Browser/ui_browser_test.py runs a real reeld and `reel ui`, live and offline, and checks what
/// the page shows against the `reel` commands (state at a seq, an action's diff, what-if, bisect,
/// find all's bands on the slider and its list against `reel find`, a broken condition, a dispatch
/// from another client in the live log, the token, no console errors), a branch picked and
/// compared with the main history, a bundle's page starting at its first state; then `reel-rpg`'s
/// page (namespaced types, actions of another day) at 1024 and 1400 px wide, measured in the
/// browser: no header or type cut, the selected action's changes on screen without scrolling and
/// shown old → new as `reel-rpg show` prints them, a date on the times of another day; then a
/// cart's page: the log filtered by a node of the state tree (its "changes" button, by mouse and
/// by keyboard, with the type filter too, and the chip that removes it) against `reel log
/// --changed`, and the blame beside each value against `reel blame --at` as the page travels, a
/// click on it travelling to that action, inside the tree at 1024 and 1400 px. It writes
/// screenshots to `$REEL_UI_SCREENSHOTS` (default `.build/ui-screenshots`); the ones in
/// docs/TIME-TRAVEL.md come from `REEL_UI_SCREENSHOTS=docs/images swift test --filter ReelUIBrowserTests`.
@Suite(.serialized, .timeLimit(.minutes(3)), .heavy(long: true)) struct ReelUIBrowserTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func thePageShowsWhatReelSays() async throws {
        let binaries = try PackageExecutable.url("reel").deletingLastPathComponent().path
        let script = Self.package.appendingPathComponent("Tests/ReeldTests/Browser/ui_browser_test.py").path
        let screenshots = ProcessInfo.processInfo.environment["REEL_UI_SCREENSHOTS"]
            ?? Self.package.appendingPathComponent(".build/ui-screenshots").path
        let result = try await runCommand(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", script, "--bin", binaries, "--screenshots", screenshots]
        )
        #expect(result.status == 0, "\(result.output)\n\(result.errors)")
        #expect(result.output.contains("all browser checks passed"), "\(result.output)\n\(result.errors)")
    }
}
