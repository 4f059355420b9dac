import ReelCore
import ReelJSON
import ReelStorage

/// What one commit changed in the state, by JSON Pointer, as the writer recorded it for the change
/// index: for whoever keeps the values at some pointers up to date after each commit (the server's
/// value and patch subscriptions), so that it reads again only those the commit may have changed
/// rather than every one it keeps.
///
/// Handed over as the writer recorded it; the pointers are made by ``changedPointers()``, on the
/// caller's thread, not the writer's.
public struct CommitChanges: Sendable {
    private let postings: ChangePostings

    /// The changes of exactly `envelopes`, or `nil` when `postings` do not cover them one by one.
    init?(_ postings: ChangePostings, of envelopes: [ActionEnvelope]) {
        guard postings.actionCount == envelopes.count, postings.first == envelopes.first?.seq,
            postings.last == envelopes.last?.seq
        else { return nil }
        self.postings = postings
    }

    /// The pointers whose value the commit changed, each once, every ancestor included; `nil` when
    /// it left a change unfollowed below some pointer, so that any pointer there may have changed
    /// (compare every value kept with the state then). A pointer not listed has its value of
    /// before the commit.
    public func changedPointers() -> [JSONPointer]? {
        postings.changedPointers()
    }
}
