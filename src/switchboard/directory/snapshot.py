"""Directory snapshots: the whole directory as one JSON document, and loading one back.

The format (version 1)::

    {"format": "switchboard-directory", "version": 1, "exported_at": <unix seconds>,
     "entries": [{"address", "kind", "holder", "capability", "tags", "description",
                  "metadata", "registered_at", "last_seen", "ttl", "owner_token_sha256"}, ...]}

An entry keeps the SHA-256 of its owner token (never the token), so a held address stays held
after a restore. Online and busy are not saved: an imported entry is offline and idle until a
session claims it. Loading checks the whole document first and imports nothing if any part is
wrong; addresses already present are skipped, not overwritten. This module knows nothing of
files or the CLI.
"""

from __future__ import annotations

import math
import re
from typing import Final

from switchboard.directory.address import validate_address
from switchboard.directory.errors import DirectoryError, InvalidSnapshot
from switchboard.directory.interface import DirectoryStore

__all__ = ["FORMAT", "VERSION", "export_snapshot", "import_snapshot"]

FORMAT: Final = "switchboard-directory"
VERSION: Final = 1
_HASH: Final = re.compile(r"[0-9a-f]{64}")


def export_snapshot(directory: DirectoryStore, *, exported_at: float) -> dict[str, object]:
    """The whole directory as a snapshot document (JSON-ready)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "entries": directory.export_rows(),
    }


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_entry(i: int, raw: object) -> dict[str, object]:
    where = f"entries[{i}]"
    if not isinstance(raw, dict):
        raise InvalidSnapshot(f"{where} is not an object")
    needed = {
        "address",
        "kind",
        "holder",
        "capability",
        "tags",
        "description",
        "metadata",
        "registered_at",
        "last_seen",
        "ttl",
        "owner_token_sha256",
    }
    missing = sorted(needed - raw.keys())
    if missing:
        raise InvalidSnapshot(f"{where} lacks {', '.join(missing)}")
    address = raw["address"]
    try:
        kind = validate_address(address) if isinstance(address, str) else None
    except DirectoryError as exc:
        raise InvalidSnapshot(f"{where}: {exc}") from exc
    if kind is None or raw["kind"] != kind:
        raise InvalidSnapshot(f"{where}: address {address!r} is not a valid {raw['kind']!r}")
    holder = raw["holder"]
    if holder is not None and not (isinstance(holder, str) and holder.startswith("@")):
        raise InvalidSnapshot(f"{where}: holder must be an agent address or null")
    if not isinstance(raw["capability"], str) or not isinstance(raw["description"], str):
        raise InvalidSnapshot(f"{where}: capability and description must be strings")
    tags = raw["tags"]
    if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
        raise InvalidSnapshot(f"{where}: tags must be a list of non-empty strings")
    if not isinstance(raw["metadata"], dict):
        raise InvalidSnapshot(f"{where}: metadata must be an object")
    if not _number(raw["registered_at"]) or not _number(raw["last_seen"]):
        raise InvalidSnapshot(f"{where}: registered_at and last_seen must be numbers")
    ttl = raw["ttl"]
    if ttl is not None and (kind != "agent" or not _number(ttl) or ttl <= 0):
        raise InvalidSnapshot(f"{where}: ttl must be null, or a positive number on an agent")
    stored = raw["owner_token_sha256"]
    if stored is not None and not (isinstance(stored, str) and _HASH.fullmatch(stored)):
        raise InvalidSnapshot(f"{where}: owner_token_sha256 must be null or 64 hex digits")
    return raw


def import_snapshot(directory: DirectoryStore, document: object) -> tuple[list[str], list[str]]:
    """Load a snapshot document; returns ``(imported, skipped)`` addresses.

    Raises:
        InvalidSnapshot: the document is not a version-1 directory snapshot (nothing imported).
    """
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidSnapshot(f'not a directory snapshot (expected "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise InvalidSnapshot(
            f"snapshot version {document.get('version')!r} is not supported (this code reads "
            f"version {VERSION})"
        )
    entries = document.get("entries")
    if not isinstance(entries, list):
        raise InvalidSnapshot('"entries" must be a list')
    rows = [_check_entry(i, raw) for i, raw in enumerate(entries)]
    seen: set[object] = set()
    for row in rows:
        if row["address"] in seen:
            raise InvalidSnapshot(f"address {row['address']!r} appears twice in the snapshot")
        seen.add(row["address"])
    return directory.import_rows(rows)
