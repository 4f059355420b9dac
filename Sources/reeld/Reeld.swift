#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReelDaemon
import ReelStorage
import ReelStore

/// `reeld`: the Reel daemon with the stock reducer (the state is one JSON document changed by
/// mutations). See ``Daemon/run(_:arguments:environment:)`` and `reeld --help`.
@main
enum Reeld {
    static func main() async {
        DataDirectory.guardAgainstDamagedFiles(program: "reeld")
        exit(await Daemon.run(.stock, arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment))
    }
}
