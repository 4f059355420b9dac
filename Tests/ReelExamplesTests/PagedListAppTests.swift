import ReelCore
import ReelExamples
import ReelStore
import ReelTestSupport
import Testing

@Suite(.heavy) struct PagedListAppTests {
    typealias Item = PagedListApp.Item

    @Test func requestedRefreshedLoadedMoreAndErrors() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: PagedListApp.definition)
        try await store.dispatch(try Action(PagedListApp.Requested()))
        #expect(store.snapshot.state.network == .loading(page: 1))
        try await store.dispatch(try Action(PagedListApp.Refreshed(items: [Item(id: "1", title: "one")], nextPage: 2)))
        #expect(store.snapshot.state == PagedListApp.State(items: [Item(id: "1", title: "one")], nextPage: 2, network: .idle))
        try await store.dispatch(try Action(PagedListApp.Requested(page: 2)))
        try await store.dispatch(try Action(PagedListApp.ErrorOccurred(message: "offline")))
        #expect(store.snapshot.state.network == .failed(message: "offline"))
        try await store.dispatch(try Action(PagedListApp.Requested(page: 2)))
        try await store.dispatch(try Action(PagedListApp.LoadedMore(items: [Item(id: "2", title: "two")], nextPage: nil)))
        #expect(store.snapshot.state.items.map(\.id) == ["1", "2"])
        #expect(store.snapshot.state.nextPage == nil)
        #expect(store.snapshot.state.network == .idle)
        let refused = try Action(PagedListApp.LoadedMore(items: [], nextPage: nil))
        do {
            try await store.dispatch(refused)
            Issue.record("loaded more after the last page")
        } catch {
            #expect(error.code == .rejected)
        }
        // The network state is part of the state, so time travel shows the failure too.
        #expect(try store.timeline.state(at: 4).network == .failed(message: "offline"))
        await store.close()
    }
}
