"""The store's value types and its one exception root.

An ``IncomingRecord`` going in, a ``StoredMessage`` coming out with its sequence number, the
answer to an append (``AppendResult``), the decision log's ``Snapshot`` and ``LoadedLog``, and
the ``StoreError`` tree.

What it deliberately does not know: SQLite, JSON, threads or the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import eq
from typing import Any, NamedTuple, overload

__all__ = [
    "AppendResult",
    "FreshResults",
    "IncomingRecord",
    "Leave",
    "LoadedLog",
    "Snapshot",
    "StaleEpochError",
    "StorageUnavailableError",
    "StoreClosedError",
    "StoreError",
    "StoredMessage",
]


class StoreError(Exception):
    """A store operation failed.

    For a write this means the batch was not committed: callers must not report the messages
    as accepted. Everything committed before the failure is still in the database.
    """


class StoreClosedError(StoreError):
    """The store was used after :meth:`MessageStore.aclose` (or its writer stopped)."""


class StorageUnavailableError(StoreError):
    """The storage under the store refused a write: the disk is full, an I/O error, or the
    file became read-only. Nothing of the write was committed; the same write can succeed once
    the cause is fixed (space freed), so callers say "retry later" rather than "invalid".

    Attributes:
        cause: what SQLite (or the OS) said, e.g. ``database or disk is full``.
    """

    def __init__(self, cause: str) -> None:
        super().__init__(f"storage unavailable: {cause}")
        self.cause = cause


class StaleEpochError(StoreError):
    """A batch of a connector this instance no longer owns (in cluster mode): its lease epoch
    is not the one the shared store holds, or it holds none. Nothing was committed; the
    connector's new owner takes the messages again.

    Attributes:
        server_id: the connector whose batch was refused.
    """

    def __init__(self, server_id: str, detail: str) -> None:
        super().__init__(f"this instance does not own {server_id!r}: {detail}")
        self.server_id = server_id


@dataclass(frozen=True, slots=True)
class IncomingRecord:
    """One accepted ``channels/incoming`` message, as it is written to the store.

    The triple ``(server_id, channel_id, message_id)`` identifies the message: the store keeps
    at most one message per triple, so a connector that retries gets the original answer.

    Attributes:
        server_id: the connector (MCPL server) the message came from.
        channel_id: the channel id as the connector registered it (may contain colons).
        message_id: the connector's id for the message, unique within the channel.
        thread_id: the thread inside the channel, if the connector gave one.
        author_id: the author's id on the connector.
        author_name: the author's display name.
        timestamp: the connector's ISO 8601 timestamp, kept verbatim.
        content: MCPL content blocks as plain JSON objects.
        metadata: the connector's free-form metadata, if any.
        tags: event tags admitted by the host, if any.
    """

    server_id: str
    channel_id: str
    message_id: str
    thread_id: str | None
    author_id: str
    author_name: str
    timestamp: str
    content: list[dict[str, Any]]
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message read back from the store.

    Attributes:
        seq: the store-wide sequence number; strictly increasing in commit order, starting at 1.
        received_at: unix seconds at which the host accepted the message (given by the caller).

    The other attributes are those of :class:`IncomingRecord`.
    """

    seq: int
    server_id: str
    channel_id: str
    message_id: str
    thread_id: str | None
    author_id: str
    author_name: str
    timestamp: str
    content: list[dict[str, Any]]
    metadata: dict[str, Any] | None
    tags: list[str] | None
    received_at: float


class AppendResult(NamedTuple):
    """The store's answer for one appended message.

    A named tuple rather than a dataclass: the writer builds one per message at several
    hundred thousand messages a second, and a tuple is the cheapest immutable value to build.

    Attributes:
        seq: the message's sequence number. For a duplicate this is the seq of the copy that
            was stored first, so the answer to a retried message is stable.
        duplicate: True when ``(server_id, channel_id, message_id)`` was already stored (earlier
            or in the same group, within the store's dedupe window) and nothing new was written.
    """

    seq: int
    duplicate: bool


class FreshResults(Sequence[AppendResult]):
    """The results of a batch whose every message was new: ``AppendResult(seq, False)`` for
    ``length`` consecutive seqs from ``first_seq``, made only when read.

    The hot ingest path only asks whether any message was a duplicate, so fifty named tuples a
    batch were built and freed unread. Compares equal to any sequence of the same
    results (a list of :class:`AppendResult` included).
    """

    __slots__ = ("first_seq", "length")

    def __init__(self, first_seq: int, count: int) -> None:
        self.first_seq = first_seq
        self.length = count

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> AppendResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[AppendResult]: ...
    def __getitem__(self, index: int | slice) -> AppendResult | list[AppendResult]:
        seqs = range(self.first_seq, self.first_seq + self.length)
        if isinstance(index, slice):
            return [AppendResult(seq, False) for seq in seqs[index]]
        return AppendResult(seqs[index], False)

    def __iter__(self) -> Iterator[AppendResult]:
        first = self.first_seq
        return (AppendResult(seq, False) for seq in range(first, first + self.length))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == self.length and all(map(eq, self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # compared like a list, so not hashable

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A compacted state as of ``upto_seq``: replaying the events after it completes it."""

    upto_seq: int
    state: dict[str, Any]


class LoadedLog(NamedTuple):
    """What start-up replays: the latest snapshot (None if none) and the events after it."""

    snapshot: Snapshot | None
    tail: list[dict[str, Any]]


Leave = tuple[str, str, str]
"""That an agent left a channel: ``(agent, server_id, channel_id)``."""
