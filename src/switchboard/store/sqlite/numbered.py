"""Numbered message ids: the highest ``n`` among ids of the form ``<author id>#<n>``.

What this module knows: one read over the batch rows of one server id. A writer that numbers
its messages per (channel, author) as ``<author id>#1``, ``#2``, ... (mail between agents does,
see docs/agents.md) asks, once at start, where each of its sequences stands, so that the next
number continues without a gap after a restart.

What it deliberately does not know: who numbers messages this way, or why. It is synchronous
and runs on whatever thread calls it (the store's reader thread).
"""

from __future__ import annotations

import sqlite3
from typing import Final

from switchboard.store.mailmark import highest_numbers_in
from switchboard.store.records import StoreError

__all__ = ["highest_numbers"]

_SELECT_SERVER: Final = (
    "SELECT body FROM batches WHERE server_id = ? AND first_seq <= ? ORDER BY first_seq"
)


def highest_numbers(
    conn: sqlite3.Connection, server_id: str, upto: int
) -> dict[tuple[str, str], int]:
    """For every (channel id, author id) of ``server_id``'s messages at or below seq ``upto``,
    the highest ``n`` of a message id ``<author id>#<n>`` (``n`` a positive integer).

    Raises:
        StoreError: the database could not be read, or a stored batch could not be decoded.
    """
    try:
        rows = conn.execute(_SELECT_SERVER, (server_id, upto)).fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the messages of {server_id!r}: {exc}") from exc
    return highest_numbers_in(body for (body,) in rows)
