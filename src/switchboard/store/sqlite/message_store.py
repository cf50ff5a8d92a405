"""The SQLite message store as the event loop sees it: :class:`MessageStore`.

Futures for submitted batches, waking inbox readers and head watchers, reads on a worker
thread, over the on-disk format (:mod:`.schema`), the body codec (:mod:`switchboard.store.wire`),
the writer thread (:mod:`.writer`) and the checkpoint thread. A lone batch is committed on the
event loop's thread, a burst as one transaction at the end of the loop's turn.

What it deliberately does not know: MCPL validity, channels, agents or the host.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Final, Self, TypeVar, cast

import anyio
import anyio.to_thread
import structlog

from switchboard.store.dedupe import DEFAULT_WINDOW, DedupeIndex
from switchboard.store.records import (
    AppendResult,
    IncomingRecord,
    StorageUnavailableError,
    StoreClosedError,
    StoredMessage,
    StoreError,
)
from switchboard.store.sqlite.checkpoint import Checkpointer
from switchboard.store.sqlite.numbered import highest_numbers
from switchboard.store.sqlite.schema import (
    Synchronous,
    count_messages,
    load_state,
    open_checkpointer,
    open_reader,
    open_writer,
    read_after,
    read_slices_after,
    recent_keys,
)
from switchboard.store.sqlite.writer import AppendJob, CallJob, CursorJob, GroupWriter, Job
from switchboard.store.wire import (
    Key,
    RawMessages,
    StoredSlice,
    WireMessage,
    encode_body,
    keys_of,
    pack_body,
    runs_by_server,
)

__all__ = ["MessageStore"]

#: Batches held for one commit at the end of a turn of the event loop; one more commits them
#: at once (see ``MessageStore._queue_append``).
_MAX_HELD: Final = 64

log = structlog.get_logger(__name__)

_Waiter = asyncio.Future[Any]
T = TypeVar("T")


class MessageStore:
    """Durable inboxes in one SQLite file (WAL), written by one thread with group commit.

    What it knows: the asyncio event loop (the application runs anyio on its asyncio backend, and
    this class needs it), futures for submitted batches, waking inbox readers, and dispatching reads
    to a worker thread. It ties together the on-disk format
    (:mod:`switchboard.store.sqlite.schema`), the wire codec (:mod:`switchboard.store.wire`), the
    writer thread (:mod:`switchboard.store.sqlite.writer`) with its duplicate index, and the
    checkpoint thread.

    Threads: the event loop thread runs every public method; batches are encoded there. One writer
    thread owns the write connection. Reads run on anyio worker threads, one at a time, over a
    separate read-only connection (WAL lets them proceed while the writer commits). A checkpoint
    thread copies the WAL into the database beside the writer. After each group commit the writer
    makes one ``loop.call_soon_threadsafe`` call; that one callback resolves every future of the
    group, updates ``latest_seq`` and the cursor cache, and wakes :meth:`MessageStore.wait_for_new`.

    Visibility: a message is visible to :meth:`MessageStore.read` once its commit has been reported
    on the event loop (``latest_seq`` raised), never earlier. The read-only connection sees a commit
    the moment SQLite makes it, which can be before the callback runs, so every read is bounded by
    the ``latest_seq`` of the moment it was called. Everything a read returns is therefore at or
    below ``latest_seq``, and a cursor set from it is always in range.

    Cursors: per agent, the acknowledged position (:meth:`MessageStore.set_cursor`) and the
    delivered mark (:meth:`MessageStore.set_delivered`, the highest seq a read handed out), both
    durable and served from memory.

    Open it with :meth:`open` and close it with :meth:`aclose`, or use it as an async context
    manager: ``async with await MessageStore.open(path) as store: ...``.

    Durability: a batch's awaitable completes after its transaction committed. With
    ``synchronous="normal"`` (the default) committed data is in the WAL file and survives the
    process being killed (SIGKILL, crash, OOM); the most recent commits can be lost only if the
    machine loses power or the OS crashes. ``synchronous="full"`` syncs the WAL on every commit
    and survives power loss too, at a cost in throughput.

    Duplicates: a message whose ``(server_id, channelId, messageId)`` is among the
    ``dedupe_window`` most recently stored messages (200,000 by default) is not stored again;
    its answer is ``duplicate=True`` with the seq of the stored copy. The window is kept in
    memory by the writer and rebuilt from the newest batches at open. A message whose stored
    copy is older than the window is stored again under a new seq: a retry that late is not a
    retry. Memory grows with the window (a few hundred bytes a message).

    The store must be used from the event loop thread it was opened on (asyncio backend).
    Cancelling a caller that awaits a write does not cancel the write: it may still commit.
    The writer thread is a daemon: a process that exits without :meth:`aclose` loses only
    batches that were submitted but not yet committed, i.e. never acknowledged.
    """

    def __init__(
        self,
        *,
        writer_conn: sqlite3.Connection,
        reader_conn: sqlite3.Connection,
        checkpointer: Checkpointer,
        latest_seq: int,
        cursors: dict[str, int],
        index: DedupeIndex,
        delivered: dict[str, int] | None = None,
        loop: asyncio.AbstractEventLoop,
        commit_here: bool = False,
    ) -> None:
        """Wrap already-open connections; use :meth:`open` instead of calling this."""
        self._loop = loop
        self._commit_here = commit_here
        # Batches held to be committed together as this turn of the loop ends, and whether a
        # batch was committed at once in this turn (see _queue_append).
        self._held: list[AppendJob[_Waiter]] | None = None
        self._turn_busy = False
        self._latest = latest_seq
        self._dedupe_window = index.window
        self._cursors = cursors
        self._delivered = {} if delivered is None else delivered
        self._reader = reader_conn
        self._checkpointer = checkpointer
        self._read_limiter = anyio.CapacityLimiter(1)
        self._new: asyncio.Event | None = None  # created only while someone waits
        self._waiters = 0
        #: Reads shared by callers asking for the same page at once (see :meth:`read`).
        self._shared_reads: dict[object, asyncio.Future[list[Any]]] = {}
        self._closed = False
        self._storage_problem: str | None = None
        self._storage_listeners: list[Callable[[str | None], None]] = []
        self._head_listeners: list[Callable[[int], None]] = []
        self._writer: GroupWriter[_Waiter] = GroupWriter(
            writer_conn, latest_seq, self._group_done_from_thread, index=index
        )
        self._checkpointer.start()
        self._writer.start()

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "normal",
        dedupe_window: int = DEFAULT_WINDOW,
    ) -> MessageStore:
        """Open (creating or upgrading) the store at ``path`` and start its writer thread.

        Reopening a file after a clean close or after the process was killed restores every
        committed message and cursor, ``latest_seq``, and the duplicate index (rebuilt from the
        newest batches covering ``dedupe_window`` messages).

        Args:
            path: the database file (its ``-wal`` and ``-shm`` companions live beside it).
            synchronous: ``"normal"`` survives a process crash; ``"full"`` also survives
                power loss. See the class docstring.
            dedupe_window: how many of the most recently stored messages are recognised when
                they come again. See the class docstring.

        Raises:
            ValueError: ``dedupe_window`` is negative.
            StoreError: the file cannot be opened or has a newer schema.
        """
        if dedupe_window < 0:
            raise ValueError(f"dedupe_window must be 0 or more, not {dedupe_window}")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError as exc:
            raise StoreError("MessageStore needs anyio's asyncio backend") from exc
        writer_conn = await anyio.to_thread.run_sync(open_writer, path, synchronous)
        others: list[sqlite3.Connection] = []
        try:
            latest, cursors, delivered, index = await anyio.to_thread.run_sync(
                _load, writer_conn, dedupe_window
            )
            others.append(await anyio.to_thread.run_sync(open_reader, path))
            others.append(await anyio.to_thread.run_sync(open_checkpointer, path, synchronous))
        except BaseException as exc:
            for conn in (writer_conn, *others):
                conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot load message store {os.fspath(path)!r}") from exc
            raise
        reader_conn, checkpoint_conn = others
        log.debug(
            "store_opened",
            path=os.fspath(path),
            latest_seq=latest,
            cursors=len(cursors),
            remembered=len(index),
        )
        return cls(
            writer_conn=writer_conn,
            reader_conn=reader_conn,
            checkpointer=Checkpointer(checkpoint_conn),
            latest_seq=latest,
            cursors=cursors,
            index=index,
            delivered=delivered,
            loop=loop,
            # A commit without a sync of the WAL takes about 100 µs: made on the event loop
            # when the writer is idle (see _queue_append). One that syncs could take a disk's
            # flush time, so it always goes to the writer thread.
            commit_here=synchronous == "normal",
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def write_backlog(self) -> int:
        """Write jobs queued for the writer thread and not yet taken: the store's lag, read in
        O(1) for a status view (0 when the writer keeps up); batches held for this turn's
        commit count too."""
        held = self._held
        return self._writer.backlog() + (len(held) if held is not None else 0)

    @property
    def closed(self) -> bool:
        """Whether the store was closed (or its writer stopped taking jobs)."""
        return self._closed or self._writer.stopped

    @property
    def latest_seq(self) -> int:
        """The highest committed seq (0 when empty); updated when a commit is reported."""
        return self._latest

    @property
    def dedupe_window(self) -> int:
        """How many of the most recently stored messages are recognised when they come again."""
        return self._dedupe_window

    def submit_wire(
        self, server_id: str, messages: list[WireMessage], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of wire-form messages now and return an awaitable for its commit.

        The fast path: the batch is encoded here with one ``orjson.dumps`` and becomes one row.
        Synchronous, so callers keep arrival order without awaiting: batches commit in the
        order of ``submit_wire``/``submit`` calls, and a batch's new messages take consecutive
        seqs in order. The awaitable completes with one :class:`AppendResult` per message, in
        order, once the batch is committed, or raises :class:`StoreError` if it was not.

        Args:
            server_id: the connector the messages came from.
            messages: ``channels/incoming`` messages in MCPL wire form, already validated by
                the caller (``channelId``, ``messageId``, ``author{id,name}``, ``timestamp``,
                ``content``, optional ``threadId``/``metadata``/``tags``); members the store
                does not know are kept as given. The store holds them until the commit: do not
                change them meanwhile.
            received_at: unix seconds at which the host accepted the batch; the store reads
                the clock only when this is None.

        Raises:
            StoreError: (at once) a message cannot be encoded as JSON or has no key; nothing
                of the batch is queued.
            StoreClosedError: (at once) the store is closed.
        """
        if self._closed or self._writer.stopped:
            raise StoreClosedError("the message store is closed")
        waiter: asyncio.Future[Sequence[AppendResult]] = self._loop.create_future()
        if not messages:
            waiter.set_result([])
            return waiter
        # Packed here, not on the writer thread: see pack_body.
        body = pack_body(encode_body(messages))
        keys = keys_of(server_id, messages)
        when = time.time() if received_at is None else received_at
        self._queue_append(AppendJob(server_id, keys, list(messages), body, when, waiter))
        return waiter

    def submit_raw(
        self, keys: list[Key], messages: RawMessages, *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch kept as the connector's bytes; like :meth:`submit_wire`, but nothing
        is encoded: the stored body is the messages' own bytes, joined.

        Args:
            keys: each message's ``(server_id, channelId, messageId)``, in order (the caller
                read them while checking the messages); one server for the batch.
            messages: the messages, each one valid JSON object of MCPL wire form.
            received_at: as for :meth:`submit_wire`.

        Raises:
            StoreClosedError: (at once) the store is closed.
        """
        if self._closed or self._writer.stopped:
            raise StoreClosedError("the message store is closed")
        waiter: asyncio.Future[Sequence[AppendResult]] = self._loop.create_future()
        if not keys:
            waiter.set_result([])
            return waiter
        when = time.time() if received_at is None else received_at
        server_id = keys[0][0]
        body = pack_body(messages.body())  # here, not on the writer thread: see pack_body
        self._queue_append(AppendJob(server_id, keys, messages, body, when, waiter))
        return waiter

    def _queue_append(self, job: AppendJob[_Waiter]) -> None:
        """Hand ``job`` to the writer; when the writer has nothing queued or in hand (and
        commits do not sync the WAL), commit it here instead:

        - the first batch of a turn of the event loop is committed at once, so a lone batch
          has its awaitable done when this returns;
        - the batches submitted after it in the same turn (a burst of requests in flight,
          handled one after another) are held and committed together, in one transaction, as
          the turn ends (:meth:`_commit_held`): one commit for the burst instead of one each.

        Either way each job's waiter completes as the writer's would. Order holds: every job
        submitted before was committed first, held jobs included (anything else handed to the
        writer commits the held jobs first, :meth:`_put`).
        """
        held = self._held
        if held is not None:
            held.append(job)
            if len(held) >= _MAX_HELD:
                self._commit_held()
            return
        if self._commit_here and self._writer.idle():
            if self._turn_busy:
                self._held = [job]
                return
            if self._commit_group([job]):
                self._turn_busy = True  # cleared, and anything held committed, as it ends
                self._loop.call_soon(self._end_turn)
                return
        self._writer.put(job)

    def _commit_group(self, jobs: list[AppendJob[_Waiter]]) -> bool:
        """Commit ``jobs`` here, in one transaction, and complete them; False (nothing done)
        when the writer has work or another connection holds the write lock."""
        group: list[Job[_Waiter]] = [*jobs]
        if not self._writer.run_here(group):
            return False
        self._complete(group, self._writer.latest_seq)
        self._checkpointer.wrote(sum(len(j.body) for j in jobs if j.results is not None))
        return True

    def _end_turn(self) -> None:
        self._turn_busy = False
        self._commit_held()

    def _commit_held(self) -> None:
        """Commit the held batches together, or hand them to the writer, in order."""
        held = self._held
        if held is None:
            return
        self._held = None
        try:
            committed = self._commit_group(held)
        except Exception as exc:  # run from the loop: a held batch's caller must still hear
            log.exception("store_held_batches_failed", batches=len(held))
            for job in held:
                if job.results is None and job.error is None:
                    job.error = StoreError(f"the batch could not be committed: {exc!r}")
            self._complete([*held], self._writer.latest_seq)
            return
        if not committed:
            for job in held:
                self._writer.put(job)

    def _put(self, job: Job[_Waiter]) -> None:
        """Hand a job other than an append to the writer, behind every batch held here."""
        self._commit_held()
        self._writer.put(job)

    def submit(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of records now; like :meth:`submit_wire`, which it calls.

        Records are converted to wire form. A batch mixing servers is queued as one batch per
        run of records from the same server (a stored batch has one server); each of those
        commits or fails on its own, and the awaitable fails if any did.

        Raises:
            StoreError: (at once) a record cannot be encoded; nothing of the batch is queued.
            StoreClosedError: (at once) the store is closed.
        """
        runs = runs_by_server(records)
        if len(runs) <= 1:
            server_id, messages = runs[0] if runs else ("", [])
            return self.submit_wire(server_id, messages, received_at=received_at)
        for server_id, messages in runs:  # refuse the whole batch before queueing any of it
            encode_body(messages)
            keys_of(server_id, messages)
        when = time.time() if received_at is None else received_at
        parts = [self.submit_wire(sid, run, received_at=when) for sid, run in runs]
        joined: asyncio.Future[Sequence[AppendResult]] = self._loop.create_future()

        def done(gathered: asyncio.Future[list[Sequence[AppendResult]]]) -> None:
            if joined.done():
                return
            if gathered.cancelled():
                joined.cancel()
            elif (error := gathered.exception()) is not None:
                joined.set_exception(error)
            else:
                joined.set_result([r for part in gathered.result() for r in part])

        asyncio.gather(*parts).add_done_callback(done)
        return joined

    async def append(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Sequence[AppendResult]:
        """Submit a batch and wait until it is committed; see :meth:`submit`."""
        return await self.submit(records, received_at=received_at)

    async def read(self, after_seq: int, limit: int = 100) -> list[StoredMessage]:
        """Up to ``limit`` messages with ``seq > after_seq``, in seq order.

        Returns at once, without a thread hop, when nothing newer than ``after_seq`` has been
        committed. Exactly the messages whose commit has been reported when it is called are
        visible: nothing above :attr:`latest_seq` of that moment is returned, even when SQLite
        already holds it (see :class:`MessageStore`).

        Raises:
            ValueError: ``limit`` is less than 1.
            StoreError: the database could not be read.
        """
        return cast(list[StoredMessage], await self._shared_read(read_after, after_seq, limit))

    async def read_slices(self, after_seq: int, limit: int = 100) -> list[StoredSlice]:
        """What :meth:`read` returns, as slices of batches in wire form."""
        return cast(list[StoredSlice], await self._shared_read(read_slices_after, after_seq, limit))

    async def _shared_read(
        self,
        reader: Callable[[sqlite3.Connection, int, int, int], list[Any]],
        after: int,
        limit: int,
    ) -> list[Any]:
        self._check_open()
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        upto = self._latest
        if after >= upto:
            return []
        # Many agents woken by one commit read the same page at the same moment: they share one
        # read on the reader thread instead of queueing one each behind its limiter. A page is
        # a pure function of (after_seq, limit, upto) because committed messages never change.
        key = (reader, after, limit, upto)
        shared = self._shared_reads.get(key)
        if shared is None:
            shared = asyncio.ensure_future(
                anyio.to_thread.run_sync(
                    reader, self._reader, after, limit, upto, limiter=self._read_limiter
                )
            )
            self._shared_reads[key] = shared
            shared.add_done_callback(lambda done: self._read_done(key, done))
        # Shielded: one caller cancelled does not cancel the read the others wait for.
        return list(await asyncio.shield(shared))

    def _read_done(self, key: object, done: asyncio.Future[list[Any]]) -> None:
        self._shared_reads.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: every caller may have been cancelled meanwhile

    async def wait_for_new(self, after_seq: int, timeout: float) -> bool:  # noqa: ASYNC109
        """Wait until a message with ``seq > after_seq`` is committed.

        Woken by commits (no polling). Returns True at once if one already is, True as soon as
        one is, and False when ``timeout`` seconds pass first. The deadline is a parameter, not
        an enclosing cancel scope, because running out of time is an ordinary answer here.

        Raises:
            StoreClosedError: the store was closed while waiting with nothing new.
        """
        if self._latest > after_seq:
            return True
        self._waiters += 1
        try:
            with anyio.move_on_after(timeout):
                while self._latest <= after_seq:
                    self._check_open()
                    if self._new is None:
                        self._new = asyncio.Event()
                    await self._new.wait()
        finally:
            self._waiters -= 1
        return self._latest > after_seq

    @property
    def waiting(self) -> bool:
        """Whether a caller of :meth:`wait_for_new` is waiting now (a long poll in progress)."""
        return self._waiters > 0

    async def get_cursor(self, agent: str) -> int:
        """The last seq ``agent`` acknowledged, 0 if it never set one (served from memory)."""
        self._check_open()
        return self._cursors.get(agent, 0)

    async def set_cursor(self, agent: str, seq: int) -> None:
        """Durably record that ``agent`` acknowledged everything up to ``seq``.

        Raises:
            ValueError: ``seq`` is negative or beyond :attr:`latest_seq`.
            StoreError: the cursor could not be committed.
        """
        await self._put_cursor(agent, seq, delivered=False)

    async def get_delivered(self, agent: str) -> int:
        """The highest seq a read of ``agent`` handed out, 0 if none (served from memory)."""
        self._check_open()
        return self._delivered.get(agent, 0)

    async def set_delivered(self, agent: str, seq: int) -> None:
        """Durably record that a read of ``agent`` handed out messages up to ``seq``.

        Raises:
            ValueError: ``seq`` is negative or beyond :attr:`latest_seq`.
            StoreError: the mark could not be committed.
        """
        await self._put_cursor(agent, seq, delivered=True)

    async def _put_cursor(self, agent: str, seq: int, *, delivered: bool) -> None:
        self._check_open()
        if not 0 <= seq <= self._latest:
            raise ValueError(f"cursor {seq} is outside 0..{self._latest}")
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._put(CursorJob(agent, seq, waiter, delivered=delivered))
        await waiter

    async def maintain(self, work: Callable[[sqlite3.Connection], T], *, writes: int = 0) -> T:
        """Run ``work`` on the writer thread with the write connection, queued behind the
        writes already submitted, and return what it returns (retention's deletes; see
        :mod:`switchboard.store.sqlite.retention`).

        ``work`` runs between two group commits, so ingest waits for it at most once: keep it
        short (one small transaction) and queue several calls for more. It manages its own
        transaction; one it left open is rolled back. ``writes`` (about how many bytes it
        writes) is told to the background checkpointer, so that the writer's own checkpoint
        does not fall due inside a later commit.

        Raises:
            StoreError: ``work`` raised (the cause is chained).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        if self._writer.stopped:
            raise StoreClosedError("the message store is closed")
        waiter: asyncio.Future[Any] = self._loop.create_future()
        self._put(CallJob(work, waiter, writes))
        return cast(T, await waiter)

    async def count(self) -> int:
        """How many messages are stored (a full count; for tests and operations)."""
        self._check_open()
        return await anyio.to_thread.run_sync(
            count_messages, self._reader, limiter=self._read_limiter
        )

    async def highest_numbers(self, server_id: str) -> dict[tuple[str, str], int]:
        """For every (channel id, author id) of ``server_id``'s committed messages, the highest
        ``n`` of a message id ``<author id>#<n>`` (see :mod:`switchboard.store.sqlite.numbered`; a
        full read of that server's batches, for a writer that numbers its messages so).

        Raises:
            StoreError: the database could not be read.
        """
        self._check_open()
        return await anyio.to_thread.run_sync(
            highest_numbers, self._reader, server_id, self._latest, limiter=self._read_limiter
        )

    async def aclose(self) -> None:
        """Commit everything already submitted, stop the writer and close the connections.

        Every awaitable returned by :meth:`submit` before this call completes. Waiters in
        :meth:`wait_for_new` get :class:`StoreClosedError`. Closing twice is harmless.
        """
        if self._closed:
            return
        self._closed = True
        self._commit_held()
        with anyio.CancelScope(shield=True):
            self._writer.stop()
            await anyio.to_thread.run_sync(self._writer.join)
            self._checkpointer.stop()
            await anyio.to_thread.run_sync(self._checkpointer.join)
            await anyio.to_thread.run_sync(self._reader.close, limiter=self._read_limiter)
        self._wake_waiters()
        log.debug("store_closed", latest_seq=self._latest)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the message store is closed")

    def _group_done_from_thread(self, jobs: list[Job[_Waiter]], latest: int) -> None:
        """Runs on the writer thread: one event-loop wake-up per group commit (and a word to
        the checkpointer about how much was written)."""
        self._loop.call_soon_threadsafe(self._complete, jobs, latest)
        written = 0
        for job in jobs:
            if isinstance(job, AppendJob) and job.results is not None:
                written += len(job.body)
            elif isinstance(job, CallJob):
                written += job.writes
        self._checkpointer.wrote(written)

    def _complete(self, jobs: list[Job[_Waiter]], latest: int) -> None:
        """Runs on the event loop: resolve the group's futures and wake waiters."""
        refused: StorageUnavailableError | None = None
        for job in jobs:
            waiter = job.waiter
            if job.error is not None and isinstance(job.error, StorageUnavailableError):
                refused = job.error
            if isinstance(job, CursorJob) and job.error is None:
                # committed, even if its caller went away; a position never moves back
                marks = self._delivered if job.delivered else self._cursors
                marks[job.agent] = max(marks.get(job.agent, 0), job.seq)
            if waiter.done():  # the caller was cancelled; the write stands
                continue
            if job.error is not None:
                waiter.set_exception(job.error)
            elif isinstance(job, AppendJob):
                waiter.set_result(job.results)
            elif isinstance(job, CallJob):
                waiter.set_result(job.result)
            else:
                waiter.set_result(None)
        if refused is not None:
            self._storage_health(refused.cause)
        elif self._storage_problem is not None and any(
            job.error is None and not isinstance(job, CallJob) for job in jobs
        ):
            self._storage_health(None)
        if latest > self._latest:
            self._latest = latest
            self._wake_waiters()
            for listener in self._head_listeners:
                try:
                    listener(latest)
                except Exception:
                    log.exception("head_listener_failed")

    @property
    def storage_problem(self) -> str | None:
        """What the storage said when it last refused a write (``database or disk is full``),
        or None when the latest write succeeded (or none failed)."""
        return self._storage_problem

    def watch_head(self, listener: Callable[[int], None]) -> None:
        """Call ``listener`` on the event loop with the new :attr:`latest_seq` each time
        commits raise it (once per group commit), after the commits' callers are answered."""
        self._head_listeners.append(listener)

    def watch_storage(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener`` on the event loop whenever the storage starts refusing writes
        (with the cause) and when a write succeeds again (with None); once per change."""
        self._storage_listeners.append(listener)

    def _storage_health(self, problem: str | None) -> None:
        if problem == self._storage_problem or (
            problem is not None and self._storage_problem is not None
        ):
            return
        self._storage_problem = problem
        for listener in self._storage_listeners:
            try:
                listener(problem)
            except Exception:
                log.exception("storage_listener_failed")

    def _wake_waiters(self) -> None:
        event, self._new = self._new, None
        if event is not None:
            event.set()


def _load(
    conn: sqlite3.Connection, window: int
) -> tuple[int, dict[str, int], dict[str, int], DedupeIndex]:
    """Read what the store keeps in memory: ``latest_seq``, the cursors, the delivered marks,
    and the duplicate index over the newest ``window`` messages (runs on a worker thread at
    open)."""
    latest, cursors, delivered = load_state(conn)
    return latest, cursors, delivered, DedupeIndex.rebuild(window, recent_keys(conn, window))
