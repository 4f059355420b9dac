import ReelApp
import ReelExamples

/// `reel-paged-list`: the paged list seed (refresh, load more, network state), as its own Reel store.
/// `reel-paged-list serve` runs its daemon; every other command is `reel`'s, folding with these reducers.
@main
enum PagedList {
    static func main() async {
        await ReelApp.main(PagedListApp.definition, testgen: TestgenTarget(module: "ReelExamples", definition: "PagedListApp.definition"))
    }
}
