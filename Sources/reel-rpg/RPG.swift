import ReelApp
import ReelExamples

/// `reel-rpg`: the RPG seed (a character, enemies, save data; middleware computes damage), as its own Reel store.
/// `reel-rpg serve` runs its daemon; every other command is `reel`'s, folding with these reducers.
@main
enum RPG {
    static func main() async {
        await ReelApp.main(RPGApp.definition)
    }
}
