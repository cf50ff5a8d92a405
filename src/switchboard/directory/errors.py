"""The directory's errors: one tree rooted in ``DirectoryError``, each with a stable code and name.

Callers match on the class or on ``code``/``name``, never on the message text; the codes are
part of the public contract (docs/directory.md lists them) and never change meaning.
``AlreadyRegistered`` and ``HeldByAnotherOwner`` are both ``NameTaken``.

This module knows nothing of SQLite or of who raises these.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AlreadyRegistered",
    "DirectoryError",
    "DirectoryUnavailable",
    "HeldByAnotherOwner",
    "InvalidArgument",
    "InvalidName",
    "InvalidSnapshot",
    "NameTaken",
    "NotFound",
]


class DirectoryError(Exception):
    """Root of every error the directory raises.

    Callers (the CLI today; agent tools later) match on the class or on ``code``/``name``, never on
    the message text. The codes are part of the public contract and never change meaning:

    =====  ======================  ===========================================================
    code   name                    meaning
    =====  ======================  ===========================================================
    1      ``not_found``           no entry has that address
    2      ``already_registered``  the address is listed and neither side holds an owner token
    3      ``held_by_another_owner``  another owner token holds the address
    4      ``invalid_name``        the address breaks the grammar (docs/directory.md)
    5      ``invalid_argument``    a field or query value is out of range
    6      ``invalid_snapshot``    a snapshot file is not a directory snapshot
    7      ``directory_unavailable``  the database cannot be opened or used
    =====  ======================  ===========================================================

    ``AlreadyRegistered`` and ``HeldByAnotherOwner`` are both ``NameTaken`` ("name exists or held").
    This module knows nothing of SQLite or of who raises these.
    """

    code: ClassVar[int] = 0
    name: ClassVar[str] = "directory_error"


class NotFound(DirectoryError):
    """No entry has that address."""

    code = 1
    name = "not_found"


class NameTaken(DirectoryError):
    """The address is already listed (the parent of the two ways a claim is refused)."""

    code = 2
    name = "name_taken"


class AlreadyRegistered(NameTaken):
    """The address is listed, and neither the listing nor the caller has an owner token."""

    code = 2
    name = "already_registered"


class HeldByAnotherOwner(NameTaken):
    """Another owner token holds the address."""

    code = 3
    name = "held_by_another_owner"


class InvalidName(DirectoryError):
    """The address does not follow the grammar."""

    code = 4
    name = "invalid_name"


class InvalidArgument(DirectoryError):
    """A field or query value is out of range (a negative TTL, a TTL on a service, ...)."""

    code = 5
    name = "invalid_argument"


class InvalidSnapshot(DirectoryError):
    """A snapshot file is not a directory snapshot; nothing was imported."""

    code = 6
    name = "invalid_snapshot"


class DirectoryUnavailable(DirectoryError):
    """The database file cannot be opened or used."""

    code = 7
    name = "directory_unavailable"
