import ReelCore
import ReelJSON

/// The paged list seed: a list loaded page by page, with the network state part of the state, so
/// that every view (and the time-travel debugger) sees whether a load is running or has failed.
public enum PagedListApp {
    public struct State: StoreState {
        public var items: [Item] = []
        /// The page to load next; `nil` once the last page is loaded.
        public var nextPage: Int? = 1
        public var network: Network = .idle

        public init(items: [Item] = [], nextPage: Int? = 1, network: Network = .idle) {
            self.items = items
            self.nextPage = nextPage
            self.network = network
        }
    }

    public struct Item: Codable, Equatable, Sendable {
        public var id: String
        public var title: String
        public init(id: String, title: String) {
            self.id = id
            self.title = title
        }
    }

    public enum Network: Codable, Equatable, Sendable {
        case idle
        case loading(page: Int)
        case failed(message: String)
    }

    /// `list/requested {page?}`: a load of `page` (default: the first page, for a refresh) started.
    public struct Requested: ActionPayload {
        public static let actionType = "list/requested"
        public static let payloadSchema = JSONSchema.object(
            ["page": JSONSchema.described(JSONSchema.integer, "from 1; default 1, a refresh")],
            description: "A load of a page started."
        )
        public static let example: Requested? = Requested(page: 1)
        public var page: Int?
        public init(page: Int? = nil) { self.page = page }
    }

    /// `list/refreshed {items, nextPage?}`: the first page arrived; it replaces the list.
    public struct Refreshed: ActionPayload {
        public static let actionType = "list/refreshed"
        public static let payloadSchema = JSONSchema.object(
            ["items": JSONSchema.array(of: JSONSchema.object(["id": JSONSchema.string, "title": JSONSchema.string], required: ["id", "title"])), "nextPage": JSONSchema.integer], required: ["items"],
            description: "The first page arrived; it replaces the list."
        )
        public static let example: Refreshed? = Refreshed(items: [Item(id: "a1", title: "First")], nextPage: 2)
        public var items: [Item]
        public var nextPage: Int?
        public init(items: [Item], nextPage: Int?) {
            self.items = items
            self.nextPage = nextPage
        }
    }

    /// `list/loadedMore {items, nextPage?}`: a further page arrived; it is appended.
    public struct LoadedMore: ActionPayload {
        public static let actionType = "list/loadedMore"
        public static let payloadSchema = JSONSchema.object(
            ["items": JSONSchema.array(of: JSONSchema.object(["id": JSONSchema.string, "title": JSONSchema.string], required: ["id", "title"])), "nextPage": JSONSchema.integer], required: ["items"],
            description: "A further page arrived; it is appended."
        )
        public static let example: LoadedMore? = LoadedMore(items: [Item(id: "a2", title: "Second")], nextPage: nil)
        public var items: [Item]
        public var nextPage: Int?
        public init(items: [Item], nextPage: Int?) {
            self.items = items
            self.nextPage = nextPage
        }
    }

    /// `list/errorOccurred {message}`: the running load failed.
    public struct ErrorOccurred: ActionPayload {
        public static let actionType = "list/errorOccurred"
        public static let payloadSchema = JSONSchema.object(
            ["message": JSONSchema.string], required: ["message"], description: "The running load failed."
        )
        public static let example: ErrorOccurred? = ErrorOccurred(message: "the network is down")
        public var message: String
        public init(message: String) { self.message = message }
    }

    public static let definition = StoreDefinition(name: "paged-list", version: "1", initialState: State()) {
        On(Requested.self) { state, requested throws(ReducerError) in
            let page = requested.page ?? 1
            guard page >= 1 else { throw .rejected("pages start at 1, not \(page)") }
            state.network = .loading(page: page)
        }
        On(Refreshed.self) { state, refreshed throws(ReducerError) in
            state.items = refreshed.items
            state.nextPage = refreshed.nextPage
            state.network = .idle
        }
        On(LoadedMore.self) { state, more throws(ReducerError) in
            guard state.nextPage != nil else {
                throw .rejected("the last page is already loaded; refresh to start again")
            }
            state.items += more.items
            state.nextPage = more.nextPage
            state.network = .idle
        }
        On(ErrorOccurred.self) { state, error throws(ReducerError) in
            state.network = .failed(message: error.message)
        }
    }
}
