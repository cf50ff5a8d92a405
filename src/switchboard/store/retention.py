"""What every backend's retention shares: the policy, the floor, what a chunk and a pass did,
and the pass itself (:class:`RetentionPasses`).

The rules these describe are in docs/operations.md, "Retention"; the backends' tasks are
:class:`switchboard.store.sqlite.retention.RetentionTask` and
:class:`switchboard.cluster.pg.retention.PgRetentionTask`, which add how a chunk is deleted,
what the rows take and what is done with the space afterwards.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Final, Generic, Protocol, TypedDict, TypeVar

import anyio

from switchboard.store.dedupe import DEFAULT_WINDOW
from switchboard.store.records import StoreClosedError, StoreError

__all__ = [
    "DEFAULT_INTERVAL",
    "Chunk",
    "ChunkBounds",
    "Floor",
    "PassReport",
    "RetentionPasses",
    "RetentionPolicy",
    "RetentionSummary",
    "Usage",
    "scan_head",
]

DEFAULT_INTERVAL: Final = 60.0
"""Seconds between two retention passes when the config says nothing."""


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """What a pass deletes and how it paces itself.

    Attributes:
        retain: Seconds a message is kept at least; None keeps messages whatever their age.
        max_size: Bytes the store may hold (SQLite: pages in use; PostgreSQL: the rows' bytes);
            None sets no cap.
        interval: Seconds between two passes.
        keep_newest: The newest messages that always stay (the duplicate window).
        keep_servers: Server ids whose rows are never deleted.
        chunk_rows: Batch rows deleted per transaction at most.
        chunk_bytes: Bytes of batch bodies deleted per transaction at most (one row at least).
        vacuum_pages: Free pages given back to the file system per transaction.
    """

    retain: float | None = None
    max_size: int | None = None
    interval: float = DEFAULT_INTERVAL
    keep_newest: int = DEFAULT_WINDOW
    keep_servers: frozenset[str] = frozenset()
    chunk_rows: int = 1000
    chunk_bytes: int = 256 * 1024
    vacuum_pages: int = 256

    def __post_init__(self) -> None:
        if self.retain is not None and not self.retain > 0:
            raise ValueError(f"retain must be positive, not {self.retain}")
        if self.max_size is not None and not self.max_size > 0:
            raise ValueError(f"max_size must be positive, not {self.max_size}")
        if not self.interval > 0:
            raise ValueError(f"interval must be positive, not {self.interval}")
        if self.keep_newest < 0 or self.chunk_rows < 1 or self.chunk_bytes < 1:
            raise ValueError("keep_newest must be 0 or more, chunk sizes 1 or more")
        if self.vacuum_pages < 1:
            raise ValueError(f"vacuum_pages must be 1 or more, not {self.vacuum_pages}")

    @property
    def enabled(self) -> bool:
        """Whether a pass can delete anything (an age or a size is set)."""
        return self.retain is not None or self.max_size is not None


@dataclass(frozen=True, slots=True)
class Floor:
    """The highest seq nobody still owes, and what holds it there (for operators)."""

    seq: int
    held_by: str = ""


@dataclass(frozen=True, slots=True)
class Chunk:
    """What one chunk deleted.

    Attributes:
        rows: Batch rows deleted.
        messages: Messages they held.
        body_bytes: Bytes of their bodies.
        scanned_to: The ``first_seq`` of the last row passed (deleted or kept): the next
            chunk starts above it.
        more: Whether eligible rows may remain (the chunk was full).
    """

    rows: int
    messages: int
    body_bytes: int
    scanned_to: int
    more: bool


@dataclass(frozen=True, slots=True)
class PassReport:
    """What one pass did (the ``last`` of :meth:`RetentionTask.last_pass`)."""

    at: float
    took_ms: float
    rows: int
    messages: int
    bytes_freed: int
    file_bytes: int
    used_bytes: int
    floor: int
    held_by: str
    longest_chunk_ms: float = 0.0
    error: str | None = None


class RetentionSummary(TypedDict):
    """What :meth:`RetentionTask.last_pass` answers (JSON-ready)."""

    enabled: bool
    retain_seconds: float | None
    max_size_bytes: int | None
    interval_seconds: float
    passes: int
    deleted_messages: int
    bytes_freed: int
    last: dict[str, object] | None


class ChunkBounds(TypedDict):
    """What one chunk may delete (see :func:`scan_head`)."""

    after_seq: int
    upto_seq: int
    before: float | None
    keep_servers: frozenset[str]
    max_rows: int
    max_bytes: int
    want_bytes: int | None


def scan_head(rows: Sequence[Sequence[Any]], bounds: ChunkBounds) -> tuple[list[int], Chunk]:
    """Which of the oldest batch rows above ``after_seq`` may go, as both backends decide it.

    ``rows`` are the first ``max_rows`` rows above ``after_seq`` in seq order, each
    ``(first_seq, count, server_id, received_at, size)``. A row may go when its last seq is at
    most ``upto_seq``, it was received before ``before`` (any age when None), and its server is
    not in ``keep_servers`` (a kept row is passed over). The scan stops at the first row that
    may not go for its seq or age, once ``max_bytes`` of sizes are taken, or once
    ``want_bytes`` are.

    Returns:
        The ``first_seq`` of each row to delete (ascending), and what the chunk does once they
        are deleted.
    """
    after_seq, upto_seq, before = bounds["after_seq"], bounds["upto_seq"], bounds["before"]
    keep_servers, max_bytes, want_bytes = (
        bounds["keep_servers"],
        bounds["max_bytes"],
        bounds["want_bytes"],
    )
    doomed: list[int] = []
    messages = nbytes = 0
    scanned = after_seq
    stopped = False
    for first_seq, count, server_id, received_at, size in rows:
        if first_seq + count - 1 > upto_seq:
            stopped = True
            break
        young = before is not None and received_at >= before
        if young and server_id not in keep_servers:  # a kept row's age stops nothing
            stopped = True
            break
        if doomed and (nbytes >= max_bytes or (want_bytes is not None and nbytes >= want_bytes)):
            break
        scanned = first_seq
        if server_id in keep_servers:
            continue
        doomed.append(first_seq)
        messages += count
        nbytes += size
    enough = want_bytes is not None and nbytes >= want_bytes
    more = (
        not stopped
        and not enough
        and scanned != after_seq
        and (len(rows) == bounds["max_rows"] or nbytes >= max_bytes)
    )
    return doomed, Chunk(len(doomed), messages, nbytes, scanned, more)


class Usage(Protocol):
    """What a backend's measure of the rows answers (SQLite's pages, PostgreSQL's rows)."""

    @property
    def used_bytes(self) -> int:
        """Bytes ``max_size`` is compared with."""
        ...

    @property
    def file_bytes(self) -> int:
        """Bytes on disk."""
        ...


_U = TypeVar("_U", bound=Usage)

_WINDOW_HOLDS: Final = "the duplicate window (the newest messages)"


@dataclass(slots=True)
class _Totals:
    passes: int = 0
    messages: int = 0
    bytes_freed: int = 0
    last: PassReport | None = None


class RetentionPasses(ABC, Generic[_U]):
    """The schedule and the pass every backend runs; a backend says how to delete a chunk,
    measure the rows and tidy up after a pass that deleted something.

    A pass: ask the floor, lower it to below the duplicate window, delete what ``retain``
    allows, then while the rows exceed ``max_size`` delete the oldest of what may go, pausing
    between two chunks as long as one took; then tidy up, measure again and report
    (``retention_pass``: INFO when it deleted something, else DEBUG).

    Args:
        policy: What to delete.
        floor: Asked at the start of every pass for the highest seq nobody still owes.
        clock: Unix seconds (the age cut-off); injectable for tests.
    """

    #: The backend's logger (the events carry its module's name).
    _log: ClassVar[Any]
    #: Fields added to ``retention_started`` and ``retention_pass``.
    _log_tags: ClassVar[Mapping[str, object]] = {}

    def __init__(
        self,
        policy: RetentionPolicy,
        floor: Callable[[], Awaitable[Floor]],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._policy = policy
        self._floor = floor
        self._clock = clock
        self._scanned = 0  # rows at or below this first_seq are gone or kept
        self._longest = 0.0  # the longest chunk of the pass running, in ms
        self._totals = _Totals()

    @property
    def policy(self) -> RetentionPolicy:
        """The policy it applies."""
        return self._policy

    @abstractmethod
    def _latest_seq(self) -> int:
        """The highest seq the store holds."""

    @abstractmethod
    async def _usage(self) -> _U:
        """What the rows take now."""

    @abstractmethod
    async def _delete_chunk(self, bounds: ChunkBounds) -> tuple[Chunk, float]:
        """Delete one chunk; answer what it did and the seconds it held the backend."""

    @abstractmethod
    async def _tidy(self, before: _U) -> None:
        """Give the space of a pass that deleted something back (may raise StoreError)."""

    async def _floor_now(self) -> Floor:
        """The floor of the pass starting."""
        return await self._floor()

    async def _pause(self, took: float, *, last: bool) -> None:
        """After a chunk that held the backend ``took`` seconds, before what comes next."""
        if not last:
            # Leave the backend to ingest for as long as the chunk held it: a pass takes at
            # most half of its time, however much it has to delete.
            await anyio.sleep(took)

    def _starting(self) -> None:
        """Called when :meth:`run` starts, before its first pass."""

    def _usage_fields(self, after: _U) -> dict[str, object]:
        """What ``retention_pass`` says of the rows' size after the pass."""
        return {"file_bytes": after.file_bytes}

    async def run(self) -> None:
        """Run a pass, wait ``interval`` seconds, and again, until cancelled or the store
        closes. A pass that fails is logged and the next one tries again."""
        policy = self._policy
        if not policy.enabled:
            return
        self._starting()
        self._log.info(
            "retention_started",
            **self._log_tags,
            retain_seconds=policy.retain,
            max_size_bytes=policy.max_size,
            interval_seconds=policy.interval,
        )
        while True:
            try:
                await self.run_pass()
            except StoreClosedError:
                return
            except StoreError as exc:
                self._log.warning("retention_pass_failed", error=str(exc))
            await anyio.sleep(policy.interval)

    async def run_pass(self) -> PassReport:
        """Delete what the policy allows now, chunk by chunk, and report it.

        Raises:
            StoreError: the store refused a chunk (what was committed before stays deleted).
        """
        policy = self._policy
        started = time.perf_counter()
        at = self._clock()
        self._longest = 0.0
        floor = await self._floor_now()
        upto, held_by = floor.seq, floor.held_by
        window_top = self._latest_seq() - policy.keep_newest
        if window_top < upto:
            upto, held_by = window_top, _WINDOW_HOLDS
        before = await self._usage()
        rows = messages = 0
        try:
            if policy.retain is not None:
                r, m = await self._prune(upto, at - policy.retain, None)
                rows, messages = rows + r, messages + m
            if policy.max_size is not None:
                r, m = await self._cap(upto, policy.max_size)
                rows, messages = rows + r, messages + m
            if rows:
                await self._tidy(before)
        except StoreError as exc:
            self._record(started, at, rows, messages, before, before, upto, held_by, str(exc))
            raise
        after = await self._usage()
        return self._record(started, at, rows, messages, before, after, upto, held_by, None)

    async def _prune(self, upto: int, before: float | None, want: int | None) -> tuple[int, int]:
        policy = self._policy
        rows = messages = 0
        while True:
            chunk, took = await self._delete_chunk(
                ChunkBounds(
                    after_seq=self._scanned,
                    upto_seq=upto,
                    before=before,
                    keep_servers=policy.keep_servers,
                    max_rows=policy.chunk_rows,
                    max_bytes=policy.chunk_bytes,
                    want_bytes=want,
                )
            )
            self._longest = max(self._longest, took * 1000)
            self._scanned = chunk.scanned_to
            rows += chunk.rows
            messages += chunk.messages
            if want is not None:
                want -= chunk.body_bytes
            done = not chunk.more or (want is not None and want <= 0)
            await self._pause(took, last=done)
            if done:
                return rows, messages

    async def _cap(self, upto: int, max_size: int) -> tuple[int, int]:
        rows = messages = 0
        while True:
            now = await self._usage()
            excess = now.used_bytes - max_size
            if excess <= 0:
                return rows, messages
            r, m = await self._prune(upto, None, excess)
            if r == 0:  # nothing more may go: the cap waits for acknowledgements
                return rows, messages
            rows, messages = rows + r, messages + m

    def _record(
        self,
        started: float,
        at: float,
        rows: int,
        messages: int,
        before: _U,
        after: _U,
        floor: int,
        held_by: str,
        error: str | None,
    ) -> PassReport:
        took_ms = round((time.perf_counter() - started) * 1000, 1)
        freed = max(before.used_bytes - after.used_bytes, 0)
        longest = round(self._longest, 1)
        report = PassReport(
            at=at,
            took_ms=took_ms,
            rows=rows,
            messages=messages,
            bytes_freed=freed,
            file_bytes=after.file_bytes,
            used_bytes=after.used_bytes,
            floor=floor,
            held_by=held_by,
            longest_chunk_ms=longest,
            error=error,
        )
        totals = self._totals
        totals.passes += 1
        totals.messages += messages
        totals.bytes_freed += freed
        totals.last = report
        fields = {
            **self._log_tags,
            "rows": rows,
            "messages": messages,
            "bytes_freed": freed,
            **self._usage_fields(after),
            "took_ms": took_ms,
            "longest_chunk_ms": longest,
            "floor": floor,
            "held_by": held_by,
        }
        if messages:
            self._log.info("retention_pass", **fields)
        else:
            self._log.debug("retention_pass", **fields)
        return report

    def last_pass(self) -> RetentionSummary:
        """A JSON-ready summary for the status surface: the settings, how many passes ran,
        what they deleted in total, and the last pass (None before the first)."""
        policy, totals = self._policy, self._totals
        return {
            "enabled": policy.enabled,
            "retain_seconds": policy.retain,
            "max_size_bytes": policy.max_size,
            "interval_seconds": policy.interval,
            "passes": totals.passes,
            "deleted_messages": totals.messages,
            "bytes_freed": totals.bytes_freed,
            "last": None if totals.last is None else asdict(totals.last),
        }
