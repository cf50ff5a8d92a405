"""Helpers for the store tests: distinct, realistic records on demand."""

from __future__ import annotations

from typing import Any

from switchboard.store import IncomingRecord


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
