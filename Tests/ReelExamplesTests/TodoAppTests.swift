import ReelCore
import ReelExamples
import ReelStore
import ReelTestSupport
import Testing

@Suite(.heavy) struct TodoAppTests {
    typealias Todo = TodoApp.Todo

    @Test func addOneAndAddMany() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: TodoApp.definition)
        try await store.dispatch(try Action(TodoApp.Add(title: "milk")))
        try await store.dispatch(try Action(TodoApp.AddMany(titles: ["eggs", "bread"])))
        #expect(store.snapshot.state.todos == [
            Todo(id: 1, title: "milk"), Todo(id: 2, title: "eggs"), Todo(id: 3, title: "bread"),
        ])
        await store.close()
    }

    @Test func aBlankTitleRefusesTheWholeAddMany() async throws {
        let dir = try TemporaryDirectory()
        let store = try Store(path: dir.path, definition: TodoApp.definition)
        try await store.dispatch(try Action(TodoApp.Add(title: "milk")))
        let refused = try Action(TodoApp.AddMany(titles: ["eggs", "  "]))
        do {
            try await store.dispatch(refused)
            Issue.record("a blank title was accepted")
        } catch {
            #expect(error.code == .rejected)
        }
        #expect(store.snapshot.seq == 1)
        #expect(store.snapshot.state == TodoApp.State(todos: [Todo(id: 1, title: "milk")], nextID: 2))
        await store.close()
    }

    @Test func stateSurvivesAReopenAndTimeTravels() async throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try Store(path: dir.path, definition: TodoApp.definition)
            for title in ["a", "b", "c"] { try await store.dispatch(try Action(TodoApp.Add(title: title))) }
            await store.close()
        }
        let store = try Store(path: dir.path, definition: TodoApp.definition)
        #expect(store.snapshot.state.todos.map(\.title) == ["a", "b", "c"])
        #expect(try store.timeline.state(at: 1).todos.map(\.title) == ["a"])
        #expect(try store.timeline.value(at: 2, path: .init("/todos/1/title")) == "b")
        await store.close()
    }
}
