"""The batch job both backends' writer threads take: :class:`AppendJob`.

A submitted batch is keyed and packed on the caller's thread and carries an opaque waiter; the
writer thread of either backend (SQLite's, PostgreSQL's) fills in its results or its error.

What it deliberately does not know: how or where a batch is written, or how a waiter is woken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from switchboard.store.records import AppendResult, StoreError
from switchboard.store.wire import Key, WireMessage

__all__ = ["AppendJob"]

W = TypeVar("W")


@dataclass(slots=True, eq=False)
class AppendJob(Generic[W]):
    """One submitted batch of wire messages: encoded and keyed on the caller's thread, one
    result per message (or an error) out.

    Attributes:
        server_id: the connector the batch came from.
        keys: each message's ``(server_id, channelId, messageId)``, in order.
        messages: the messages themselves; read again only to re-encode a batch that held
            duplicates.
        body: ``pack_body(encode_body(messages))``, made by the caller; once written, what
            was stored for it (the writer thread encodes it again for a batch that held
            duplicates).
        received_at: unix seconds at which the host accepted the batch.
    """

    server_id: str
    keys: list[Key]
    messages: Sequence[WireMessage]
    body: bytes
    received_at: float
    waiter: W
    results: Sequence[AppendResult] | None = None
    error: StoreError | None = None
