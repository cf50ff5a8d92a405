"""The store's single writer thread: sequence numbers, duplicates and group commit.

One connection owned by one thread drains every queued job into one transaction and reports
each group with one call (which the store turns into one event-loop wake-up); sequence numbers
and the duplicate index live on this thread only. It knows nothing of asyncio: each job carries
an opaque waiter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

import structlog

from switchboard.store.dedupe import DedupeIndex
from switchboard.store.group_thread import GroupThread, WriteLater, write_isolated
from switchboard.store.jobs import AppendJob
from switchboard.store.records import AppendResult, StoreClosedError, StoreError
from switchboard.store.sqlite.schema import UPSERT_CURSOR, UPSERT_DELIVERED, BatchInserter, BatchRow
from switchboard.store.wire import RawMessages, encode_body, pack_body

__all__ = ["AppendJob", "CallJob", "CursorJob", "GroupWriter", "Job"]

log = structlog.get_logger(__name__)

W = TypeVar("W")


@dataclass(slots=True, eq=False)
class CursorJob(Generic[W]):
    """One cursor update: ``agent`` acknowledged everything up to and including ``seq``, or
    (``delivered``) one of its reads handed out messages up to ``seq``."""

    agent: str
    seq: int
    waiter: W
    error: StoreError | None = None
    delivered: bool = False


@dataclass(slots=True, eq=False)
class CallJob(Generic[W]):
    """Maintenance run on the write connection between groups (retention's deletes): ``work``
    gets the connection, manages its own transaction, and its return value is ``result``."""

    work: Callable[[sqlite3.Connection], object]
    waiter: W
    writes: int = 0  # about how many bytes it writes to the WAL (for the checkpointer)
    result: object = None
    error: StoreError | None = None


Job: TypeAlias = AppendJob[W] | CursorJob[W] | CallJob[W]


def _locked_out(exc: BaseException) -> bool:
    """Whether SQLite refused a write because another connection holds the write lock."""
    return (
        isinstance(exc, sqlite3.OperationalError)
        and exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
    )


class GroupWriter(GroupThread["Job[W]"], Generic[W]):
    """Owns the write connection and the thread that commits queued jobs in groups.

    What it knows: one ``sqlite3`` connection owned by one thread, a queue of write jobs, the
    duplicate index (:class:`~switchboard.store.dedupe.DedupeIndex`), and how to commit jobs in
    groups. It knows nothing of asyncio: each job carries an opaque ``waiter`` that the writer never
    touches, and after every group the writer makes exactly one call to ``on_group_done`` (from its
    own thread) with the jobs it finished. The caller turns that one call into one event-loop
    wake-up that resolves every waiter.

    Theory of operation:

    * The thread blocks until a job arrives, then drains everything else already queued (up to
      ``max_group_rows`` messages) into one group. Each submitted batch becomes at most one row (see
      :mod:`~switchboard.store.sqlite.schema`); the rows of the whole group are written in one
      transaction, usually a single multi-row ``INSERT`` (see ``BatchInserter`` there); cursor
      updates of the group go into a second, small transaction. So N concurrent submitters pay for
      about one commit, not N.
    * Queue order is commit order: jobs are written in the order they were put, so a caller that
      puts jobs in arrival order gets sequence numbers in arrival order.
    * Sequence numbers: the writer alone knows ``latest``. The new messages of a group take ``latest
      + 1 ..`` in job order and message order; a batch row's ``first_seq`` is its first.
    * Duplicates: the index, in memory, says which keys are stored (or were claimed earlier in the
      group, or earlier in the same batch). A duplicate is answered with its stored seq and not
      written again. A batch with duplicates is re-encoded here with only its new messages (rare); a
      batch with no new message writes no row.
    * Failure: a group whose transaction fails is rolled back (``latest`` does not move, and the
      keys it claimed are forgotten again), then each of its jobs is retried alone so that one bad
      batch fails only its own waiter. A job that fails alone gets its own :class:`StoreError`.
      Nothing committed earlier is touched.
    * Stop: :meth:`GroupWriter.stop` queues a sentinel; every job queued before it is still
      committed and reported, then the thread closes the connection and ends.

    Args:
        conn: an open, migrated connection in autocommit mode; the writer closes it at the end.
        latest_seq: the highest seq already stored.
        on_group_done: called from the writer thread once per group with the finished jobs and
            the new highest seq. It must be cheap and thread-safe (schedule, don't work).
        index: the duplicate index over what is stored (rebuilt by the caller at open); a new,
            empty one with the default window when not given. The writer thread owns it.
        max_group_rows: stop draining the queue into one group past this many messages.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        latest_seq: int,
        on_group_done: Callable[[list[Job[W]], int], None],
        *,
        index: DedupeIndex | None = None,
        max_group_rows: int = 20_000,
    ) -> None:
        super().__init__(
            conn, name="switchboard-store-writer", label="store", max_group_weight=max_group_rows
        )
        self._inserter = BatchInserter()
        self._index = DedupeIndex() if index is None else index
        self._latest = latest_seq
        self._on_group_done = on_group_done

    @property
    def latest_seq(self) -> int:
        """The highest seq committed by this writer (read it only while the thread is idle,
        such as right after :meth:`run_here`)."""
        return self._latest

    def _weight(self, job: Job[W]) -> int:
        return len(job.keys) if isinstance(job, AppendJob) else 1

    def _process(self, group: list[Job[W]]) -> None:
        appends = [job for job in group if isinstance(job, AppendJob)]
        cursors = [job for job in group if isinstance(job, CursorJob)]
        if appends:
            write_isolated(appends, self._append, label="store")
        if cursors:
            write_isolated(cursors, self._set_cursors, label="store")
        for job in group:  # maintenance after the group's ingest, one call at a time
            if isinstance(job, CallJob):
                write_isolated([job], self._call, label="store")

    def _call(self, jobs: list[CallJob[W]]) -> None:
        for job in jobs:
            try:
                job.result = job.work(self._conn)
            except BaseException:
                self._rollback()
                raise

    def _append(self, jobs: list[AppendJob[W]]) -> None:
        index = self._index
        seq = self._latest + 1
        rows: list[BatchRow] = []
        answers: list[Sequence[AppendResult]] = []
        try:
            for job in jobs:
                results, fresh = index.claim(job.keys, seq)
                answers.append(results)
                if fresh is None:  # all new: the body encoded and packed by the caller stands
                    count, body = len(results), job.body
                elif fresh:  # some duplicates: keep only the new messages (rare)
                    messages = job.messages
                    if isinstance(messages, RawMessages):
                        body = messages.body(fresh)
                    else:
                        body = encode_body([messages[i] for i in fresh])
                    count = len(fresh)
                    job.body = body = pack_body(body)
                else:
                    continue
                rows.append((seq, count, job.server_id, job.received_at, body))
                seq += count
            if rows:
                self._inserter.insert(self._conn, rows)
        except BaseException as exc:
            index.rollback()
            if self._here and _locked_out(exc):
                raise WriteLater from exc
            raise
        index.commit()
        self._latest = seq - 1
        for job, results in zip(jobs, answers, strict=True):
            job.results = results

    def _set_cursors(self, jobs: list[CursorJob[W]]) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            acked = [(job.agent, job.seq) for job in jobs if not job.delivered]
            handed = [(job.agent, job.seq) for job in jobs if job.delivered]
            if acked:
                conn.executemany(UPSERT_CURSOR, acked)
            if handed:
                conn.executemany(UPSERT_DELIVERED, handed)
            conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:  # the original error is the one worth reporting
            log.warning("store_rollback_failed", error=repr(exc))

    def _notify(self, group: list[Job[W]]) -> None:
        try:
            self._on_group_done(group, self._latest)
        except Exception:
            log.exception("store_group_done_callback_failed")

    def _fail(self, jobs: list[Job[W]]) -> None:
        """Fail every unfinished job (only reached when the thread ends abnormally or jobs
        were queued after stop)."""
        pending = [
            job
            for job in jobs
            if job.error is None and not (isinstance(job, AppendJob) and job.results is not None)
        ]
        if not pending:
            return
        for job in pending:
            job.error = StoreClosedError("the store writer stopped before this write")
        self._notify(pending)
