"""A database of its own for a test, on the shared PostgreSQL server.

The server is the machine's (127.0.0.1:5432, trust, user postgres; ``SWITCHBOARD_TEST_PG``
names another admin URL). Each database has a unique name and is dropped afterwards, so tests
never see each other's rows. A server that does not answer fails the test: it never skips.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

__all__ = ["ADMIN_URL", "database_url", "fresh_database"]

ADMIN_URL: Final = os.environ.get(
    "SWITCHBOARD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def database_url(name: str, admin_url: str = ADMIN_URL) -> str:
    """The URL of the database ``name`` on the server of ``admin_url``."""
    return urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))


@contextmanager
def fresh_database(prefix: str = "sbtest", admin_url: str = ADMIN_URL) -> Iterator[str]:
    """Create an empty database with a unique name; yield its URL; drop it (even when
    connections to it are still open)."""
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield database_url(name, admin_url)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
