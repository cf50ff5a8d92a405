"""The store's value types and its one exception root.

What this module knows: the shape of an incoming chat message as the store keeps it (an
``IncomingRecord`` going in, a ``StoredMessage`` coming out with its sequence number), the
answer to an append (``AppendResult``), and the errors the store raises.

What it deliberately does not know: SQLite, JSON, threads or the event loop. Content blocks are
plain JSON objects (MCPL content blocks as dicts); validating them against the protocol models
is the caller's job, so the store never imports :mod:`switchboard.protocol`.

Exception tree::

    StoreError                  a write or read did not happen; nothing committed was lost
     ├── StoreClosedError       the store was closed (or its writer stopped) before the call
     └── StorageUnavailableError  the disk refused the write (full, I/O error, read-only);
                                 the same write can succeed later, once the cause is fixed
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "AppendResult",
    "FreshResults",
    "IncomingRecord",
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


class FreshResults(list[AppendResult]):
    """The results of a batch whose every message was new (none a duplicate).

    A plain list of :class:`AppendResult` in every way; its type tells a caller that no
    result needs looking at for duplicates (the common case, on the hot ingest path).
    """

    __slots__ = ()
