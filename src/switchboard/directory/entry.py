"""A directory entry as callers see it, and a page of entries.

An ``Entry`` never carries its owner token, nor the token's hash: it says only whether the
address is ``held`` (claimed under a token). This module knows nothing of SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from switchboard.directory.address import Kind

__all__ = ["ClaimOutcome", "ClaimResult", "Entry", "Page"]

ClaimOutcome = Literal["taken", "refreshed", "taken_over"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One listed address: an agent (``@handle``) or a service (``name``, ``owner:capability``).

    ``holder`` is the agent identity that holds the address (one identity may hold several);
    ``ttl`` applies to agents only, and ``expires_at`` is ``last_seen + ttl`` (``None`` when the
    entry has no TTL or is a service, which is never pruned). Times are Unix seconds.
    """

    address: str
    kind: Kind
    holder: str | None
    capability: str
    tags: tuple[str, ...]
    description: str
    metadata: dict[str, object] = field(hash=False)
    online: bool
    busy: bool
    registered_at: float
    last_seen: float
    ttl: float | None
    held: bool

    @property
    def expires_at(self) -> float | None:
        if self.kind != "agent" or self.ttl is None:
            return None
        return self.last_seen + self.ttl

    def to_public(self) -> dict[str, object]:
        """The entry as plain JSON-ready data (what the CLI prints); no token, no hash."""
        return {
            "address": self.address,
            "kind": self.kind,
            "holder": self.holder,
            "capability": self.capability,
            "tags": list(self.tags),
            "description": self.description,
            "metadata": self.metadata,
            "online": self.online,
            "busy": self.busy,
            "registered_at": self.registered_at,
            "last_seen": self.last_seen,
            "ttl": self.ttl,
            "expires_at": self.expires_at,
            "held": self.held,
        }


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """What a claim did: ``taken`` (was free), ``refreshed`` (same token), ``taken_over``."""

    entry: Entry
    outcome: ClaimOutcome


@dataclass(frozen=True, slots=True)
class Page:
    """A slice of a listing or search, ordered by address, with the total before slicing."""

    entries: tuple[Entry, ...]
    total: int
    limit: int
    offset: int
