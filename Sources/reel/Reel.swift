#if canImport(Glibc)
import Glibc
#endif
import ReelStorage
import ReelStore
import ReelTool

/// `reel`: the client and time-travel tool for the stock daemon (`reeld`), whose state is one
/// JSON document. See `reel --help` and docs/TIME-TRAVEL.md.
@main
enum Reel {
    static func main() async {
        DataDirectory.guardAgainstDamagedFiles(program: "reel")
        exit(await ReelTool.run(CommandLine.arguments, context: ToolContext(definition: .stock)))
    }
}
