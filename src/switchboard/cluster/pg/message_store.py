"""The PostgreSQL message store as the event loop sees it: :class:`PgMessageStore`.

Futures for submitted batches (committed by the writer thread, :mod:`.writer`), the head this
instance knows and who hears it move, fences, cursors written with ``GREATEST``, and reads
through an async connection pool, bounded by the known head.

What it deliberately does not know: leases, NATS, channels, agents or the host.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar, cast

import anyio
import orjson
import psycopg
import structlog
from psycopg_pool import AsyncConnectionPool

from switchboard.cluster.pg.schema import SYNCHRONOUS_COMMIT, Durability, connect, migrate
from switchboard.cluster.pg.writer import (
    AppendJob,
    CallJob,
    Job,
    NumberedJob,
    PgWriter,
    recent_batches,
)
from switchboard.store.dedupe import DEFAULT_WINDOW, DedupeIndex
from switchboard.store.mailmark import highest_numbers_in
from switchboard.store.records import (
    AppendResult,
    IncomingRecord,
    StorageUnavailableError,
    StoreClosedError,
    StoredMessage,
    StoreError,
)
from switchboard.store.wire import (
    Key,
    RawMessages,
    StoredSlice,
    WireMessage,
    encode_body,
    keys_of,
    pack_body,
    runs_by_server,
    slice_batch,
    to_wire,
)

__all__ = ["PgMessageStore"]

log = structlog.get_logger(__name__)

_Waiter = asyncio.Future[Any]
T = TypeVar("T")

#: Batch rows fetched per query of a read (a row holds at least one message).
_ROWS_PER_READ: Final = 16
_HEAD: Final = "SELECT next_seq - 1 FROM stream_head WHERE id = 1"
_READ: Final = (
    "SELECT first_seq, server_id, received_at, body FROM batches WHERE first_seq >= "
    "coalesce((SELECT first_seq FROM batches WHERE first_seq <= %(start)s "
    "ORDER BY first_seq DESC LIMIT 1), 0) AND first_seq <= %(upto)s "
    "ORDER BY first_seq LIMIT %(rows)s"
)
_SET_CURSOR: Final = (
    "INSERT INTO cursors (agent, seq) VALUES (%s, %s) ON CONFLICT (agent) "
    "DO UPDATE SET seq = GREATEST(cursors.seq, excluded.seq)"
)
_SET_DELIVERED: Final = (
    "INSERT INTO cursors (agent, delivered) VALUES (%s, %s) ON CONFLICT (agent) "
    "DO UPDATE SET delivered = GREATEST(cursors.delivered, excluded.delivered)"
)


def _storage_error(exc: psycopg.Error, doing: str) -> StoreError:
    if isinstance(exc, psycopg.OperationalError):
        text = str(exc).strip()
        return StorageUnavailableError(text.splitlines()[0] if text else type(exc).__name__)
    return StoreError(f"cannot {doing}: {exc}")


class PgMessageStore:
    """Durable inboxes in a PostgreSQL database shared by every instance.

    Writes: batches go to one writer thread (group commit through ``sb_commit``); a batch's
    awaitable completes once its commit is done (commit before acknowledgement), with the seqs
    the database allocated. Duplicates are found in a window kept in memory on the instance
    that owns the connector (rebuilt at open, and by :meth:`rebuild_dedupe` when a connector is
    taken over).

    The head: :attr:`latest_seq` is the highest seq this instance knows to be committed: its own
    commits, :meth:`advance_head` (a hint from another instance), :meth:`poll_head` (read from
    the database). Since seqs are allocated in commit order, everything at or below a known
    head is visible, and a read never returns a row above it. :meth:`watch_head` listeners hear
    every move; :meth:`on_commit` listeners only this instance's commits.

    Fences (cluster mode): :meth:`fence` gives a connector's lease epoch; its batches commit only
    while the lease row holds that epoch. With ``fencing`` a connector without a fence cannot
    commit at all. Refused batches fail with ``StaleEpochError`` and count in
    :attr:`stale_rejections`. Mail (``@mail``) is never fenced.

    Cursors are written with ``GREATEST``: two sessions racing never move one backwards.
    """

    def __init__(
        self,
        *,
        url: str,
        synchronous: Durability,
        writer_conn: psycopg.Connection[Any],
        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]],
        latest_seq: int,
        index: DedupeIndex,
        fencing: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """Wrap what :meth:`open` made; use :meth:`open`."""
        self._loop = loop
        self._pool = pool
        self._latest = latest_seq
        self._dedupe_window = index.window
        self._fences: dict[str, int] = {}
        self._stale = 0
        self._closed = False
        self._new: asyncio.Event | None = None
        self._waiters = 0
        self._shared_reads: dict[tuple[int, int, int], asyncio.Future[list[StoredSlice]]] = {}
        self._storage_problem: str | None = None
        self._storage_listeners: list[Callable[[str | None], None]] = []
        self._head_listeners: list[Callable[[int], None]] = []
        self._commit_listeners: list[Callable[[int], None]] = []
        self._poller: asyncio.Task[None] | None = None
        self._writer: PgWriter[_Waiter] = PgWriter(
            url,
            synchronous,
            writer_conn,
            index,
            self._group_done_from_thread,
            fences=self._fences,
            fencing=fencing,
            on_stale=self._stale_from_thread,
        )
        self._writer.start()

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        synchronous: Durability = "normal",
        dedupe_window: int = DEFAULT_WINDOW,
        fencing: bool = False,
        poll_interval: float | None = None,
        pool_size: int = 4,
    ) -> PgMessageStore:
        """Open (migrating) the store in the database at ``url`` and start its writer thread.

        Args:
            synchronous: ``"normal"``: a commit waits for the local WAL flush; ``"full"``: also
                for a synchronous standby when one is configured.
            dedupe_window: how many of the newest messages duplicates are found among.
            fencing: cluster mode: a connector's batches commit only under its :meth:`fence`.
            poll_interval: when given, read the shared head every so many seconds (the
                backstop for commits of other instances nobody announced).

        Raises:
            StoreError: the database cannot be reached or has a newer schema.
        """
        if dedupe_window < 0:
            raise ValueError(f"dedupe_window must be 0 or more, not {dedupe_window}")
        loop = asyncio.get_running_loop()

        def prepare() -> tuple[psycopg.Connection[Any], int, DedupeIndex]:
            conn = connect(url, synchronous=synchronous)
            try:
                migrate(conn)
                row = conn.execute(_HEAD).fetchone()
                latest = int(row[0]) if row is not None else 0
                index = DedupeIndex.rebuild(
                    dedupe_window, recent_batches(conn, None, dedupe_window)
                )
            except BaseException:
                conn.close()
                raise
            return conn, latest, index

        try:
            writer_conn, latest, index = await anyio.to_thread.run_sync(prepare)
        except psycopg.Error as exc:
            raise _storage_error(exc, "open the message store") from exc
        commit_mode = SYNCHRONOUS_COMMIT[synchronous]

        async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.set_autocommit(True)
            await conn.execute(f"SET synchronous_commit = {commit_mode}")

        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            configure=configure,
            kwargs={"prepare_threshold": None, "application_name": "switchboard"},
            timeout=10.0,
        )
        try:
            await pool.open(wait=True, timeout=10.0)
        except Exception as exc:
            writer_conn.close()
            await pool.close()
            raise StorageUnavailableError(f"cannot open the read pool: {exc}") from exc
        store = cls(
            url=url,
            synchronous=synchronous,
            writer_conn=writer_conn,
            pool=pool,
            latest_seq=latest,
            index=index,
            fencing=fencing,
            loop=loop,
        )
        if poll_interval is not None:
            store._poller = loop.create_task(store._poll_every(poll_interval))
        log.debug("store_opened", backend="postgres", latest_seq=latest, remembered=len(index))
        return store

    # -- what the interface says --------------------------------------------------------------

    @property
    def latest_seq(self) -> int:
        """The highest seq this instance knows to be committed (0 when empty)."""
        return self._latest

    @property
    def dedupe_window(self) -> int:
        return self._dedupe_window

    @property
    def closed(self) -> bool:
        return self._closed or self._writer.stopped

    @property
    def write_backlog(self) -> int:
        return self._writer.backlog()

    @property
    def storage_problem(self) -> str | None:
        return self._storage_problem

    @property
    def waiting(self) -> bool:
        """Whether a caller of :meth:`wait_for_new` is waiting now."""
        return self._waiters > 0

    def submit_wire(
        self, server_id: str, messages: list[WireMessage], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of wire-form messages now; the awaitable completes once committed
        (see :class:`~switchboard.store.interface.Batches`)."""
        self._check_writable()
        waiter: asyncio.Future[Sequence[AppendResult]] = self._loop.create_future()
        if not messages:
            waiter.set_result([])
            return waiter
        body = pack_body(encode_body(messages))
        keys = keys_of(server_id, messages)
        when = time.time() if received_at is None else received_at
        self._writer.put(AppendJob(server_id, keys, list(messages), body, when, waiter))
        return waiter

    def submit_raw(
        self, keys: list[Key], messages: RawMessages, *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch kept as the connector's bytes (see :meth:`submit_wire`)."""
        self._check_writable()
        waiter: asyncio.Future[Sequence[AppendResult]] = self._loop.create_future()
        if not keys:
            waiter.set_result([])
            return waiter
        when = time.time() if received_at is None else received_at
        body = pack_body(messages.body())
        self._writer.put(AppendJob(keys[0][0], keys, messages, body, when, waiter))
        return waiter

    def submit(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of records now: one batch per run of one server."""
        runs = runs_by_server(records)
        if len(runs) <= 1:
            server_id, messages = runs[0] if runs else ("", [])
            return self.submit_wire(server_id, messages, received_at=received_at)
        for server_id, messages in runs:  # refuse the whole batch before queueing any of it
            encode_body(messages)
            keys_of(server_id, messages)
        when = time.time() if received_at is None else received_at
        parts = [self.submit_wire(sid, run, received_at=when) for sid, run in runs]

        async def joined() -> Sequence[AppendResult]:
            done = await asyncio.gather(*parts)
            return [r for part in done for r in part]

        return asyncio.ensure_future(joined())

    async def append(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Sequence[AppendResult]:
        return await self.submit(records, received_at=received_at)

    def submit_numbered(
        self, record: IncomingRecord, *, received_at: float | None = None
    ) -> Awaitable[tuple[AppendResult, int]]:
        """Queue ``record`` numbered inside its commit from the counter row of its
        ``(channel id, author id)`` (see :class:`~switchboard.store.NumberedDeposits`)."""
        self._check_writable()
        waiter: asyncio.Future[tuple[AppendResult, int]] = self._loop.create_future()
        when = time.time() if received_at is None else received_at
        parts = _numbered_parts(to_wire(record))
        self._writer.put(
            NumberedJob(record.server_id, record.channel_id, record.author_id, parts, when, waiter)
        )
        return waiter

    async def read(self, after_seq: int, limit: int = 100) -> list[StoredMessage]:
        """Up to ``limit`` messages with ``seq > after_seq``, none above the head known now;
        callers asking for the same page at once share one query."""
        return [m for part in await self.read_slices(after_seq, limit) for m in part.stored()]

    async def read_slices(self, after_seq: int, limit: int = 100) -> list[StoredSlice]:
        """What :meth:`read` returns, as slices of batches in wire form."""
        self._check_open()
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        upto = self._latest
        if after_seq >= upto:
            return []
        key = (after_seq, limit, upto)
        shared = self._shared_reads.get(key)
        if shared is None:
            shared = asyncio.ensure_future(self._read(after_seq, limit, upto))
            self._shared_reads[key] = shared
            shared.add_done_callback(lambda done: self._read_done(key, done))
        return list(await asyncio.shield(shared))

    def _read_done(
        self, key: tuple[int, int, int], done: asyncio.Future[list[StoredSlice]]
    ) -> None:
        self._shared_reads.pop(key, None)
        if not done.cancelled():
            done.exception()

    async def _read(self, after_seq: int, limit: int, upto: int) -> list[StoredSlice]:
        start = max(after_seq, 0) + 1
        limit = min(limit, upto - start + 1)
        found: list[StoredSlice] = []
        taken = 0
        try:
            async with self._pool.connection() as conn:
                while taken < limit:
                    cur = await conn.execute(
                        _READ,
                        {"start": start, "upto": upto, "rows": _ROWS_PER_READ},
                        binary=True,
                    )
                    rows = await cur.fetchall()
                    began = start
                    if not rows:
                        break
                    for first_seq, server_id, received_at, body in rows:
                        part = slice_batch(
                            first_seq, server_id, received_at, bytes(body), start, limit - taken
                        )
                        if part.messages:
                            found.append(part)
                            taken += len(part.messages)
                            start = part.last_seq + 1
                        if taken >= limit:
                            break
                    # Only the row below ``start`` came back (the rows after it were
                    # deleted by retention): nothing more is stored up to ``upto``.
                    if start > upto or start <= began:
                        break
        except psycopg.Error as exc:
            raise _storage_error(exc, f"read messages after {after_seq}") from exc
        return found

    async def wait_for_new(self, after_seq: int, timeout: float) -> bool:  # noqa: ASYNC109
        """True as soon as the known head passes ``after_seq``; False after ``timeout``."""
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

    def watch_head(self, listener: Callable[[int], None]) -> None:
        """Call ``listener`` on the event loop with the new head each time it moves: this
        instance's commits, :meth:`advance_head` and :meth:`poll_head`."""
        self._head_listeners.append(listener)

    def on_commit(self, listener: Callable[[int], None]) -> None:
        """Call ``listener`` on the event loop with the head after each commit this instance
        made (what it announces to the others)."""
        self._commit_listeners.append(listener)

    def watch_storage(self, listener: Callable[[str | None], None]) -> None:
        self._storage_listeners.append(listener)

    async def count(self) -> int:
        """How many messages are stored (a full count)."""
        self._check_open()
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute("SELECT coalesce(sum(count), 0) FROM batches")
                row = await cur.fetchone()
        except psycopg.Error as exc:
            raise _storage_error(exc, "count messages") from exc
        return int(row[0]) if row is not None else 0

    # -- cursors ------------------------------------------------------------------------------

    async def get_cursor(self, agent: str) -> int:
        return (await self._cursor_row(agent))[0]

    async def get_delivered(self, agent: str) -> int:
        return (await self._cursor_row(agent))[1]

    async def _cursor_row(self, agent: str) -> tuple[int, int]:
        self._check_open()
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT seq, delivered FROM cursors WHERE agent = %s", (agent,)
                )
                row = await cur.fetchone()
        except psycopg.Error as exc:
            raise _storage_error(exc, f"read the cursor of {agent!r}") from exc
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    async def set_cursor(self, agent: str, seq: int) -> None:
        """Durably record that ``agent`` acknowledged up to ``seq`` (never moving it back)."""
        await self._put_cursor(_SET_CURSOR, agent, seq)

    async def set_delivered(self, agent: str, seq: int) -> None:
        """Durably record that a read of ``agent`` handed out up to ``seq`` (never back)."""
        await self._put_cursor(_SET_DELIVERED, agent, seq)

    async def _put_cursor(self, query: str, agent: str, seq: int) -> None:
        self._check_open()
        if not 0 <= seq <= self._latest:
            raise ValueError(f"cursor {seq} is outside 0..{self._latest}")
        try:
            async with self._pool.connection() as conn:
                await conn.execute(query, (agent, seq))
        except psycopg.Error as exc:
            error = _storage_error(exc, f"set the cursor of {agent!r}")
            if isinstance(error, StorageUnavailableError):
                self._storage_health(error.cause)
            raise error from exc

    async def highest_numbers(self, server_id: str) -> dict[tuple[str, str], int]:
        """For every (channel id, author id) of ``server_id``'s messages, the highest ``n`` of a
        message id ``<author id>#<n>`` (a read of that server's batches)."""
        self._check_open()
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT body FROM batches WHERE server_id = %s AND first_seq <= %s "
                    "ORDER BY first_seq",
                    (server_id, self._latest),
                    binary=True,
                )
                rows = await cur.fetchall()
        except psycopg.Error as exc:
            raise _storage_error(exc, f"read the messages of {server_id!r}") from exc
        return highest_numbers_in(bytes(body) for (body,) in rows)

    async def maintain(
        self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]], doing: str
    ) -> T:
        """Run ``work`` with a connection of the read pool (autocommit: it opens its own
        transactions) and return what it returns: retention's deletes
        (:mod:`switchboard.cluster.pg.retention`). Unlike SQLite's, it does not queue behind
        the writer: deleting old rows takes no lock a commit of new rows waits for.

        Raises:
            StoreError: the database refused (``doing`` says what was being done).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        try:
            async with self._pool.connection() as conn:
                return await work(conn)
        except psycopg.Error as exc:
            raise _storage_error(exc, doing) from exc

    # -- the cluster's part -------------------------------------------------------------------

    def fence(self, server_id: str, epoch: int) -> None:
        """From now on, ``server_id``'s batches commit only while its lease holds ``epoch``
        (checked inside each commit)."""
        self._fences[server_id] = epoch

    def unfence(self, server_id: str) -> None:
        """``server_id`` is no longer owned here: its later batches fail with
        ``StaleEpochError`` (with fencing; without it they are not checked)."""
        self._fences.pop(server_id, None)

    @property
    def stale_rejections(self) -> int:
        """Batches refused because their connector's lease was not (or no longer) held."""
        return self._stale

    def time_commits(self) -> list[float]:
        """From now on, the seconds each ``sb_commit`` call takes on the writer thread (its
        send to its answer, the commit included) are appended to the list returned (for the
        benchmark's lock-hold figures)."""
        times: list[float] = []
        self._writer.commit_times = times
        return times

    async def rebuild_dedupe(self, server_id: str) -> None:
        """Load ``server_id``'s newest committed batches into the duplicate window (after
        taking over its lease, before starting its connector): a resend of what the former
        owner committed is then a duplicate."""

        def learn(conn: psycopg.Connection[Any], index: DedupeIndex) -> object:
            index.learn(recent_batches(conn, [server_id], index.window))
            return None

        await self._call(learn)

    def advance_head(self, seq: int) -> None:
        """Another instance committed up to ``seq``: raise the known head and tell the
        watchers (a hint after a commit, so everything up to it is visible)."""
        if self._closed:
            return
        self._raise_head(seq)

    async def poll_head(self) -> int:
        """Read the shared head from the database, raise the known head to it; return it."""
        self._check_open()
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(_HEAD)
                row = await cur.fetchone()
        except psycopg.Error as exc:
            raise _storage_error(exc, "read the head") from exc
        head = int(row[0]) if row is not None else 0
        self._raise_head(head)
        return head

    async def _poll_every(self, interval: float) -> None:
        while not self._closed:
            await asyncio.sleep(interval)
            try:
                await self.poll_head()
            except StoreClosedError:
                return
            except StoreError as exc:
                log.debug("head_poll_failed", error=str(exc))

    async def _call(self, work: Callable[[psycopg.Connection[Any], DedupeIndex], T]) -> T:
        self._check_writable()
        waiter: asyncio.Future[Any] = self._loop.create_future()
        self._writer.put(CallJob(work, waiter))
        return cast(T, await waiter)

    # -- closing ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Commit everything already submitted, stop the writer, close the pool."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            if self._poller is not None:
                self._poller.cancel()
                await asyncio.gather(self._poller, return_exceptions=True)
            self._writer.stop()
            await anyio.to_thread.run_sync(self._writer.join)
            await self._pool.close()
        self._wake_waiters()
        log.debug("store_closed", backend="postgres", latest_seq=self._latest)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the message store is closed")

    def _check_writable(self) -> None:
        if self._closed or self._writer.stopped:
            raise StoreClosedError("the message store is closed")

    # -- reports from the writer thread ------------------------------------------------------

    def _stale_from_thread(self, refused: int) -> None:
        self._loop.call_soon_threadsafe(self._count_stale, refused)

    def _count_stale(self, refused: int) -> None:
        self._stale += refused

    def _group_done_from_thread(self, jobs: list[Job[_Waiter]], head: int) -> None:
        self._loop.call_soon_threadsafe(self._complete, jobs, head)

    def _complete(self, jobs: list[Job[_Waiter]], head: int) -> None:
        refused: StorageUnavailableError | None = None
        wrote = False
        for job in jobs:
            waiter = job.waiter
            if isinstance(job.error, StorageUnavailableError):
                refused = job.error
            elif job.error is None and not isinstance(job, CallJob):
                wrote = True
            if waiter.done():
                continue
            if job.error is not None:
                waiter.set_exception(job.error)
            elif isinstance(job, AppendJob):
                waiter.set_result(job.results)
            else:
                waiter.set_result(job.result)
        if refused is not None:
            self._storage_health(refused.cause)
        elif wrote and self._storage_problem is not None:
            self._storage_health(None)
        if head > self._latest:
            self._raise_head(head)
            for listener in self._commit_listeners:
                try:
                    listener(head)
                except Exception:
                    log.exception("commit_listener_failed")

    def _raise_head(self, head: int) -> None:
        if head <= self._latest:
            return
        self._latest = head
        self._wake_waiters()
        for listener in self._head_listeners:
            try:
                listener(head)
            except Exception:
                log.exception("head_listener_failed")

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


def _numbered_parts(message: WireMessage) -> list[bytes]:
    """The body of one numbered message as the pieces the number joins: ``messageId`` is
    ``<author id>#<n>`` and ``metadata.n`` (when there is metadata) is ``n``. Spliced around
    whole JSON values, so no text of the message can be mistaken for the number's place."""
    rest = dict(message)
    rest.pop("messageId", None)
    metadata = rest.pop("metadata", None)
    author = str(message["author"]["id"])
    parts = [b'[{"messageId":' + orjson.dumps(f"{author}#")[:-1]]
    tail = b"," + orjson.dumps(rest)[1:] + b"]"
    if isinstance(metadata, dict):
        others = {k: v for k, v in metadata.items() if k != "n"}
        head = orjson.dumps(others)[:-1]
        parts.append(b'","metadata":' + head + (b',"n":' if others else b'"n":'))
        parts.append(b"}" + tail)
    else:
        parts.append(b'"' + tail)
    return parts
