"""The directory's table in PostgreSQL: :class:`PgDirectoryDb`, the port
:class:`~switchboard.directory.interface.DirectoryDb` over the shared connection.

The directory's rules (claims as compare-and-set under owner tokens) stay in
``switchboard.directory``; this port runs its SQL here. A write transaction first locks the table
against other writers (a claim reads, then writes, and must not race another instance's), and
bumps ``versions('directory')`` as it commits.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

import psycopg

from switchboard.cluster.pg.probe import shown_url
from switchboard.cluster.pg.schema import migrate
from switchboard.cluster.pg.shared import SharedTables
from switchboard.directory.errors import DirectoryUnavailable
from switchboard.directory.interface import Dialect
from switchboard.store.records import StoreError

__all__ = ["PgDirectoryDb"]

_POSTGRES: Final = Dialect(
    tag_is="EXISTS (SELECT 1 FROM json_array_elements_text(tags::json) AS t(v) WHERE v = ?)",
    tag_contains=(
        "EXISTS (SELECT 1 FROM json_array_elements_text(tags::json) AS t(v) "
        "WHERE strpos(lower(v), ?) > 0)"
    ),
    contains=lambda column: f"strpos({column}, ?) > 0",
)


def _sql(text: str) -> str:
    """The directory's ``?`` parameters as psycopg's ``%s`` (its SQL has no other ``?``)."""
    return text.replace("%", "%%").replace("?", "%s")


class PgDirectoryDb:
    """The ``directory_entries`` table of the shared database."""

    def __init__(self, tables: SharedTables, url: str, *, owned: bool = False) -> None:
        self._tables = tables
        self._where = shown_url(url)
        self._owned = owned

    @classmethod
    def open(cls, url: str) -> PgDirectoryDb:
        """The table in the database at ``url`` (migrated first), over a connection of its
        own, closed with it (``switchboard agents``).

        Raises:
            DirectoryUnavailable: the database does not answer.
        """
        tables = SharedTables(url)
        try:
            migrate(tables.connection())
        except (psycopg.Error, StoreError) as exc:
            tables.close()
            raise DirectoryUnavailable(f"cannot open directory {shown_url(url)}: {exc}") from exc
        return cls(tables, url, owned=True)

    @property
    def where(self) -> str:
        return self._where

    @property
    def dialect(self) -> Dialect:
        return _POSTGRES

    def rows(self, sql: str, params: Sequence[object] = ()) -> builtins.list[tuple[Any, ...]]:
        try:
            return self._tables.connection().execute(_sql(sql), tuple(params)).fetchall()
        except psycopg.Error as exc:
            raise DirectoryUnavailable(f"cannot read directory {self._where}: {exc}") from exc

    def run(self, sql: str, params: Sequence[object] = ()) -> None:
        self._tables.connection().execute(_sql(sql), tuple(params))

    @contextmanager
    def write(self) -> Iterator[None]:
        try:
            with self._tables.change("directory") as conn:
                conn.execute("LOCK TABLE directory_entries IN SHARE ROW EXCLUSIVE MODE")
                yield
        except psycopg.Error as exc:
            raise DirectoryUnavailable(f"cannot write directory {self._where}: {exc}") from exc

    def close(self) -> None:
        """Close the connection when it is its own (else its opener closes it)."""
        if self._owned:
            self._tables.close()
