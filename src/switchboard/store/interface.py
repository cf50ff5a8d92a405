"""The contract every message-store backend keeps (SQLite today; a shared database later).

What this module knows: the operations the host and the agent tools need from durable inboxes
(append in arrival order, read after a sequence number, wait for news, per-agent cursors) and
the guarantees attached to each.

What it deliberately does not know: how or where messages are kept. Nothing here imports
SQLite, threads or an event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, Protocol

from switchboard.store.records import AppendResult, IncomingRecord, StoredMessage

__all__ = ["MessageStoreProtocol"]


class MessageStoreProtocol(Protocol):
    """Durable, ordered inboxes with per-agent cursors.

    Guarantees a backend must give:

    * **Durable before acknowledged.** The awaitable returned by :meth:`submit_wire` (or
      :meth:`submit`) completes only once the batch is committed; a caller may then tell the
      connector it was accepted.
    * **Arrival order.** Batches are committed in the order they were submitted, and messages
      within a batch keep their order; ``seq`` is strictly increasing in that order, and the
      new messages take consecutive seqs.
    * **Idempotent within a window.** ``(server_id, channel_id, message_id)`` is stored at
      most once among the most recent messages (a window the backend documents); a repeat
      answers ``duplicate=True`` with the seq of the stored copy, every time.
    * **Failure is per batch.** A failed write raises ``StoreError`` from that batch's
      awaitable and loses nothing committed before it.
    """

    @property
    def latest_seq(self) -> int:
        """The highest committed seq (0 when empty). Read without I/O."""
        ...

    def submit_wire(
        self, server_id: str, messages: list[dict[str, Any]], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch of validated MCPL wire-form messages now (synchronously, preserving
        call order); the awaitable completes with one result per message once committed."""
        ...

    def submit(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Awaitable[Sequence[AppendResult]]:
        """Queue a batch now (synchronously, preserving call order); the awaitable completes
        with one result per record once the batch is committed."""
        ...

    async def append(
        self, records: Sequence[IncomingRecord], *, received_at: float | None = None
    ) -> Sequence[AppendResult]:
        """``await submit(records, received_at=received_at)``."""
        ...

    async def read(self, after_seq: int, limit: int = 100) -> list[StoredMessage]:
        """Up to ``limit`` messages with ``seq > after_seq``, in seq order; never one above
        the ``latest_seq`` of the moment it was called (visibility follows ``latest_seq``)."""
        ...

    async def wait_for_new(self, after_seq: int, timeout: float) -> bool:  # noqa: ASYNC109
        """True as soon as ``latest_seq > after_seq``; False once ``timeout`` seconds pass."""
        ...

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

    async def count(self) -> int:
        """How many messages are stored (for tests and operations; may be O(n))."""
        ...

    async def aclose(self) -> None:
        """Commit everything already submitted, then release all resources. Idempotent."""
        ...
