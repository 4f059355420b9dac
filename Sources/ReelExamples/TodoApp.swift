import ReelCore
import ReelJSON

/// The todo list seed: add one todo, add many at once.
public enum TodoApp {
    public struct State: StoreState {
        public var todos: [Todo] = []
        /// Ids come from the state, not from a random source, so replay gives the same ids.
        public var nextID: Int = 1

        public init(todos: [Todo] = [], nextID: Int = 1) {
            self.todos = todos
            self.nextID = nextID
        }
    }

    public struct Todo: Codable, Equatable, Sendable {
        public var id: Int
        public var title: String
        public var done: Bool

        public init(id: Int, title: String, done: Bool = false) {
            self.id = id
            self.title = title
            self.done = done
        }
    }

    /// `todos/add {title}`
    public struct Add: ActionPayload {
        public static let actionType = "todos/add"
        public static let payloadSchema = JSONSchema.object(
            ["title": JSONSchema.string], required: ["title"], description: "Adds a todo; the title must not be blank."
        )
        public static let example: Add? = Add(title: "Water the plants")
        public var title: String
        public init(title: String) { self.title = title }
    }

    /// `todos/addMany {titles}`: all or none (one empty title refuses the whole action).
    public struct AddMany: ActionPayload {
        public static let actionType = "todos/addMany"
        public static let payloadSchema = JSONSchema.object(
            ["titles": JSONSchema.array(of: JSONSchema.string)], required: ["titles"],
            description: "Adds several todos, all or none: one blank title refuses the whole action."
        )
        public static let example: AddMany? = AddMany(titles: ["Buy milk", "Call home"])
        public var titles: [String]
        public init(titles: [String]) { self.titles = titles }
    }

    public static let definition = StoreDefinition(name: "todos", version: "1", initialState: State()) {
        On(Add.self) { state, add throws(ReducerError) in
            try state.add(title: add.title)
        }
        On(AddMany.self) { state, addMany throws(ReducerError) in
            // Validate everything before changing anything: a refused action leaves the state as it was.
            for title in addMany.titles { try validate(title) }
            for title in addMany.titles { try state.add(title: title) }
        }
    }

    static func validate(_ title: String) throws(ReducerError) {
        guard !title.allSatisfy(\.isWhitespace) else {
            throw .rejected("a todo needs a title that is not blank")
        }
    }
}

extension TodoApp.State {
    fileprivate mutating func add(title: String) throws(ReducerError) {
        try TodoApp.validate(title)
        todos.append(TodoApp.Todo(id: nextID, title: title))
        nextID += 1
    }
}
