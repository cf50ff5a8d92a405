"""The PostgreSQL store's writer thread: group commit through ``sb_commit``, the duplicate window,
fences, and reconnecting after an outage.

One sync connection owned by one thread takes every queued job in groups; a group of batches is
one ``SELECT sb_commit(...)`` (one round trip, one commit), whose seqs the database allocates.
The duplicate window claims a group's keys before the seqs are known and renumbers them once
the commit says where the group starts. After each group, one call reports it.

What it deliberately does not know: asyncio (each job carries an opaque waiter).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeAlias, TypeVar

import psycopg
import structlog

from switchboard.cluster.pg.schema import STALE_EPOCH, Durability, connect
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.store.dedupe import DedupeIndex
from switchboard.store.jobs import AppendJob
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.records import (
    AppendResult,
    FreshResults,
    StaleEpochError,
    StorageUnavailableError,
    StoreClosedError,
    StoreError,
)
from switchboard.store.wire import (
    Key,
    RawMessages,
    decode_body,
    encode_body,
    keys_of,
    pack_body,
)

__all__ = ["AppendJob", "CallJob", "NumberedJob", "PgWriter", "recent_batches"]

log = structlog.get_logger(__name__)
_failures = RateLimitedLog(log)

W = TypeVar("W")

#: Seqs a group's keys are claimed from before the commit numbers them: above any real seq.
_PROPOSED: Final = 1 << 62

_COMMIT: Final = "SELECT sb_commit(%s, %s, %s, %s, %s)"
_DEPOSIT: Final = "SELECT sb_deposit(%s, %s, %s, %s, %s)"


@dataclass(slots=True, eq=False)
class NumberedJob(Generic[W]):
    """One message numbered inside its commit (mail): its body is ``parts`` joined by the
    number; ``result`` is its answer and number once committed."""

    server_id: str
    channel_id: str
    author_id: str
    parts: list[bytes]
    received_at: float
    waiter: W
    result: tuple[AppendResult, int] | None = None
    error: StoreError | None = None


@dataclass(slots=True, eq=False)
class CallJob(Generic[W]):
    """Work run on the writer thread between groups, owning the duplicate window (rebuilding
    it for a connector taken over); ``work`` gets the connection and the window."""

    work: Callable[[psycopg.Connection[Any], DedupeIndex], object]
    waiter: W
    result: object = None
    error: StoreError | None = None


Job: TypeAlias = AppendJob[W] | NumberedJob[W] | CallJob[W]


class _Stop:
    pass


_STOP: Final = _Stop()


@dataclass(slots=True)
class _Prepared(Generic[W]):
    """A group's rows for ``sb_commit``, and each job's answers numbered from _PROPOSED."""

    jobs: list[AppendJob[W]] = field(default_factory=list)
    answers: list[Sequence[AppendResult]] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)
    epochs: list[int | None] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    received: list[float] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)


def _storage_cause(exc: BaseException) -> str | None:
    """What the database said when ``exc`` means it could not be reached or refused to work
    (the connection dropped, the server is shutting down or out of space), else None."""
    if isinstance(exc, psycopg.OperationalError | psycopg.errors.DiskFull):
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__
    if isinstance(exc, psycopg.InterfaceError):  # used on a connection that is already closed
        return "the connection to the database is closed"
    return None


def recent_batches(
    conn: psycopg.Connection[Any], servers: Sequence[str] | None, window: int, after: int = 0
) -> list[tuple[int, list[Key]]]:
    """The keys of the newest batches (of ``servers``; of all when None) above seq ``after``
    that hold at least ``window`` messages, as ``(first_seq, keys)`` in ascending seq order.
    Read newest first, a page of rows at a time, so only what the window needs is read."""
    found: list[tuple[int, list[Key]]] = []
    covered = 0
    below = 1 << 62
    where = "" if servers is None else " AND server_id = ANY(%(servers)s)"
    query = (
        "SELECT first_seq, count, server_id, body FROM batches WHERE first_seq > %(after)s "
        f"AND first_seq < %(below)s{where} ORDER BY first_seq DESC LIMIT 64"
    )
    while covered < window:
        params = {"after": after, "below": below, "servers": list(servers or ())}
        rows = conn.execute(query, params, binary=True).fetchall()
        if not rows:
            break
        for first_seq, count, server_id, body in rows:
            if covered >= window:
                break
            found.append((first_seq, keys_of(server_id, decode_body(bytes(body)))))
            covered += count
        below = rows[-1][0]
    found.reverse()
    return found


class PgWriter(Generic[W]):
    """Owns the write connection and the thread that commits queued jobs in groups.

    Theory of operation:

    * Queue order is commit order. A group is every job already queued (up to
      ``max_group_rows`` messages). Its batches are claimed in the duplicate window (new keys
      numbered from a proposed seq), then written by one ``sb_commit`` call; the seq it returns
      renumbers the group's answers and keys. A batch with no new message writes no row.
    * Fences: ``fences`` (server id to lease epoch, kept by the store on the event loop) is read
      when the group is written; with ``fencing`` a server without an entry fails at once. Mail
      (``@mail``) is never fenced. A stale epoch fails that server's batches only: the group is
      written again without them.
    * Failure: another error fails the group, which is then written one job at a time so only
      bad jobs fail. A lost connection fails the group with :class:`StorageUnavailableError`
      and is opened again for the next group. A commit whose answer was lost may still have
      committed: before writing again, the window learns what those servers' batches stored.
    * ``on_group_done(jobs, head)`` is called once per group from this thread, ``head`` the last
      seq this writer committed (0 when none).
    """

    def __init__(
        self,
        url: str,
        synchronous: Durability,
        conn: psycopg.Connection[Any],
        index: DedupeIndex,
        on_group_done: Callable[[list[Job[W]], int], None],
        *,
        fences: Mapping[str, int],
        fencing: bool,
        on_stale: Callable[[int], None],
        max_group_rows: int = 20_000,
    ) -> None:
        self._url = url
        self._synchronous: Durability = synchronous
        self._conn: psycopg.Connection[Any] | None = conn
        self._index = index
        self._on_group_done = on_group_done
        self._fences = fences
        self._fencing = fencing
        self._on_stale = on_stale
        self._max_rows = max_group_rows
        self._queue: queue.SimpleQueue[Job[W] | _Stop] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="switchboard-pg-writer", daemon=True)
        self._head = 0
        self._doubtful: set[str] = set()  # servers whose last commit's answer was lost
        self._doubt_after = 0
        self.stopped = False
        #: Seconds each sb_commit call took (for the benchmark's lock-hold figures), if a list.
        self.commit_times: list[float] | None = None

    def start(self) -> None:
        self._thread.start()

    def put(self, job: Job[W]) -> None:
        self._queue.put(job)

    def stop(self) -> None:
        self._queue.put(_STOP)

    def join(self) -> None:
        self._thread.join()

    def backlog(self) -> int:
        return self._queue.qsize()

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        group: list[Job[W]] = []
        try:
            stopping = False
            while not stopping:
                group, stopping = self._collect()
                if group:
                    self._process(group)
                    self._report(group)
                group = []
        except BaseException:  # pragma: no cover - a bug; fail waiters rather than hang them
            log.exception("store_writer_crashed", writer="pg")
            self._fail(group)
        finally:
            self.stopped = True
            if self._conn is not None:
                self._conn.close()
            self._fail(self._drain())

    def _collect(self) -> tuple[list[Job[W]], bool]:
        first = self._queue.get()
        if isinstance(first, _Stop):
            return [], True
        group: list[Job[W]] = [first]
        weight = _weight(first)
        while weight < self._max_rows:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Stop):
                return group, True
            group.append(item)
            weight += _weight(item)
        return group, False

    def _drain(self) -> list[Job[W]]:
        jobs: list[Job[W]] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return jobs
            if not isinstance(item, _Stop):
                jobs.append(item)

    def _report(self, group: list[Job[W]]) -> None:
        try:
            self._on_group_done(group, self._head)
        except Exception:
            log.exception("store_group_done_callback_failed")

    def _fail(self, jobs: list[Job[W]]) -> None:
        pending = [
            j
            for j in jobs
            if j.error is None
            and not (isinstance(j, AppendJob) and j.results is not None)
            and not (isinstance(j, NumberedJob) and j.result is not None)
        ]
        for job in pending:
            job.error = StoreClosedError("the store writer stopped before this write")
        if pending:
            self._report(pending)

    # -- one group ----------------------------------------------------------------------------

    def _process(self, group: list[Job[W]]) -> None:
        appends: list[AppendJob[W]] = []
        for job in group:
            if isinstance(job, AppendJob):
                appends.append(job)
                continue
            if appends:  # in queue order: after the batches queued before it
                self._write_appends(appends)
                appends = []
            if isinstance(job, NumberedJob):
                self._deposit(job)
            else:
                self._call(job)
        if appends:
            self._write_appends(appends)

    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        self._conn = None
        conn = connect(self._url, synchronous=self._synchronous)
        self._conn = conn
        if self._doubtful:  # learn what a commit whose answer was lost stored
            servers = sorted(self._doubtful)
            self._index.learn(
                recent_batches(conn, servers, self._index.window, after=self._doubt_after)
            )
            self._doubtful.clear()
        return conn

    def _deposit(self, job: NumberedJob[W]) -> None:
        try:
            conn = self._connection()
            row = conn.execute(
                _DEPOSIT,
                (job.server_id, job.channel_id, job.author_id, job.parts, job.received_at),
                binary=True,
            ).fetchone()
        except Exception as exc:
            if isinstance(exc, psycopg.Error) and _storage_cause(exc) is not None:
                self._lost([job.server_id])
            job.error = self._as_error(exc)
            return
        assert row is not None
        seq, n = (int(x) for x in row[0])
        self._index.learn([(seq, [(job.server_id, job.channel_id, f"{job.author_id}#{n}")])])
        job.result = (AppendResult(seq, False), n)
        self._head = max(self._head, seq)

    def _call(self, job: CallJob[W]) -> None:
        try:
            job.result = job.work(self._connection(), self._index)
        except Exception as exc:
            job.error = self._as_error(exc)

    def _write_appends(self, jobs: list[AppendJob[W]]) -> None:
        live = self._unfenced(jobs)
        if not live:
            return
        try:
            self._commit(live)
            return
        except StaleEpochError as exc:
            rest = self._refuse_server(live, exc)
            if rest:
                self._write_appends(rest)
            return
        except Exception as exc:
            if len(live) == 1 or _storage_cause(exc) is not None:
                for job in live:  # one error each: the callers raise them
                    job.error = self._as_error(exc)
                return
            _failures.note(
                ("group", type(exc).__name__),
                "store_group_failed",
                writer="pg",
                jobs=len(live),
                error=repr(exc),
            )
        for job in live:  # alone, so that only the bad ones fail
            self._write_appends([job])

    def _unfenced(self, jobs: list[AppendJob[W]]) -> list[AppendJob[W]]:
        """The jobs that may be written: with fencing, those of a fenced server (or mail)."""
        if not self._fencing:
            return jobs
        fences = self._fences
        live: list[AppendJob[W]] = []
        refused = 0
        for job in jobs:
            if job.server_id == MAIL_SERVER or job.server_id in fences:
                live.append(job)
            else:
                job.error = StaleEpochError(job.server_id, "it holds no lease here")
                refused += 1
        if refused:
            self._on_stale(refused)
        return live

    def _refuse_server(self, jobs: list[AppendJob[W]], exc: StaleEpochError) -> list[AppendJob[W]]:
        rest = [job for job in jobs if job.server_id != exc.server_id]
        refused = [job for job in jobs if job.server_id == exc.server_id]
        for job in refused:
            job.error = StaleEpochError(exc.server_id, str(exc).partition(": ")[2])
        self._on_stale(len(refused))
        return rest

    def _commit(self, jobs: list[AppendJob[W]]) -> None:
        index = self._index
        # Connected before any key is claimed: reconnecting may teach the window what a lost
        # commit stored, which must not commit this group's claims with it.
        conn = self._connection()
        prepared = self._prepare(jobs)
        if not prepared.bodies:  # every message a duplicate: nothing to write
            index.commit()
            for job, results in zip(jobs, prepared.answers, strict=True):
                job.results = results
            return
        try:
            started = time.perf_counter()
            row = conn.execute(
                _COMMIT,
                (
                    prepared.servers,
                    prepared.epochs,
                    prepared.counts,
                    prepared.received,
                    prepared.bodies,
                ),
                binary=True,
            ).fetchone()
            if self.commit_times is not None:
                self.commit_times.append(time.perf_counter() - started)
        except BaseException as exc:
            index.rollback()
            if isinstance(exc, psycopg.Error) and exc.sqlstate == STALE_EPOCH:
                server = exc.diag.message_detail or ""
                raise StaleEpochError(server, exc.diag.message_primary or str(exc)) from exc
            if isinstance(exc, psycopg.Error) and _storage_cause(exc) is not None:
                self._lost(prepared.servers)
            raise
        assert row is not None
        first = int(row[0])
        index.commit_from(_PROPOSED, first)
        delta = first - _PROPOSED
        for job, results in zip(jobs, prepared.answers, strict=True):
            job.results = _renumbered(results, delta)
        self._head = max(self._head, first + sum(prepared.counts) - 1)

    def _prepare(self, jobs: list[AppendJob[W]]) -> _Prepared[W]:
        index, fences = self._index, self._fences
        fencing = self._fencing
        prepared: _Prepared[W] = _Prepared(jobs=jobs)
        seq = _PROPOSED
        for job in jobs:
            results, fresh = index.claim(job.keys, seq)
            prepared.answers.append(results)
            if fresh is None:
                count, body = len(results), job.body
            elif fresh:
                messages = job.messages
                if isinstance(messages, RawMessages):
                    body = messages.body(fresh)
                else:
                    body = encode_body([messages[i] for i in fresh])
                count = len(fresh)
                job.body = body = pack_body(body)
            else:
                continue
            sid = job.server_id
            epoch = fences.get(sid) if fencing and sid != MAIL_SERVER else None
            if fencing and sid != MAIL_SERVER and epoch is None:  # unfenced since _unfenced
                index.rollback()
                raise StaleEpochError(sid, "its fence was lifted")
            prepared.servers.append(sid)
            prepared.epochs.append(epoch)
            prepared.counts.append(count)
            prepared.received.append(job.received_at)
            prepared.bodies.append(body)
            seq += count
        return prepared

    def _lost(self, servers: Sequence[str]) -> None:
        """The connection broke during a commit, which may have committed: drop the
        connection, and learn those servers' newest batches before writing again."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()
        if not self._doubtful:
            self._doubt_after = self._head
        self._doubtful.update(servers)

    def _as_error(self, exc: Exception) -> StoreError:
        if isinstance(exc, StoreError):
            return exc
        cause = _storage_cause(exc)
        _failures.note(
            ("write", cause is not None, type(exc).__name__),
            "store_write_failed",
            level="error" if cause is not None else "warning",
            writer="pg",
            error=repr(exc),
        )
        if cause is not None:
            if self._conn is not None and self._conn.broken:
                self._lost([])
            error: StoreError = StorageUnavailableError(cause)
        else:
            error = StoreError(f"write failed: {exc}")
        error.__cause__ = exc
        return error


def _weight(job: Job[Any]) -> int:
    return len(job.keys) if isinstance(job, AppendJob) else 1


def _renumbered(results: Sequence[AppendResult], delta: int) -> Sequence[AppendResult]:
    """``results`` with every seq claimed from the proposed base moved by ``delta``."""
    if isinstance(results, FreshResults):
        return FreshResults(results.first_seq + delta, results.length)
    return [AppendResult(r.seq + delta, r.duplicate) if r.seq >= _PROPOSED else r for r in results]
