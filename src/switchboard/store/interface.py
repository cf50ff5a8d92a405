"""The contracts every backend of the store keeps: the SQLite file, and PostgreSQL (shared).

Every durable thing is reached through one of these protocols: :class:`MessageStoreProtocol`
(batches with a committed head, cursors, mail numbering), :class:`DecisionLogProtocol`,
:class:`LeaveStore` and :class:`LifetimeRecords` (the directory's is
:mod:`switchboard.directory.interface`). Only the composition root names a backend;
tests/store/contract/ is the one suite of these contracts, parametrised by a backend fixture.

What it deliberately does not know: how or where anything is kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from switchboard.store.records import (
    AppendResult,
    IncomingRecord,
    Leave,
    LoadedLog,
    StoredMessage,
)
from switchboard.store.wire import Key, RawMessages, StoredSlice, WireMessage

__all__ = [
    "Batches",
    "Cursors",
    "DecisionLogProtocol",
    "LeaveStore",
    "LifetimeRecords",
    "MailNumbers",
    "MessageStoreProtocol",
    "NumberedDeposits",
]


class Batches(Protocol):
    """Batches of messages, committed in order, read back after a sequence number.

    Guarantees a backend must give:

    * **Durable before acknowledged.** The awaitable a ``submit`` returns completes only once
      the batch is committed; a caller may then tell the connector it was accepted.
    * **Arrival order.** Batches commit in the order they were submitted; messages keep their
      order within a batch; ``seq`` strictly increases in that order, and a batch's new
      messages take consecutive seqs.
    * **Idempotent within a window.** ``(server_id, channel_id, message_id)`` is stored at
      most once among the newest :attr:`dedupe_window` messages; a repeat answers
      ``duplicate=True`` with the seq of the stored copy, every time.
    * **Failure is per batch.** A failed write raises ``StoreError`` from that batch's
      awaitable and loses nothing committed before it; a write the storage refused is a
      ``StorageUnavailableError`` and is told to :meth:`watch_storage` listeners.
    * **Reads follow the head.** A read never returns a message above the :attr:`latest_seq`
      of the moment it was called, and :meth:`watch_head` listeners hear each move of it.
    """

    @property
    def latest_seq(self) -> int:
        """The committed head: the highest committed seq (0 when empty). Read without I/O."""
        ...

    @property
    def dedupe_window(self) -> int:
        """How many of the newest messages duplicates are found among."""
        ...

    @property
    def closed(self) -> bool: ...

    @property
    def waiting(self) -> bool:
        """Whether a caller of :meth:`wait_for_new` is waiting now (a long poll in progress)."""
        ...

    @property
    def write_backlog(self) -> int:
        """Writes queued and not yet committed (for operators)."""
        ...

    @property
    def storage_problem(self) -> str | None:
        """What the storage said when it last refused a write, or None."""
        ...

    def submit_raw(
        self, keys: list[Key], messages: RawMessages, *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch kept as the connector's bytes (``keys``: each message's
        ``(server_id, channel_id, message_id)``) now, preserving call order; the awaitable
        completes with one result per message once committed."""
        ...

    def submit_wire(
        self, server_id: str, messages: list[WireMessage], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of validated MCPL wire-form messages now (see :meth:`submit_raw`)."""
        ...

    def submit(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of records now (see :meth:`submit_raw`)."""
        ...

    async def append(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Sequence[AppendResult]:
        """``await submit(records, received_at=received_at)``."""
        ...

    async def read(self, after_seq: int, limit: int = 100) -> list[StoredMessage]:
        """Up to ``limit`` messages with ``seq > after_seq``, in seq order, none above the head
        of the moment it was called."""
        ...

    async def read_slices(self, after_seq: int, limit: int = 100) -> list[StoredSlice]:
        """The messages :meth:`read` returns, as slices of their batches in wire form (for
        readers that route every batch and keep few of its messages)."""
        ...

    async def wait_for_new(self, after_seq: int, timeout: float) -> bool:  # noqa: ASYNC109
        """True as soon as ``latest_seq > after_seq``; False once ``timeout`` seconds pass."""
        ...

    def watch_head(self, listener: Callable[[int], None]) -> None:
        """Call ``listener`` on the event loop with the new head each time it moves (once per
        commit group here; a shared backend also for commits another instance made)."""
        ...

    def watch_storage(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener`` when the storage starts refusing writes (with the cause) and when
        a write succeeds again (with None)."""
        ...

    async def count(self) -> int:
        """How many messages are stored (for tests and operators; may be O(n))."""
        ...

    async def aclose(self) -> None:
        """Commit everything already submitted, then release all resources. Idempotent."""
        ...


class Cursors(Protocol):
    """Each agent's acknowledged position and delivered mark, durable once set.

    A position must lie within ``0..latest_seq`` (``ValueError`` otherwise), and only ever
    moves forward: setting one below the kept position changes nothing, so two sessions of one
    agent racing (on two instances of a shared store) never move it back.
    """

    async def get_cursor(self, agent: str) -> int:
        """The last seq ``agent`` has acknowledged (0 if it never set one)."""
        ...

    async def set_cursor(self, agent: str, seq: int) -> None:
        """Durably record that ``agent`` has acknowledged everything up to ``seq``."""
        ...

    async def get_delivered(self, agent: str) -> int:
        """The highest seq a read of ``agent`` handed out (0 if none)."""
        ...

    async def set_delivered(self, agent: str, seq: int) -> None:
        """Durably record that a read of ``agent`` handed out messages up to ``seq``."""
        ...


class MailNumbers(Protocol):
    """Where numbered message ids (``<author id>#<n>``) stand: how mail is numbered."""

    async def highest_numbers(self, server_id: str) -> dict[tuple[str, str], int]:
        """For every (channel id, author id) of ``server_id``'s committed messages, the highest
        ``n`` of a message id ``<author id>#<n>``."""
        ...


@runtime_checkable
class NumberedDeposits(Protocol):
    """A store several processes write to, which numbers each deposit inside its commit (one
    counter row per (channel id, author id)), so numbers have no gap and no repeat across
    processes. A store without it is numbered by its one writer from
    :meth:`MailNumbers.highest_numbers`."""

    def submit_numbered(
        self, record: IncomingRecord, *, received_at: float | None = None
    ) -> Awaitable[tuple[AppendResult, int]]:
        """Queue ``record`` (a message of one ``(channel id, author id)`` sequence) now; once
        committed, its result and its number ``n``: its message id is ``<author id>#<n>`` and,
        when it has metadata, ``metadata["n"]`` is ``n`` (the record's own are replaced)."""
        ...


class MessageStoreProtocol(Batches, Cursors, MailNumbers, Protocol):
    """The message store: batches, cursors and mail numbering (see each part)."""


class DecisionLogProtocol(Protocol):
    """The decision log: events in commit order, and snapshots that compact them.

    Appends and snapshots commit in the order they were queued; a batch's events take
    consecutive seqs; a failed batch stores none of its events.
    """

    @property
    def latest_seq(self) -> int: ...

    def append(self, events: Sequence[Mapping[str, Any]]) -> Awaitable[int]:
        """Queue a batch of events now; the awaitable gives its last seq once committed."""
        ...

    def snapshot(
        self, state: Mapping[str, Any], upto_seq: int, *, compact: bool = True
    ) -> Awaitable[None]:
        """Queue storing ``state`` as the log up to ``upto_seq`` (``compact``: drop what it
        covers)."""
        ...

    async def read_all(self, after_seq: int = 0) -> list[dict[str, Any]]:
        """Every retained event with ``seq > after_seq``, in seq order."""
        ...

    async def load(self) -> LoadedLog:
        """The latest snapshot and every event after it: what start-up replays."""
        ...

    async def aclose(self) -> None: ...


class LeaveStore(Protocol):
    """Which agents left which channels (``(agent, server_id, channel_id)``), durably."""

    @property
    def version(self) -> int:
        """Raised by every change (readers rebuild what they derived from the rows)."""
        ...

    def __contains__(self, key: object) -> bool: ...

    def __len__(self) -> int: ...

    def rows(self) -> frozenset[Leave]: ...

    def leave(self, agent: str, server_id: str, channel_id: str) -> bool:
        """Record that ``agent`` left the channel; False when it had already."""
        ...

    def rejoin(self, agent: str, server_id: str, channel_id: str) -> bool:
        """Forget that ``agent`` left the channel; False when it had not."""
        ...

    def close(self) -> None: ...


class LifetimeRecords(Protocol):
    """The host's owner token (under which it claims its agents' addresses) and each configured
    agent's incarnation count, kept across restarts."""

    def start(self, names: list[str], seen: dict[str, int]) -> tuple[str, dict[str, int]]:
        """The owner token (made on first use) and each name's new incarnation: one more than
        the larger of the kept count and ``seen``; the new counts are kept."""
        ...
