import Foundation
import HeraldCore
import NIOConcurrencyHelpers

/// Posts that arrived while the database was busy, waiting to be committed together: the group-commit queue both
/// stores share (docs/architecture.md, "The hot path").
///
/// Every post joins the queue; the store takes all that wait (up to its group size) and stores them in one
/// transaction, so in one write to the log. While it runs, new posts queue for the next group; under load groups
/// grow by themselves, and a lone post is committed at once, alone (on SQLite, a stream's post under load may first
/// wait out the store's commit window, a few milliseconds, for others to join it). A post is answered once its group
/// committed and its entry was handed on by the ``EventLog``: what a client is told is stored, is stored, and its
/// sender's stream has it first.
package final class GroupCommitQueue: Sendable {
    /// A post waiting for its group.
    package struct Post {
        package var draft: MessageDraft
        /// Called once with the post's outcome, on the thread that committed it or handed it on: it must not wait.
        package var answer: @Sendable (Result<PostOutcome, any Error>) -> Void
    }

    private struct State {
        var posts: [Post] = []
        /// Whether a committer is on its way to take what waits.
        var scheduled = false
        var statistics = GroupCommitStatistics()
    }

    private let state = NIOLockedValueBox(State())
    /// The most posts committed in one transaction.
    package let maxGroup: Int

    package init(maxGroup: Int = 256) {
        self.maxGroup = maxGroup
    }

    /// Queues `draft`; `schedule` is called when no committer is on its way. Returns the post's outcome.
    ///
    /// The wait does not answer cancellation (a post whose client went away is still committed with its group, and
    /// its answer dropped), and it ends because:
    /// - a post is queued and `scheduled` read in one step, so while it waits `scheduled` is true, and `scheduled`
    ///   is true only while a committer will call ``take()`` again (the one `schedule` started, or the one whose
    ///   `take` left posts behind: SQLite queues a job for them, PostgreSQL's committer loops; on SQLite the one
    ///   `schedule` started may be a timer on an event loop, at most the commit window away); a committer that
    ///   cannot run (the database takes no more work, or the timer's loop shut down first) fails them with
    ///   ``failAll(with:)``;
    /// - the committer ends every group it takes with ``finish(_:with:sink:committed:)``, which answers a failure
    ///   at once; each of its transactions is bounded (SQLite's runs on the database's thread or on the event loop
    ///   that asked for it, waiting for a lock at most its `busy_timeout`; PostgreSQL's uses are bounded by
    ///   ``BoundedPostgres``);
    /// - a stored post is answered once the log delivered its seq (``CommitSink/whenDelivered(_:_:)``): the log
    ///   delivers every committed seq unless a reservation below it stays open, and a reservation ends when its
    ///   transaction's caller stops waiting (``CommitSink/appending(_:)``), so it holds back only while a bounded
    ///   transaction runs; or while the log's consumers wait for the database to answer a read (they try again each
    ///   second: a post committed just before the database went away is answered once it is back).
    package func add(_ draft: MessageDraft, schedule: () -> Void) async throws -> PostOutcome {
        try await withCheckedThrowingContinuation { continuation in
            add(draft, schedule: schedule) { continuation.resume(with: $0) }
        }
    }

    /// Queues `draft`, as ``add(_:schedule:)`` does, and calls `answer` with its outcome where ``add(_:schedule:)``
    /// would resume: on the committer's thread, or the log's carrier's, which go on once it returns. No task waits.
    package func add(
        _ draft: MessageDraft, schedule: () -> Void, answer: @escaping @Sendable (Result<PostOutcome, any Error>) -> Void
    ) {
        let start = state.withLockedValue { state in
            state.posts.append(Post(draft: draft, answer: answer))
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if start { schedule() }
    }

    /// The next group (at most ``maxGroup`` posts), and whether more wait behind it; with none waiting, the queue
    /// counts as having no committer on its way.
    package func take() -> (group: [Post], more: Bool) {
        state.withLockedValue { state in
            let group = Array(state.posts.prefix(maxGroup))
            state.posts.removeFirst(group.count)
            state.scheduled = !state.posts.isEmpty
            return (group, state.scheduled)
        }
    }

    /// Fails every waiting post (the database takes no more work).
    package func failAll(with error: any Error) {
        let refused = state.withLockedValue { state in
            defer { state.posts = []; state.scheduled = false }
            return state.posts
        }
        for post in refused { post.answer(.failure(error)) }
    }

    /// How many transactions stored how many posts so far.
    package var statistics: GroupCommitStatistics { state.withLockedValue { $0.statistics } }

    /// How many posts wait for their group.
    package var waiting: Int { state.withLockedValue { $0.posts.count } }

    /// Ends a committed group: hands its new entries to `sink` (with their seqs, `committed`) and answers each post
    /// once its entry was handed on; failures at once.
    package func finish(
        _ group: [Post], with outcomes: [Result<PostOutcome, any Error>], sink: any CommitSink, committed: ClosedRange<Int64>?
    ) {
        var entries: [IncomingMessage] = []
        var waiters: [LogWaiter] = []
        var failures: [(Post, any Error)] = []
        var stored = 0
        for (post, outcome) in zip(group, outcomes) {
            switch outcome {
            case .success(let answer):
                stored += 1
                let message: Message
                switch answer {
                case .stored(let new):
                    message = new
                    entries.append(IncomingMessage(message: new, conversation: post.draft.conversation, sender: post.draft.sender))
                case .existing(let old):
                    message = old
                }
                let reply = post.answer
                waiters.append((message.seq ?? 0, { reply(.success(answer)) }))
            case .failure(let error):
                failures.append((post, error))
            }
        }
        if stored > 0 {
            state.withLockedValue {
                $0.statistics.transactions += 1
                $0.statistics.posts += stored
            }
        }
        entries.sort { ($0.message.seq ?? 0) < ($1.message.seq ?? 0) }
        if let committed {
            sink.committed(committed, entries: entries, waiters: waiters)
        } else {
            for waiter in waiters { sink.whenDelivered(waiter.seq, waiter.resume) }
        }
        for (post, error) in failures { post.answer(.failure(error)) }
    }

    /// Whether the posts of a group whose transaction failed with `error` are each tried again alone (so one bad
    /// post never fails the others), or all fail alike: a group of one, or a database that is away (trying each
    /// alone would only wait on it again). The policy both stores' committers follow.
    package static func retriesEachAlone(after error: any Error, groupOf count: Int) -> Bool {
        count > 1 && DatabaseFailure.of(error) != .unavailable
    }

    /// Each draft's outcome, given the messages its group found or stored by key (`new`: stored by this group): the
    /// draft that stored a message gets `.stored`, every other with its key `.existing`; a draft whose id another
    /// member's message in the conversation has gets ``StoreError/idTaken(_:)``, and one that found nothing (its
    /// sender is no member) ``StoreError/notAMember``.
    package static func outcomes(
        of drafts: [MessageDraft], messages: [MessageKey: (message: Message, new: Bool)]
    ) -> [Result<PostOutcome, any Error>] {
        var answered: Set<MessageKey> = []
        return drafts.map { draft -> Result<PostOutcome, any Error> in
            guard let (message, new) = messages[draft.key].map({ ($0.message, $0.new) }) else {
                return .failure(StoreError.notAMember)
            }
            guard message.senderID == draft.sender.id, message.isMessage else {
                return .failure(StoreError.idTaken(draft.id))
            }
            return new && answered.insert(draft.key).inserted ? .success(.stored(message)) : .success(.existing(message))
        }
    }
}

/// How well posts were grouped: how many transactions committed how many posts.
package struct GroupCommitStatistics: Hashable, Sendable {
    /// Transactions that stored posts.
    package var transactions = 0
    /// Posts they stored (new messages and ids seen before).
    package var posts = 0
}
