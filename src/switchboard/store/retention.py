"""What every backend's retention shares: the policy, the floor, what a chunk and a pass did.

The rules these describe are in docs/operations.md, "Retention"; the backends' tasks are
:class:`switchboard.store.sqlite.retention.RetentionTask` and
:class:`switchboard.cluster.pg.retention.PgRetentionTask`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypedDict

from switchboard.store.dedupe import DEFAULT_WINDOW

__all__ = [
    "DEFAULT_INTERVAL",
    "Chunk",
    "Floor",
    "PassReport",
    "RetentionPolicy",
    "RetentionSummary",
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
