"""switchboard.directory: the durable directory of agent and service addresses.

Agents are ``@handle`` addresses and services are ``name`` or ``owner:capability`` addresses.
Each entry has a holder identity, capability, tags, description, opaque metadata, online/busy
flags, last-seen, and for agents an optional TTL after which ``prune`` removes it. Addresses are
claimed under owner tokens (stored hashed, never listed). The table lives in the store's SQLite
file beside, but apart from, the message store.

Modules, one concern each:

* :mod:`~switchboard.directory.errors`: the ``DirectoryError`` tree with stable codes and names;
* :mod:`~switchboard.directory.address`: the address grammar;
* :mod:`~switchboard.directory.entry`: ``Entry``, ``Page``, ``ClaimResult``;
* :mod:`~switchboard.directory.interface`: ``DirectoryStore``, what a backend keeps;
* :mod:`~switchboard.directory.directory`: ``Directory``, the SQLite-backed listing and claims;
* :mod:`~switchboard.directory.snapshot`: JSON snapshot export and import.

What this package deliberately does not know: sessions, agent tools, routing, mail, the
config's agents. It imports nothing from the rest of switchboard. See docs/directory.md.
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
