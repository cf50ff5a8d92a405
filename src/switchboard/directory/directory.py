"""``Directory``: the durable listing of agent and service addresses, in the store's database.

It owns one table, ``directory_entries``, beside (never touching) the message store's, reached
through a small port (:class:`~.interface.DirectoryDb`): the SQLite file here
(:class:`SqliteDirectoryDb`), or a shared database's (the cluster extra); calls are
synchronous and short. Claims are compare-and-set under owner tokens (hashed, compared in
constant time): a free address is taken, the same token refreshes it, an address without a
token is taken over by one with a token, anything else is refused. Changes to a held entry need
its token or ``force`` (the operator).

This module does not know about sessions, routing or mail.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, Final, Literal, Self, cast

from switchboard.directory.address import Kind, validate_address
from switchboard.directory.entry import ClaimOutcome, ClaimResult, Entry, Page
from switchboard.directory.errors import (
    AlreadyRegistered,
    DirectoryUnavailable,
    HeldByAnotherOwner,
    InvalidArgument,
    NotFound,
)
from switchboard.directory.interface import Dialect, DirectoryDb

__all__ = [
    "MAX_LIMIT",
    "Directory",
    "SqliteDirectoryDb",
    "hash_token",
]

MAX_LIMIT: Final = 500
_MAX_TAGS: Final = 32
_MAX_TAG: Final = 64
_MAX_TEXT: Final = 1000
_MAX_METADATA: Final = 8192
_BUSY_TIMEOUT_MS: Final = 5000

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS directory_entries (
    address TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('agent', 'service')),
    holder TEXT,
    capability TEXT NOT NULL,
    tags TEXT NOT NULL,
    description TEXT NOT NULL,
    metadata TEXT NOT NULL,
    online INTEGER NOT NULL,
    busy INTEGER NOT NULL,
    registered_at REAL NOT NULL,
    last_seen REAL NOT NULL,
    ttl REAL,
    owner_token_sha256 TEXT
) WITHOUT ROWID
"""
_COLUMNS: Final = (
    "address, kind, holder, capability, tags, description, metadata, online, busy, "
    "registered_at, last_seen, ttl, owner_token_sha256"
)

Row = tuple[
    str, str, str | None, str, str, str, str, int, int, float, float, float | None, str | None
]


def hash_token(token: str) -> str:
    """The stored form of an owner token (hex SHA-256); tokens are meant to be random secrets."""
    if not isinstance(token, str) or not token:
        raise InvalidArgument("an owner token is a non-empty string")
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _token_matches(stored: str | None, token: str | None) -> bool:
    if stored is None or token is None:
        return False
    return hmac.compare_digest(stored, hash_token(token))


def _check_tags(tags: Iterable[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise InvalidArgument("tags are a list of strings, not one string")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag or len(tag) > _MAX_TAG or tag != tag.strip():
            raise InvalidArgument(
                f"tag {tag!r} must be a non-empty string of at most {_MAX_TAG} characters "
                "without surrounding spaces"
            )
        if tag not in out:
            out.append(tag)
    if len(out) > _MAX_TAGS:
        raise InvalidArgument(f"{len(out)} tags given; at most {_MAX_TAGS} are allowed")
    return tuple(out)


def _check_text(what: str, value: str) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise InvalidArgument(f"{what} must be a string of at most {_MAX_TEXT} characters")
    return value


def _check_metadata(metadata: dict[str, object]) -> str:
    if not isinstance(metadata, dict):
        raise InvalidArgument("metadata must be a JSON object")
    try:
        encoded = json.dumps(metadata, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"metadata must be plain JSON: {exc}") from exc
    if len(encoded) > _MAX_METADATA:
        raise InvalidArgument(
            f"metadata is {len(encoded)} bytes as JSON; at most {_MAX_METADATA} are allowed"
        )
    return encoded


def _check_ttl(kind: Kind, ttl: float | None) -> float | None:
    if ttl is None:
        return None
    if kind != "agent":
        raise InvalidArgument("services are never pruned, so they take no ttl")
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
        raise InvalidArgument(f"ttl must be a positive number of seconds, not {ttl!r}")
    if ttl <= 0:
        raise InvalidArgument(f"ttl must be a positive number of seconds, not {ttl!r}")
    return float(ttl)


def _check_holder(holder: str | None) -> str | None:
    if holder is None:
        return None
    if validate_address(holder) != "agent":
        raise InvalidArgument(f"holder {holder!r} must be an agent address such as '@researcher'")
    return holder


def _check_page(limit: int, offset: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_LIMIT}, not {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidArgument(f"offset must be a non-negative integer, not {offset!r}")


def _entry(row: Row) -> Entry:
    kind: Kind = "agent" if row[1] == "agent" else "service"
    metadata = json.loads(row[6])
    return Entry(
        address=row[0],
        kind=kind,
        holder=row[2],
        capability=row[3],
        tags=tuple(json.loads(row[4])),
        description=row[5],
        metadata=metadata if isinstance(metadata, dict) else {},
        online=bool(row[7]),
        busy=bool(row[8]),
        registered_at=row[9],
        last_seen=row[10],
        ttl=row[11],
        held=row[12] is not None,
    )


class Directory:
    """The directory over one database. ``Directory.open(path)`` opens it in an SQLite file
    (``Directory(db)`` over another :class:`~.interface.DirectoryDb`); close when done.

    It owns one table, ``directory_entries``, created if missing; it shares the file with the
    message store (WAL mode lets both open it) but never touches the store's tables or its
    ``user_version``. Calls are synchronous and short; async callers run them in a worker thread.

    Claim semantics, exactly:

    * a free address is taken, under the owner token if one is given;
    * the same token refreshes the listing (fields left out keep their values), marks it online and
      updates last-seen;
    * an address listed without a token is taken over by a caller with a token (fields left out keep
      their values);
    * otherwise the claim is refused: ``HeldByAnotherOwner`` when another token holds it,
      ``AlreadyRegistered`` when neither side has one.

    Owner tokens are stored as SHA-256 hashes and compared in constant time; no read returns them.
    Changes to a held entry (unregister, retag, busy, online, touch) need its token, or
    ``force=True`` (the operator). This module does not know about sessions, routing or mail.

    Args of ``open``:
        path: the store's database file (created if missing).
        clock: returns Unix seconds; tests pass a fake one instead of sleeping.
    """

    def __init__(self, db: DirectoryDb, clock: Callable[[], float] = time.time) -> None:
        """Over ``db``, the table's database (:meth:`open` makes the SQLite one)."""
        self._db = db
        self._clock = clock

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time) -> Self:
        """Open (creating if needed) the directory table in the SQLite database at ``path``.

        Raises:
            DirectoryUnavailable: the file cannot be opened, is not a database, or cannot be put
                in WAL mode.
        """
        return cls(SqliteDirectoryDb.open(path), clock)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def path(self) -> str:
        """Where the table is (a file's path, or a database named without its password)."""
        return self._db.where

    # -- reads ---------------------------------------------------------------------------------

    def _row(self, address: str) -> Row | None:
        rows = self._db.rows(
            f"SELECT {_COLUMNS} FROM directory_entries WHERE address = ?", (address,)
        )
        return cast(Row, rows[0]) if rows else None

    def lookup(self, address: str) -> Entry:
        """The entry at ``address``.

        Raises:
            InvalidName: the address breaks the grammar.
            NotFound: nothing is listed there.
        """
        validate_address(address)
        row = self._row(address)
        if row is None:
            raise NotFound(
                f"no directory entry for {address!r}; `switchboard agents list` shows all"
            )
        return _entry(row)

    def list(
        self,
        *,
        prefix: str | None = None,
        tag: str | None = None,
        kind: Kind | None = None,
        owner: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Page:
        """Entries matching every filter given, ordered by address, a page at a time.

        ``owner`` matches the holder identity (``@handle``); ``prefix`` the start of the address.
        """
        _check_page(limit, offset)
        where: builtins.list[str] = []
        params: builtins.list[object] = []
        if prefix is not None:
            where.append("substr(address, 1, ?) = ?")
            params += [len(prefix), prefix]
        if tag is not None:
            where.append(self._db.dialect.tag_is)
            params.append(tag)
        if kind is not None:
            if kind not in ("agent", "service"):
                raise InvalidArgument(f"kind must be 'agent' or 'service', not {kind!r}")
            where.append("kind = ?")
            params.append(kind)
        if owner is not None:
            where.append("holder = ?")
            params.append(owner)
        return self._page(where, params, limit, offset)

    def search(self, text: str, *, limit: int = 50, offset: int = 0) -> Page:
        """Entries whose address, capability, description or a tag contains ``text``
        (case-insensitive), ordered by address, a page at a time."""
        _check_page(limit, offset)
        if not isinstance(text, str) or not text:
            raise InvalidArgument("search text must be a non-empty string")
        needle = text.lower()
        has = self._db.dialect.contains
        where = [
            f"({has('lower(address)')} OR {has('lower(capability)')} "
            f"OR {has('lower(description)')} OR {self._db.dialect.tag_contains})"
        ]
        return self._page(where, [needle] * 4, limit, offset)

    def _page(
        self, where: Sequence[str], params: Sequence[object], limit: int, offset: int
    ) -> Page:
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        total = int(self._db.rows(f"SELECT count(*) FROM directory_entries{clause}", params)[0][0])
        rows = cast(
            builtins.list[Row],
            self._db.rows(
                f"SELECT {_COLUMNS} FROM directory_entries{clause} "
                "ORDER BY address LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ),
        )
        return Page(entries=tuple(_entry(r) for r in rows), total=total, limit=limit, offset=offset)

    # -- claims --------------------------------------------------------------------------------

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
    ) -> Entry:
        """List a new address; never refreshes or takes over an existing one.

        Raises:
            InvalidName, InvalidArgument: bad address or field.
            HeldByAnotherOwner: a different token holds it.
            AlreadyRegistered: it is listed (unheld, or held by this same token).
        """
        kind = validate_address(address)
        fields = self._new_fields(kind, holder, capability, tags, description, metadata, ttl)
        stored = hash_token(token) if token is not None else None
        with self._write():
            row = self._row(address)
            if row is not None:
                self._refuse(address, row, token)
                raise AlreadyRegistered(f"{address!r} is already registered")
            self._insert(address, kind, fields, stored, online=online)
        return self.lookup(address)

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
    ) -> ClaimResult:
        """Claim ``address`` under the claim semantics in this module's docstring.

        ``None`` fields are "left out": a new entry gets the empty default, an existing one
        keeps its value. A successful claim marks the entry online and updates last-seen.

        Raises:
            InvalidName, InvalidArgument: bad address or field.
            HeldByAnotherOwner: another token holds it.
            AlreadyRegistered: it is listed and neither side has a token.
        """
        kind = validate_address(address)
        holder = _check_holder(holder)
        new_tags = _check_tags(tags) if tags is not None else None
        if capability is not None:
            _check_text("capability", capability)
        if description is not None:
            _check_text("description", description)
        new_meta = _check_metadata(metadata) if metadata is not None else None
        new_ttl = _check_ttl(kind, ttl)
        stored = hash_token(token) if token is not None else None
        with self._write():
            row = self._row(address)
            if row is None:
                fields = self._new_fields(
                    kind,
                    holder,
                    capability or "",
                    new_tags or (),
                    description or "",
                    metadata,
                    new_ttl,
                )
                self._insert(address, kind, fields, stored, online=True)
                outcome: ClaimOutcome = "taken"
            else:
                held = row[12]
                if held is not None and _token_matches(held, token):
                    outcome = "refreshed"
                elif held is None and token is not None:
                    outcome = "taken_over"
                else:
                    self._refuse(address, row, token)
                    raise AlreadyRegistered(
                        f"{address!r} is already registered and neither it nor this claim has "
                        "an owner token; claim with a token, or remove it first"
                    )
                self._db.run(
                    "UPDATE directory_entries SET holder = coalesce(?, holder), "
                    "capability = coalesce(?, capability), tags = coalesce(?, tags), "
                    "description = coalesce(?, description), metadata = coalesce(?, metadata), "
                    "ttl = coalesce(?, ttl), online = 1, last_seen = ?, "
                    "owner_token_sha256 = coalesce(?, owner_token_sha256) WHERE address = ?",
                    (
                        holder,
                        capability,
                        json.dumps(list(new_tags)) if new_tags is not None else None,
                        description,
                        new_meta,
                        new_ttl,
                        self._clock(),
                        stored,
                        address,
                    ),
                )
        return ClaimResult(entry=self.lookup(address), outcome=outcome)

    def unregister(self, address: str, *, token: str | None = None, force: bool = False) -> Entry:
        """Remove ``address``; returns what was listed. A held entry needs its token or force."""
        with self._write():
            entry = self._authorized(address, token, force)
            self._db.run("DELETE FROM directory_entries WHERE address = ?", (address,))
        return entry

    def retag(
        self, address: str, tags: Iterable[str], *, token: str | None = None, force: bool = False
    ) -> Entry:
        """Replace the tags of ``address``."""
        encoded = json.dumps(list(_check_tags(tags)))
        return self._set(address, "tags = ?", (encoded,), token, force)

    def set_busy(
        self, address: str, busy: bool, *, token: str | None = None, force: bool = False
    ) -> Entry:
        """Mark ``address`` busy or idle (also updates last-seen)."""
        return self._set(
            address, "busy = ?, last_seen = ?", (int(busy), self._clock()), token, force
        )

    def set_online(
        self, address: str, online: bool, *, token: str | None = None, force: bool = False
    ) -> Entry:
        """Mark ``address`` online (a session attached) or offline (also updates last-seen)."""
        return self._set(
            address, "online = ?, last_seen = ?", (int(online), self._clock()), token, force
        )

    def touch(self, address: str, *, token: str | None = None, force: bool = False) -> Entry:
        """Update last-seen to now (which pushes ``expires_at`` back by the TTL)."""
        return self._set(address, "last_seen = ?", (self._clock(),), token, force)

    def prune(self, *, default_ttl: float | None = None) -> builtins.list[Entry]:
        """Remove agents whose ``last_seen + ttl`` is at or before now; services never go.

        An agent without its own TTL uses ``default_ttl`` (when given) or is kept. Returns the
        removed entries, ordered by address.
        """
        if default_ttl is not None:
            _check_ttl("agent", default_ttl)
        now = self._clock()
        condition = (
            "kind = 'agent' AND coalesce(ttl, ?) IS NOT NULL AND last_seen + coalesce(ttl, ?) <= ?"
        )
        params = (default_ttl, default_ttl, now)
        with self._write():
            rows = cast(
                builtins.list[Row],
                self._db.rows(
                    f"SELECT {_COLUMNS} FROM directory_entries WHERE {condition} ORDER BY address",
                    params,
                ),
            )
            self._db.run(f"DELETE FROM directory_entries WHERE {condition}", params)
        return [_entry(r) for r in rows]

    # -- snapshot support (switchboard.directory.snapshot) -------------------------------------

    def export_rows(self) -> builtins.list[dict[str, object]]:
        """Every entry with its owner-token hash (never the token), for a snapshot file."""
        rows = cast(
            builtins.list[Row],
            self._db.rows(f"SELECT {_COLUMNS} FROM directory_entries ORDER BY address"),
        )
        out: builtins.list[dict[str, object]] = []
        for row in rows:
            public = _entry(row).to_public()
            for key in ("online", "busy", "expires_at", "held"):
                public.pop(key)
            public["owner_token_sha256"] = row[12]
            out.append(public)
        return out

    def import_rows(
        self, rows: Sequence[dict[str, object]]
    ) -> tuple[builtins.list[str], builtins.list[str]]:
        """Insert already-validated snapshot rows, offline and idle, in one transaction;
        addresses already present are skipped. Returns ``(imported, skipped)``."""
        imported: builtins.list[str] = []
        skipped: builtins.list[str] = []
        with self._write():
            for row in rows:
                address = str(row["address"])
                if self._row(address) is not None:
                    skipped.append(address)
                    continue
                self._db.run(
                    f"INSERT INTO directory_entries ({_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?)",
                    (
                        address,
                        row["kind"],
                        row["holder"],
                        row["capability"],
                        json.dumps(row["tags"]),
                        row["description"],
                        json.dumps(row["metadata"], sort_keys=True),
                        row["registered_at"],
                        row["last_seen"],
                        row["ttl"],
                        row["owner_token_sha256"],
                    ),
                )
                imported.append(address)
        return imported, skipped

    # -- internals -----------------------------------------------------------------------------

    def _new_fields(
        self,
        kind: Kind,
        holder: str | None,
        capability: str,
        tags: Iterable[str],
        description: str,
        metadata: dict[str, object] | None,
        ttl: float | None,
    ) -> tuple[str | None, str, str, str, str, float | None]:
        return (
            _check_holder(holder),
            _check_text("capability", capability),
            json.dumps(list(_check_tags(tags))),
            _check_text("description", description),
            _check_metadata(metadata if metadata is not None else {}),
            _check_ttl(kind, ttl),
        )

    def _insert(
        self,
        address: str,
        kind: Kind,
        fields: tuple[str | None, str, str, str, str, float | None],
        stored: str | None,
        *,
        online: bool,
    ) -> None:
        holder, capability, tags, description, metadata, ttl = fields
        now = self._clock()
        self._db.run(
            f"INSERT INTO directory_entries ({_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
            (
                address,
                kind,
                holder,
                capability,
                tags,
                description,
                metadata,
                int(online),
                now,
                now,
                ttl,
                stored,
            ),
        )

    def _refuse(self, address: str, row: Row, token: str | None) -> None:
        """Raise ``HeldByAnotherOwner`` when a token other than ``token`` holds the row."""
        if row[12] is not None and not _token_matches(row[12], token):
            raise HeldByAnotherOwner(
                f"{address!r} is held by another owner; claim a different address, or ask the "
                "operator to remove it (`switchboard agents remove`)"
            )

    def _authorized(self, address: str, token: str | None, force: bool) -> Entry:
        validate_address(address)
        row = self._row(address)
        if row is None:
            raise NotFound(
                f"no directory entry for {address!r}; `switchboard agents list` shows all"
            )
        if not force:
            self._refuse(address, row, token)
        return _entry(row)

    def _set(
        self,
        address: str,
        assignment: str,
        values: tuple[object, ...],
        token: str | None,
        force: bool,
    ) -> Entry:
        with self._write():
            self._authorized(address, token, force)
            self._db.run(
                f"UPDATE directory_entries SET {assignment} WHERE address = ?", (*values, address)
            )
        return self.lookup(address)

    def _write(self) -> AbstractContextManager[None]:
        return self._db.write()


_SQLITE: Final = Dialect(
    tag_is="EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)",
    tag_contains="EXISTS (SELECT 1 FROM json_each(tags) WHERE instr(lower(value), ?) > 0)",
    contains=lambda column: f"instr({column}, ?) > 0",
)


class SqliteDirectoryDb:
    """The table in an SQLite file (WAL, ``synchronous = FULL``)."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self._path = path

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SqliteDirectoryDb:
        """Open (creating if needed) the table in the database at ``path``.

        Raises:
            DirectoryUnavailable: the file cannot be opened, is not a database, or cannot be put
                in WAL mode.
        """
        where = os.fspath(path)
        try:
            conn = sqlite3.connect(where, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise DirectoryUnavailable(f"cannot open directory database {where!r}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal" and where != ":memory:":
                raise DirectoryUnavailable(f"cannot put {where!r} in WAL mode (got {mode!r})")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(_SCHEMA)
        except sqlite3.Error as exc:
            conn.close()
            raise DirectoryUnavailable(f"cannot open directory database {where!r}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return cls(conn, where)

    @property
    def where(self) -> str:
        return self._path

    @property
    def dialect(self) -> Dialect:
        return _SQLITE

    def rows(self, sql: str, params: Sequence[object] = ()) -> builtins.list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:  # the backend's errors never leave the directory
            raise DirectoryUnavailable(f"cannot read directory {self._path!r}: {exc}") from exc

    def run(self, sql: str, params: Sequence[object] = ()) -> None:
        self._conn.execute(sql, params)

    def write(self) -> _Transaction:
        return _Transaction(self._conn, self._path)

    def close(self) -> None:
        self._conn.close()


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error; SQLite errors become
    ``DirectoryUnavailable``."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        self._path = path

    def __enter__(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise DirectoryUnavailable(f"cannot write directory {self._path!r}: {exc}") from exc

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc is None:
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as err:
                self._conn.execute("ROLLBACK")
                raise DirectoryUnavailable(f"cannot write directory {self._path!r}: {err}") from err
            return False
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise DirectoryUnavailable(f"cannot write directory {self._path!r}: {exc}") from exc
        return False
