"""Which live instance should own each connector (or singleton job), and when to hand it over.

Rendezvous hashing: the preferred owner of a key is the live instance with the highest
``H(key, instance)``; an instance joining or leaving moves only the keys it wins or held.
Hysteresis keeps owners from flapping (a connector restart can cost a platform session): a
holder hands a key over only after holding it ``min_hold`` seconds and only once the preferred
instance has been live ``preferred_live`` seconds. Pure: no clock, no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Hysteresis", "preferred_owner", "should_hand_over", "weight"]


def weight(key: str, instance: str) -> int:
    """The rendezvous weight of ``instance`` for ``key`` (stable across processes)."""
    digest = hashlib.blake2b(f"{key}\x00{instance}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def preferred_owner(key: str, live: Iterable[str]) -> str | None:
    """The live instance that should own ``key`` (None when no instance is live)."""
    best: str | None = None
    best_weight = -1
    for instance in live:
        w = weight(key, instance)
        if w > best_weight or (w == best_weight and best is not None and instance < best):
            best, best_weight = instance, w
    return best


@dataclass(frozen=True, slots=True)
class Hysteresis:
    """How long a holder keeps a key another instance is preferred for (seconds)."""

    min_hold: float = 60.0
    preferred_live: float = 30.0


def should_hand_over(
    key: str,
    me: str,
    held_for: float,
    live_for: Mapping[str, float],
    rules: Hysteresis,
) -> bool:
    """Whether ``me``, holding ``key`` for ``held_for`` seconds, should release it now.

    ``live_for`` gives each live instance's time since it started. Only a preferred owner that
    is live and has been for ``preferred_live`` seconds takes a key over, and never before the
    holder has had it ``min_hold`` seconds.
    """
    preferred = preferred_owner(key, live_for)
    if preferred is None or preferred == me:
        return False
    return held_for >= rules.min_hold and live_for[preferred] >= rules.preferred_live
