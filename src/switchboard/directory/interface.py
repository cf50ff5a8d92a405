"""The contract a backend of the directory keeps (:class:`~.directory.Directory`, over a port).

The host reaches the directory only through :class:`DirectoryStore`; tests/store/contract/ is
the one suite of it, run against each backend.

Guarantees a backend must give: addresses follow the grammar (:mod:`.address`) or the call
raises ``InvalidName``; a claim is a compare-and-set under an owner token (stored hashed, never
listed): it creates, refreshes under the same token, or refuses (``HeldByAnotherOwner``,
``NameTaken``), and ``force`` is the host's own override; a change is durable when the call
returns; pages are ordered by address.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from switchboard.directory.address import Kind
from switchboard.directory.entry import ClaimResult, Entry, Page

__all__ = ["Dialect", "DirectoryDb", "DirectoryStore"]


class DirectoryStore(Protocol):
    """The directory of agent and service addresses, and their claims."""

    @property
    def path(self) -> str:
        """Where it is kept (``:memory:`` for one that keeps nothing)."""
        ...

    def lookup(self, address: str) -> Entry: ...

    def list(
        self,
        *,
        prefix: str | None = None,
        tag: str | None = None,
        kind: Kind | None = None,
        owner: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page: ...

    def search(self, text: str, *, limit: int = 50, offset: int = 0) -> Page: ...

    def register(
        self,
        address: str,
        *,
        token: str | None = None,
        holder: str | None = None,
        capability: str = "",
        tags: Iterable[str] = (),
        description: str = "",
        metadata: dict[str, object] | None = None,
        ttl: float | None = None,
        online: bool = False,
    ) -> Entry: ...

    def claim(
        self,
        address: str,
        *,
        token: str | None = None,
        holder: str | None = None,
        capability: str | None = None,
        tags: Iterable[str] | None = None,
        description: str | None = None,
        metadata: dict[str, object] | None = None,
        ttl: float | None = None,
    ) -> ClaimResult: ...

    def unregister(
        self, address: str, *, token: str | None = None, force: bool = False
    ) -> Entry: ...

    def retag(
        self, address: str, tags: Iterable[str], *, token: str | None = None, force: bool = False
    ) -> Entry: ...

    def set_busy(
        self, address: str, busy: bool, *, token: str | None = None, force: bool = False
    ) -> Entry: ...

    def set_online(
        self, address: str, online: bool, *, token: str | None = None, force: bool = False
    ) -> Entry: ...

    def touch(self, address: str, *, token: str | None = None, force: bool = False) -> Entry: ...

    def prune(self, *, default_ttl: float | None = None) -> builtins.list[Entry]: ...

    def export_rows(self) -> builtins.list[dict[str, object]]:
        """Every entry as a row of a snapshot (owner tokens as their digests)."""
        ...

    def import_rows(
        self, rows: Sequence[dict[str, object]]
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        """Add the snapshot ``rows`` whose address is free; ``(imported, skipped)``."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the directory's SQL says differently per database: ``?`` is a parameter.

    Attributes:
        tag_is: a condition: one of the row's tags equals the parameter.
        tag_contains: a condition: one of the row's tags contains the parameter (lower case).
        contains: the condition that a text expression contains the parameter.
    """

    tag_is: str
    tag_contains: str
    contains: Callable[[str], str]


class DirectoryDb(Protocol):
    """The database the directory's table lives in: its rows are read and written through
    this port, which turns the database's errors into ``DirectoryUnavailable``: the SQLite file
    (:class:`~.directory.SqliteDirectoryDb`) or a shared database."""

    @property
    def where(self) -> str:
        """Where the table is, for messages (never with a password)."""
        ...

    @property
    def dialect(self) -> Dialect: ...

    def rows(self, sql: str, params: Sequence[object] = ()) -> builtins.list[tuple[Any, ...]]:
        """The rows a query returns."""
        ...

    def run(self, sql: str, params: Sequence[object] = ()) -> None:
        """Run one statement (inside :meth:`write`)."""
        ...

    def write(self) -> AbstractContextManager[None]:
        """A write transaction that serialises writers (a claim reads, then writes), committed
        on a clean exit, rolled back on an error."""
        ...

    def close(self) -> None: ...
