"""A database of its own for a test, on the shared PostgreSQL server; or a server of its own.

The shared server is the machine's (127.0.0.1:5432, trust, user postgres; ``SWITCHBOARD_TEST_PG``
names another admin URL). Each database has a unique name and is dropped afterwards, so tests
never see each other's rows. A test that stops a server makes its own (:func:`private_server`:
initdb under the ``postgres`` user). A server that does not answer fails the test: it never
skips.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

__all__ = [
    "ADMIN_URL",
    "PrivateServer",
    "database_for_test",
    "database_url",
    "drop_test_databases",
    "fresh_database",
    "private_server",
]

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


#: Databases made by :func:`database_for_test`, dropped by :func:`drop_test_databases`
#: (tests/conftest.py calls it after every test).
_SESSION_DATABASES: list[str] = []


def database_for_test(prefix: str = "sbtest", admin_url: str = ADMIN_URL) -> str:
    """Create an empty database with a unique name, dropped when the test ends."""
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    _SESSION_DATABASES.append(name)
    return database_url(name, admin_url)


def drop_test_databases(admin_url: str = ADMIN_URL) -> None:
    """Drop every database :func:`database_for_test` made."""
    if not _SESSION_DATABASES:
        return
    with psycopg.connect(admin_url, autocommit=True) as conn:
        while _SESSION_DATABASES:
            name = _SESSION_DATABASES.pop()
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


PG_BIN: Final = Path(os.environ.get("SWITCHBOARD_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(*argv: str) -> None:
    """Run ``argv`` as the ``postgres`` user (initdb and the server refuse root)."""
    command = " ".join(shlex.quote(a) for a in argv)
    run = ["su", "postgres", "-s", "/bin/sh", "-c", command] if os.geteuid() == 0 else argv
    subprocess.run(run, check=True, capture_output=True, timeout=120)


class PrivateServer:
    """A PostgreSQL server of one test's own, to stop and start while the shared one runs on."""

    def __init__(self, home: Path) -> None:
        self._home = home
        self._data = home / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        _as_postgres(
            str(PG_BIN / "initdb"),
            "-D",
            str(self._data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        )
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self._home} -c listen_addresses=127.0.0.1"
        _as_postgres(
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(self._data),
            "-o",
            options,
            "-l",
            str(self._home / "log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        """Stop at once, as a crash would (no checkpoint; clients are cut off)."""
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self._data), "-m", "immediate", "-w", "stop")


@contextmanager
def private_server() -> Iterator[PrivateServer]:
    """A fresh PostgreSQL server (initdb under the ``postgres`` user, a free port), stopped and
    removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="sb-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(home, "postgres", "postgres")
        server = PrivateServer(home)
        server.init()
        try:
            yield server
        finally:
            with suppress(subprocess.CalledProcessError):
                server.stop()
    finally:
        shutil.rmtree(home, ignore_errors=True)
