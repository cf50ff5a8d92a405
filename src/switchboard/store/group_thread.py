"""The thread both store writers run on: a queue, groups, and failure isolation.

What this module knows: one ``sqlite3`` connection owned by one thread, a queue of jobs, and
how to take them in groups. The thread blocks until a job arrives, drains whatever else is
already queued (up to a weight limit) into one group, hands the group to the subclass's
:meth:`GroupThread._process`, then calls :meth:`GroupThread._notify` once. Queue order is
group order. :meth:`GroupThread.stop` queues a sentinel: everything queued before it is still
processed, then the connection is closed and jobs queued later are failed through
:meth:`GroupThread._fail`.

What it deliberately does not know: what a job is, what it writes, or how its waiter is woken;
the message store (:mod:`~switchboard.store.sqlite.writer`) and the decision log
(:mod:`~switchboard.store.sqlite.eventlog_writer`) each say that in a subclass.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import structlog

from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.store.records import StorageUnavailableError, StoreError

__all__ = [
    "FailableJob",
    "GroupThread",
    "WriteLater",
    "as_store_error",
    "storage_cause",
    "write_isolated",
]

log = structlog.get_logger(__name__)

#: Failed writes are logged rate-limited (a full disk fails every write until space is freed):
#: the first of each kind in full, then one counted summary a minute. Writers are threads.
_failures = RateLimitedLog(log)
_failures_lock = threading.Lock()


class FailableJob(Protocol):
    """A job that can carry the error that ended it."""

    error: StoreError | None


J = TypeVar("J")
F = TypeVar("F", bound=FailableJob)


class WriteLater(StoreError):
    """Raised by a write run by :meth:`GroupThread.run_here` that could not take the database's
    write lock at once (another connection to the file holds it): the job goes to the thread,
    which waits for the lock, instead of the submitting thread. A :class:`StoreError`, as all the
    store raises, though it never leaves the store."""


class _Stop:
    """The sentinel that tells the thread to finish."""


_STOP = _Stop()


class GroupThread(ABC, Generic[J]):
    """Runs queued jobs in groups on one thread that owns ``conn``.

    Args:
        conn: the connection the thread owns; it is closed when the thread ends.
        name: the thread's name.
        label: which writer this is, bound to its log events as ``writer``.
        max_group_weight: stop draining the queue into one group past this total weight.
    """

    def __init__(
        self, conn: sqlite3.Connection, *, name: str, label: str, max_group_weight: int
    ) -> None:
        self._conn = conn
        self._label = label
        self._max_group_weight = max_group_weight
        self._queue: queue.SimpleQueue[J | _Stop] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._put: Callable[[J], None] = self._queue.put
        # Jobs put (counted by the one submitting thread) and jobs finished (counted by this
        # thread once a group is processed and reported): equal when the thread is idle.
        self._queued = 0
        self._finished = 0
        self._busy = threading.Lock()  # held while a group is processed, here or in run_here
        self._here = False  # True while run_here processes a job on the submitting thread
        self._lock_wait_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
        self.stopped = False  # set once the thread no longer takes jobs

    def put(self, job: J) -> None:
        """Queue ``job`` for the thread (from the one thread that submits jobs)."""
        self._queued += 1
        self._put(job)

    def idle(self) -> bool:
        """Whether this thread has nothing queued or in hand (from the submitting thread)."""
        return self._finished == self._queued and not self.stopped

    def run_here(self, jobs: list[J]) -> bool:
        """Process ``jobs`` as one group on the calling thread now, if this thread has nothing
        queued or in hand; else do nothing. True when they were processed (their outcomes are
        on the jobs; they are not reported through :meth:`_notify`).

        Why: a job alone, handed to this thread, waits for it to wake and, in a busy process,
        for the GIL, then for the submitting thread to wake again: a few hundred µs of
        round trip for a commit of about 100. When nothing else is queued, doing
        the work at once keeps the order (every job put earlier is finished) and saves both
        hand-offs. Call it only from the thread that calls :meth:`put`.

        The submitting thread never waits for the database: while it works here, SQLite's busy
        timeout is 0, and a write that finds another connection holding the file's write lock
        raises :class:`WriteLater`, leaving the job to :meth:`put` (False).
        """
        if not self.idle() or not self._busy.acquire(blocking=False):
            return False
        conn = self._conn
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            self._here = True
            try:
                self._process(jobs)
            except WriteLater:
                return False
            finally:
                self._here = False
                conn.execute(f"PRAGMA busy_timeout = {self._lock_wait_ms}")
        finally:
            self._busy.release()
        return True

    def backlog(self) -> int:
        """Jobs queued and not yet taken by the thread (approximate; O(1), for a status view)."""
        return self._queue.qsize()

    # -- what a subclass says ---------------------------------------------------------------

    def _weight(self, job: J) -> int:
        """How much of a group's weight limit ``job`` uses."""
        return 1

    @abstractmethod
    def _process(self, group: list[J]) -> None:
        """Write ``group``, leaving each job's outcome on the job."""

    def _notify(self, group: list[J]) -> None:
        """Report finished jobs (from this thread; must be cheap and thread-safe)."""

    def _fail(self, jobs: list[J]) -> None:
        """Fail jobs that can no longer be written (the thread is ending)."""

    # -- running ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish after every job queued so far; returns at once."""
        self._queue.put(_STOP)

    def join(self) -> None:
        """Block until the thread has ended (call :meth:`stop` first)."""
        self._thread.join()

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _run(self) -> None:
        group: list[J] = []
        try:
            stopping = False
            while not stopping:
                group, stopping = self._collect()
                if group:
                    with self._busy:
                        self._process(group)
                    # Counted before the report, so whoever the report wakes finds the thread
                    # idle (run_here) when nothing else was queued meanwhile.
                    self._finished += len(group)
                    self._notify(group)
                group = []
        except BaseException:  # pragma: no cover - a bug; fail waiters rather than hang them
            log.exception("store_writer_crashed", writer=self._label)
            self._fail(group)
        finally:
            self.stopped = True
            try:
                self._conn.close()
            except sqlite3.Error as exc:  # pragma: no cover - close of a healthy connection
                log.warning("store_close_failed", writer=self._label, error=repr(exc))
            self._fail(self._drain())

    def _collect(self) -> tuple[list[J], bool]:
        first = self._queue.get()
        if isinstance(first, _Stop):
            return [], True
        group = [first]
        weight = self._weight(first)
        while weight < self._max_group_weight:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Stop):
                return group, True
            group.append(item)
            weight += self._weight(item)
        return group, False

    def _drain(self) -> list[J]:
        jobs: list[J] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return jobs
            if not isinstance(item, _Stop):
                jobs.append(item)


def write_isolated(jobs: list[F], write: Callable[[list[F]], None], *, label: str) -> None:
    """Write ``jobs`` together; if that fails, write each alone and fail only the bad ones."""
    try:
        write(jobs)
        return
    except WriteLater:
        raise
    except Exception as exc:
        if len(jobs) == 1:
            jobs[0].error = as_store_error(exc, label=label)
            return
        with _failures_lock:
            _failures.note(
                ("group", label, type(exc).__name__),
                "store_group_failed",
                writer=label,
                jobs=len(jobs),
                error=repr(exc),
            )
    for job in jobs:
        try:
            write([job])
        except WriteLater:
            raise
        except Exception as exc:
            job.error = as_store_error(exc, label=label)


#: SQLite primary result codes that mean the storage, not the data, refused a write.
_STORAGE_CODES = frozenset(
    {
        sqlite3.SQLITE_FULL,  # database or disk is full (also PRAGMA max_page_count)
        sqlite3.SQLITE_IOERR,  # disk I/O error
        sqlite3.SQLITE_READONLY,  # the file or its folder became read-only
        sqlite3.SQLITE_CANTOPEN,  # the WAL or a journal cannot be created
    }
)


def storage_cause(exc: BaseException) -> str | None:
    """What the storage said when ``exc`` means the storage refused a write, else None.

    SQLite's primary result code decides (an extended code such as ``SQLITE_IOERR_WRITE``
    carries its primary code in the low byte); an ``OSError`` (``ENOSPC``) counts too.
    """
    if isinstance(exc, StorageUnavailableError):
        return exc.cause
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _STORAGE_CODES:
            return str(exc)
        return None
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return None


def as_store_error(exc: Exception, *, label: str) -> StoreError:
    """A fresh StoreError per failed job, chained to what SQLite (or the code) raised: a
    :class:`StorageUnavailableError` when the storage refused the write (see
    :func:`storage_cause`)."""
    cause = storage_cause(exc)
    with _failures_lock:
        _failures.note(
            ("write", label, cause is not None, type(exc).__name__),
            "store_write_failed",
            level="error" if cause is not None else "warning",
            writer=label,
            error=repr(exc),
        )
    error: StoreError
    if cause is not None:
        error = StorageUnavailableError(cause)
    else:
        error = StoreError(str(exc) if isinstance(exc, StoreError) else f"write failed: {exc}")
    error.__cause__ = exc
    return error
