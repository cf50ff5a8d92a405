"""Whether a PostgreSQL database answers: what ``switchboard check`` and ``run`` ask first.

What it deliberately does not know: the schema (opening the store migrates it).
"""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["database_problem", "shown_url"]


def shown_url(url: str) -> str:
    """``url`` without its password, fit for a message or a log line."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "the database URL (which cannot be parsed)"
    host = parts.get("host", "localhost")
    port = parts.get("port", "5432")
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"postgresql://{user}{host}:{port}/{parts.get('dbname', '')}"


def database_problem(url: str, *, timeout: float = 5.0) -> str | None:
    """Why the database at ``url`` cannot be used, or ``None`` when it answers a query."""
    try:
        with psycopg.connect(url, connect_timeout=max(1, round(timeout))) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return (
            f"store.url: the database {shown_url(url)} does not answer ({reason}); start it, or "
            "correct `url` in [store]"
        )
    return None
