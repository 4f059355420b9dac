#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReelCore
import ReelStorage
import ReelStore
import ReelDaemon
import ReelTool
// How a test that `testgen` writes builds an app's reducers: an app's `main` names it.
@_exported import struct ReelTool.TestgenTarget

/// One call that gives an app built on Reel its daemon and every `reel` command, for its own
/// reducers — as server frameworks give apps `serve` and `migrate` subcommands.
///
/// ```swift
/// import ReelApp
///
/// @main
/// enum Inventory {
///     static func main() async {
///         await ReelApp.main(InventoryStore.definition)
///     }
/// }
/// ```
///
/// Then `inventory serve --data-dir /var/lib/inventory` runs the daemon with those reducers, and
/// `inventory get /items`, `inventory bisect '/stock < 0'`, `inventory verify --data-dir …` and
/// the rest work on its state — offline time travel folds with the app's reducers, not the
/// stock JSON one.
public enum ReelApp {
    /// Runs the command line of the process and exits with its status.
    ///
    /// - Parameters:
    ///   - definition: The app's initial state, middleware and reducers.
    ///   - programName: The name in help and messages (default: the executable's name).
    ///   - testgen: How a test that `testgen` writes builds these reducers: the module to import
    ///     and the Swift expression of the definition (without it, `testgen` asks for both).
    public static func main<State: StoreState>(
        _ definition: StoreDefinition<State>, programName: String? = nil, testgen: TestgenTarget? = nil
    ) async -> Never {
        let arguments = CommandLine.arguments
        let name = programName ?? URL(fileURLWithPath: arguments.first ?? "reel").lastPathComponent
        DataDirectory.guardAgainstDamagedFiles(program: name)
        exit(await run(definition, arguments: arguments, programName: name, environment: ProcessInfo.processInfo.environment, testgen: testgen))
    }

    /// Runs one command line and returns the exit status (for tests and embedding).
    public static func run<State: StoreState>(
        _ definition: StoreDefinition<State>, arguments: [String], programName: String, environment: [String: String],
        testgen: TestgenTarget? = nil
    ) async -> Int32 {
        var context = ToolContext(definition: definition, programName: programName, environment: environment)
        if let testgen { context.testgenTarget = testgen }
        context.serve = { arguments in
            await Daemon.run(definition, arguments: arguments, environment: environment)
        }
        return await ReelTool.run(arguments, context: context)
    }
}
