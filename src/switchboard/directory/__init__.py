"""switchboard.directory: the durable directory of agent and service addresses.

Agents are ``@handle`` addresses and services ``name`` or ``owner:capability`` addresses, each
with a holder, capability, tags, description, metadata, online/busy flags and last-seen, claimed
under owner tokens (stored hashed, never listed). :mod:`.interface` is what a backend keeps;
:mod:`.directory` is the SQLite one; :mod:`.errors`, :mod:`.address`, :mod:`.entry` and
:mod:`.snapshot` are its vocabulary and its JSON snapshots. See docs/directory.md.

It imports nothing from the rest of switchboard.
"""

from switchboard.directory.address import MAX_ADDRESS_LENGTH, Kind, validate_address
from switchboard.directory.directory import MAX_LIMIT, Directory, hash_token
from switchboard.directory.entry import ClaimOutcome, ClaimResult, Entry, Page
from switchboard.directory.errors import (
    AlreadyRegistered,
    DirectoryError,
    DirectoryUnavailable,
    HeldByAnotherOwner,
    InvalidArgument,
    InvalidName,
    InvalidSnapshot,
    NameTaken,
    NotFound,
)
from switchboard.directory.interface import DirectoryStore
from switchboard.directory.snapshot import export_snapshot, import_snapshot

__all__ = [
    "MAX_ADDRESS_LENGTH",
    "MAX_LIMIT",
    "AlreadyRegistered",
    "ClaimOutcome",
    "ClaimResult",
    "Directory",
    "DirectoryError",
    "DirectoryStore",
    "DirectoryUnavailable",
    "Entry",
    "HeldByAnotherOwner",
    "InvalidArgument",
    "InvalidName",
    "InvalidSnapshot",
    "Kind",
    "NameTaken",
    "NotFound",
    "Page",
    "export_snapshot",
    "hash_token",
    "import_snapshot",
    "validate_address",
]
