import Foundation
import ReelApp
import ReelExamples

/// `reel-rpg`: the RPG seed (a character, enemies, save data; middleware computes damage), as its own Reel store.
/// `reel-rpg serve` runs its daemon; every other command is `reel`'s, folding with these reducers.
@main
enum RPG {
    static func main() async {
        // REEL_RPG_RULES picks another version of the game's rules (RPGApp.definition(rules:)).
        let rules = ProcessInfo.processInfo.environment["REEL_RPG_RULES"].flatMap(Int.init) ?? 1
        await ReelApp.main(
            RPGApp.definition(rules: rules),
            testgen: TestgenTarget(module: "ReelExamples", definition: "RPGApp.definition(rules: \(rules))")
        )
    }
}
