"""Limits on what one connector may send: channels, registrations, messages (docs/operations.md,
"Limits").

:class:`TokenBucket` (a rate with a burst, O(1) for a whole batch), :class:`RegistrationLimits`
(a cap on channels and a rate of new registrations, refused item by item), and the errors a
refused request gets: ``-32603`` with a machine-readable ``data.reason`` (``rate-limited``,
``storage-unavailable``, and ``shutting-down`` once the host is stopping), so a connector needs
one rule: an error answer means "not taken, send it again later".

What it deliberately does not know: the wire forms of the methods, the registry, the store.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from switchboard.transport import INTERNAL_ERROR, RpcError

__all__ = [
    "CHANNEL_CAP_REASON",
    "RATE_LIMITED",
    "REGISTRATION_RATE_REASON",
    "SHUTTING_DOWN",
    "STORAGE_UNAVAILABLE",
    "RegistrationBudget",
    "RegistrationLimits",
    "TokenBucket",
    "message_rate_refusal",
    "shutting_down_error",
    "storage_unavailable_error",
]

RATE_LIMITED = "rate-limited"
"""``data.reason`` of a ``channels/incoming`` refused for its rate."""
STORAGE_UNAVAILABLE = "storage-unavailable"
"""``data.reason`` of a request refused because the store's disk refused the write."""
SHUTTING_DOWN = "shutting-down"
"""``data.reason`` of a request refused because the host is stopping."""

CHANNEL_CAP_REASON = (
    "channel limit reached: this connector may have at most {limit} channels registered "
    "(max_channels); remove channels with channels/changed before registering more"
)
"""The per-descriptor reason past ``max_channels`` (formatted with ``limit``)."""
REGISTRATION_RATE_REASON = (
    "registration rate exceeded: at most {rate:g} new channels per second for this connector "
    "(max_registrations_per_second); register it again later"
)
"""The per-descriptor reason past ``max_registrations_per_second`` (formatted with ``rate``)."""


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` held; starts full.

    Args:
        rate: tokens added per second (> 0).
        burst: the most tokens held (>= 1).
        clock: a monotonic clock in seconds.
    """

    __slots__ = ("_clock", "_stamp", "_tokens", "burst", "rate")

    def __init__(
        self, rate: float, burst: float, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = burst
        self._stamp = clock()

    def _refill(self) -> float:
        now = self._clock()
        tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._tokens, self._stamp = tokens, now
        return tokens

    def available(self) -> int:
        """Whole tokens that can be taken now."""
        return max(0, math.floor(self._refill()))

    def take(self, n: int) -> float:
        """Take ``n`` tokens if they are there (a batch larger than ``burst`` passes when the
        bucket is full, and leaves it in debt); otherwise take nothing.

        Returns:
            0.0 when taken; else the seconds until ``n`` (at most ``burst``) tokens are there.
        """
        tokens = self._refill()
        need = min(n, self.burst)
        if tokens >= need:
            self._tokens = tokens - n
            return 0.0
        return (need - tokens) / self.rate

    def spend(self, n: int) -> None:
        """Take ``n`` tokens that :meth:`available` said were there."""
        self._tokens -= n


class RegistrationBudget:
    """The places one registration request may fill (see :class:`RegistrationLimits`).

    Call :meth:`admit` once per new descriptor that passed every other check; then
    :meth:`finish` once. The room under the cap is counted at the first :meth:`admit`, so the
    removals a ``channels/changed`` applies before its additions free their places.
    """

    __slots__ = (
        "_bucket",
        "_cap_reason",
        "_max",
        "_rate_reason",
        "_registered",
        "_room",
        "_taken",
        "_tokens",
    )

    def __init__(
        self,
        max_channels: int,
        registered: Callable[[], int],
        tokens: int,
        bucket: TokenBucket | None,
        cap_reason: str,
        rate_reason: str,
    ) -> None:
        self._max = max_channels
        self._registered = registered
        self._room = -1
        self._tokens = tokens
        self._bucket = bucket
        self._cap_reason = cap_reason
        self._rate_reason = rate_reason
        self._taken = 0

    def admit(self) -> str | None:
        """Take one place; the reason it is refused when there is none."""
        taken = self._taken
        if self._room < 0:
            self._room = max(0, self._max - self._registered())
        if taken >= self._room:
            return self._cap_reason
        if taken >= self._tokens:
            return self._rate_reason
        self._taken = taken + 1
        return None

    def admit_many(self, n: int) -> tuple[int, str | None]:
        """:meth:`admit` ``n`` times at once: how many take a place (always the first ones),
        and the reason the others are refused (None when there are none)."""
        if n <= 0:
            return 0, None
        if self._room < 0:
            self._room = max(0, self._max - self._registered())
        taken = self._taken
        admitted = max(0, min(n, self._room - taken, self._tokens - taken))
        self._taken = taken + admitted
        if admitted == n:
            return n, None
        return admitted, self._cap_reason if self._taken >= self._room else self._rate_reason

    def finish(self) -> int:
        """Take the rate's tokens for what was admitted; returns how many were admitted."""
        if self._bucket is not None and self._taken:
            self._bucket.spend(self._taken)
        return self._taken


class RegistrationLimits:
    """One connection's cap on channels and rate of new registrations.

    What it knows:

    - :class:`TokenBucket`: a rate with a burst, refilled lazily from a monotonic clock. Taking
      ``n`` tokens is O(1) whatever ``n`` is, so a whole batch is checked at once.
    - :class:`RegistrationLimits`: a connector's cap on registered channels (``max_channels``) and
      its rate of new registrations (``max_registrations_per_second``; the bucket holds
      ``max_channels`` tokens, so a connector registers its whole set at once and churns at the rate
      afterwards). :meth:`RegistrationLimits.budget` gives one ``channels/register`` (or
      ``channels/changed``) its :class:`RegistrationBudget`: each *new* descriptor that passes
      authorization takes one place; the ones past the cap or the rate are refused item by item with
      :data:`CHANNEL_CAP_REASON` or :data:`REGISTRATION_RATE_REASON` (the itemized answer the spec
      gives a register, mcpl-protocol.md 4.3), and the tokens are taken once per batch.
    - :func:`message_rate_refusal`: the error a ``channels/incoming`` batch past
      ``max_messages_per_second`` gets: ``-32603`` with ``data: {"reason": "rate-limited",
      "retryAfterMs", "limit"}``. The whole batch is refused and nothing of it is acknowledged, so a
      connector that resends what was not acknowledged loses nothing. MCPL 0.5 defines no code for
      "too fast"; ``-32603`` with a machine-readable ``data.reason`` is also what a storage outage
      gets (:func:`storage_unavailable_error`), so a connector needs one rule: an error answer means
      "not taken, send it again later".
    - :func:`storage_unavailable_error`: the error a batch gets when the store's disk refused the
      write: ``-32603`` with ``data: {"reason": "storage-unavailable", "detail"}``.

    Every refusal these cause is logged rate-limited with a count by the session's
    :class:`~switchboard.connections.diagnostics.RefusalLog` (the reasons here are constant strings,
    so each is one series whatever the volume).

    Args:
        max_channels: the most channels registered at once.
        per_second: new registrations per second past the first ``max_channels``; None for
            no rate.
        clock: a monotonic clock in seconds.
    """

    __slots__ = ("_bucket", "_cap_reason", "_rate_reason", "max_channels")

    def __init__(
        self,
        max_channels: int,
        per_second: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_channels = max_channels
        self._bucket = (
            None
            if per_second is None
            else TokenBucket(per_second, max(float(max_channels), per_second), clock=clock)
        )
        self._cap_reason = CHANNEL_CAP_REASON.format(limit=max_channels)
        self._rate_reason = REGISTRATION_RATE_REASON.format(rate=per_second or 0)

    def budget(self, registered: Callable[[], int]) -> RegistrationBudget:
        """The budget of one request; ``registered`` counts the connection's channels (O(1))."""
        bucket = self._bucket
        tokens = bucket.available() if bucket is not None else self.max_channels
        return RegistrationBudget(
            self.max_channels,
            registered,
            tokens,
            bucket,
            self._cap_reason,
            self._rate_reason,
        )


def message_rate_refusal(limit: float, wait: float) -> RpcError:
    """The error of a ``channels/incoming`` batch past ``max_messages_per_second``."""
    return RpcError(
        INTERNAL_ERROR,
        f"Rate limit exceeded: at most {limit:g} messages per second for this connector "
        "(max_messages_per_second); nothing of this batch was accepted, send it again after "
        "data.retryAfterMs",
        {"reason": RATE_LIMITED, "retryAfterMs": math.ceil(wait * 1000), "limit": limit},
    )


def storage_unavailable_error(cause: str) -> RpcError:
    """The error of a request whose write the store's disk refused (nothing acknowledged)."""
    return RpcError(
        INTERNAL_ERROR,
        "Storage unavailable: the host could not store this batch, so nothing of it was "
        "accepted; send it again later",
        {"reason": STORAGE_UNAVAILABLE, "detail": cause},
    )


def shutting_down_error() -> RpcError:
    """The error of a request that arrives once the host is stopping (nothing of it taken)."""
    return RpcError(
        INTERNAL_ERROR,
        "Shutting down: the host is stopping, so nothing of this request was taken; send it "
        "again when the host is back",
        {"reason": SHUTTING_DOWN},
    )
