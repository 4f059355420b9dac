import ReelApp
import ReelExamples

/// `reel-todos`: the to-do list seed, as its own Reel store.
/// `reel-todos serve` runs its daemon; every other command is `reel`'s, folding with these reducers.
@main
enum Todos {
    static func main() async {
        await ReelApp.main(TodoApp.definition, testgen: TestgenTarget(module: "ReelExamples", definition: "TodoApp.definition"))
    }
}
