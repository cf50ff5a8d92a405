"""Helpers for the store tests: distinct, realistic records and wire messages on demand, and a
look at the raw batch rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from switchboard.store import IncomingRecord
from switchboard.store.wire import decode_body


def build_record(n: int, **overrides: Any) -> IncomingRecord:
    """A small, distinct message numbered ``n``; any field can be overridden."""
    fields: dict[str, Any] = {
        "server_id": "demo",
        "channel_id": "discord:guild:general",
        "message_id": f"m-{n}",
        "thread_id": None,
        "author_id": f"u-{n % 3}",
        "author_name": f"User {n % 3}",
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}Z",
        "content": [{"type": "text", "text": f"message {n}"}],
        "metadata": None,
        "tags": None,
    }
    fields.update(overrides)
    return IncomingRecord(**fields)


def build_wire(n: int, **overrides: Any) -> dict[str, Any]:
    """The wire form of message ``n`` as a connector sends it; members can be overridden."""
    message: dict[str, Any] = {
        "channelId": "discord:guild:general",
        "messageId": f"m-{n}",
        "author": {"id": f"u-{n % 3}", "name": f"User {n % 3}"},
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}Z",
        "content": [{"type": "text", "text": f"message {n}"}],
    }
    message.update(overrides)
    return message


def batch_rows(db_path: Path) -> list[tuple[int, int, str, float, list[dict[str, Any]]]]:
    """Every stored batch row, body decoded: ``(first_seq, count, server_id, received_at,
    messages)`` in seq order."""
    with sqlite3.connect(db_path) as check:
        rows = check.execute(
            "SELECT first_seq, count, server_id, received_at, body FROM batches ORDER BY first_seq"
        ).fetchall()
    check.close()
    return [(f, c, s, r, decode_body(b)) for f, c, s, r, b in rows]
