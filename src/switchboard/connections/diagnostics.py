"""What one connection refused, and which feature sets it left disabled, said out loud.

Each feature set the handshake left disabled is logged once with the config line that would
enable it (:func:`disabled_feature_sets`); every refusal the host gives a connector is counted
by kind, method and reason and logged rate-limited (:class:`RefusalLog`). Why: nothing a
connector sends is refused in silence.

What it deliberately does not know: when a refusal is decided (the session, the registration
and the incoming handlers decide and report here), the wire, and the event bus.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from switchboard.protocol import (
    CAPABILITY_PATHS,
    REASON_CAPABILITY_DENIED,
    REASON_INVALID_USES,
    REASON_NOT_SELECTED,
    Grant,
    Manifest,
)
from switchboard.runtime.ratelog import DEFAULT_LOG_INTERVAL, RateLimitedLog

__all__ = [
    "CAPABILITY_DENIED",
    "DESCRIPTOR_REJECTED",
    "INCOMING_REFUSED",
    "INFERENCE_REFUSED",
    "PUSH_REFUSED",
    "REFUSAL_KINDS",
    "REQUEST_REFUSED",
    "DisabledFeatureSet",
    "RefusalCount",
    "RefusalLog",
    "RefusalStatistics",
    "disabled_feature_sets",
    "grant_line",
    "log_disabled",
]

CAPABILITY_DENIED: Final = "capability_denied"
REQUEST_REFUSED: Final = "request_refused"
DESCRIPTOR_REJECTED: Final = "descriptor_rejected"
INCOMING_REFUSED: Final = "incoming_refused"
PUSH_REFUSED: Final = "push_refused"
INFERENCE_REFUSED: Final = "inference_refused"

REFUSAL_KINDS: Final = (
    CAPABILITY_DENIED,
    REQUEST_REFUSED,
    DESCRIPTOR_REJECTED,
    INCOMING_REFUSED,
    PUSH_REFUSED,
    INFERENCE_REFUSED,
)
"""Every kind of refusal counted, in the order :class:`RefusalStatistics` lists them."""


# -- disabled feature sets ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DisabledFeatureSet:
    """One feature set the policy exchange left disabled.

    Attributes:
        name: the set's name as the connector declared it.
        reason: ``invalid_uses``, ``capability_denied``, ``not_selected`` or ``disabled``.
        missing: the ``uses`` entries the grant does not cover (for ``invalid_uses``: the
            entries that are no capability path), in declared order.
        enable_with: the config line that would enable the set, or ``None`` when none can.
        why_not: when ``enable_with`` is ``None``, why no config line enables the set.
    """

    name: str
    reason: str
    missing: tuple[str, ...]
    enable_with: str | None
    why_not: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The set as a JSON object (for logs and the ``channel_list`` tool)."""
        return {
            "name": self.name,
            "reason": self.reason,
            "missing": list(self.missing),
            "enable_with": self.enable_with,
            "why_not": self.why_not,
        }


def grant_line(patterns: Sequence[str]) -> str:
    """The TOML line ``grant = [...]`` for ``patterns``, duplicates removed, order kept."""
    return f"grant = [{', '.join(json.dumps(p) for p in dict.fromkeys(patterns))}]"


def disabled_feature_sets(
    manifest: Manifest,
    grant: Grant,
    status: Mapping[str, str | None],
    *,
    policy: Sequence[str],
    selection: Sequence[str] | None,
    unserved: Mapping[str, str] | None = None,
) -> tuple[DisabledFeatureSet, ...]:
    """Describe every set ``status`` (from ``derive_enabled``) leaves disabled.

    Args:
        manifest: the connector's manifest.
        grant: the effective grant sent to it.
        status: each declared set's reason, ``None`` when enabled.
        policy: the configured ``grant`` patterns, which the suggested line extends.
        selection: the configured ``enabled_feature_sets``, or ``None``.
        unserved: the leaves this connection cannot be served now, each with why (no agent
            could answer its inference); a set that needs one says so in ``why_not``.

    Returns:
        One entry per disabled set, in declaration order.
    """
    out: list[DisabledFeatureSet] = []
    for name, reason in status.items():
        if reason is None:
            continue
        uses = manifest.feature_sets[name].uses if name in manifest.feature_sets else ()
        missing = tuple(p for p in uses if not grant.allows(p))
        if reason == REASON_INVALID_USES:
            bad = tuple(p for p in uses if p not in CAPABILITY_PATHS)
            why = (
                f"its uses {list(bad)} are not MCPL capability paths"
                if bad
                else "it declares no uses"
            )
            out.append(DisabledFeatureSet(name, reason, bad, None, why + "; no grant enables it"))
        elif reason == REASON_CAPABILITY_DENIED:
            out.append(_denied(name, missing, manifest, policy, unserved or {}))
        elif reason == REASON_NOT_SELECTED:
            chosen = [*(selection or ()), name]
            line = f"enabled_feature_sets = [{', '.join(json.dumps(n) for n in chosen)}]"
            out.append(DisabledFeatureSet(name, reason, missing, line))
        else:
            out.append(
                DisabledFeatureSet(name, reason, missing, None, "the host disabled it by policy")
            )
    return tuple(out)


def _denied(
    name: str,
    missing: tuple[str, ...],
    manifest: Manifest,
    policy: Sequence[str],
    unserved: Mapping[str, str],
) -> DisabledFeatureSet:
    cannot = [p for p in missing if p in unserved]
    if cannot:
        why = "; ".join(dict.fromkeys(unserved[p] for p in cannot))
        return DisabledFeatureSet(
            name,
            REASON_CAPABILITY_DENIED,
            missing,
            None,
            f"Switchboard cannot serve {', '.join(cannot)} now: {why}",
        )
    unadvertised = [p for p in missing if p not in manifest.advertised]
    if unadvertised:
        return DisabledFeatureSet(
            name,
            REASON_CAPABILITY_DENIED,
            missing,
            None,
            f"the connector uses {unadvertised} but does not advertise them",
        )
    return DisabledFeatureSet(
        name, REASON_CAPABILITY_DENIED, missing, grant_line([*policy, *missing])
    )


def log_disabled(logger: Any, sets: Sequence[DisabledFeatureSet]) -> None:
    """One line per disabled set: WARNING, or INFO for a set left out of the selection."""
    for s in sets:
        fields: dict[str, Any] = {
            "feature_set": s.name,
            "reason": s.reason,
            "missing": list(s.missing),
        }
        if s.enable_with is not None:
            fields["enable_with"] = s.enable_with
        else:
            fields["why_not"] = s.why_not
        if s.reason == REASON_NOT_SELECTED:
            logger.info("feature_set_not_selected", **fields)
        else:
            logger.warning("feature_set_disabled", **fields)


# -- refusals ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RefusalCount:
    """How often one refusal was given on one connection."""

    kind: str
    method: str
    reason: str
    count: int


@dataclass(frozen=True, slots=True)
class RefusalStatistics:
    """The refusals one connection was given, counted (an immutable snapshot).

    Attributes:
        capability_denied: ``-32002`` answers (outside ``push/event`` and
            ``channels/incoming``, which have their own counts).
        request_refused: other error answers to whole requests.
        descriptors_rejected: descriptors refused in ``channels/register`` or
            ``channels/changed`` (one per item).
        incoming_refused: messages of ``channels/incoming`` not accepted (one per message;
            a whole batch refused counts its messages).
        pushes_refused: ``push/event`` requests answered with an error.
        inference_refused: ``inference/request`` and ``model/info`` requests answered with an
            error (no agent to answer, busy, timed out, the sampling client refused ...).
        by_reason: each (kind, method, reason) and its count, in first-seen order.
    """

    capability_denied: int = 0
    request_refused: int = 0
    descriptors_rejected: int = 0
    incoming_refused: int = 0
    pushes_refused: int = 0
    inference_refused: int = 0
    by_reason: tuple[RefusalCount, ...] = ()

    @property
    def total(self) -> int:
        """Every refusal counted."""
        return (
            self.capability_denied
            + self.request_refused
            + self.descriptors_rejected
            + self.incoming_refused
            + self.pushes_refused
            + self.inference_refused
        )


class RefusalLog:
    """Counts and logs, rate-limited, the refusals one connection is given.

    What it knows:

    - **Disabled feature sets** (:func:`disabled_feature_sets`). For each set the handshake left
      disabled, its name, the reason (``invalid_uses``, ``capability_denied``, ``not_selected``,
      ``disabled``), the ``uses`` the grant does not cover, and the exact config line that would
      enable it, or, when no line can (Switchboard cannot serve a leaf, the connector does not
      advertise one, a ``uses`` entry is no capability path), why not. :func:`log_disabled` writes
      one line per set: a WARNING, except for a set the operator left out of
      ``enabled_feature_sets`` on purpose (INFO).
    - **Refusals** (:class:`RefusalLog`). Every refusal the host gives a connector is counted by
      kind, method and reason, and logged rate-limited (the first in full, then one summary per
      interval with the count; :class:`~switchboard.runtime.ratelog.RateLimitedLog`). The kinds:
      ``capability_denied`` (a ``-32002`` answer), ``request_refused`` (any other error answer),
      ``descriptor_rejected`` (one item of a register or changed), ``incoming_refused`` (one message
      of ``channels/incoming``), ``push_refused`` (a ``push/event`` answered with an error) and
      ``inference_refused`` (an ``inference/request`` or ``model/info`` answered with an error).
      :meth:`RefusalLog.statistics` returns the counts as an immutable :class:`RefusalStatistics`.

    Args:
        logger: the connection's bound logger.
        interval: least seconds between two lines for one (kind, method, reason).
        clock: a monotonic clock.
        notify: told ``(kind, method, reason, count)`` of every refusal counted (the session
            puts it on the host's event bus); it must not block.
    """

    def __init__(
        self,
        logger: Any,
        *,
        interval: float = DEFAULT_LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        notify: Callable[[str, str, str, int], None] | None = None,
    ) -> None:
        self._log = RateLimitedLog(logger, interval=interval, clock=clock)
        self._notify = notify

    def refuse(self, kind: str, method: str, reason: str, *, count: int = 1, **fields: Any) -> None:
        """Count ``count`` refusals of ``kind``; log them if this reason is due.

        ``fields`` (a code, a channel id, a feature set) go on the line but not in the key,
        so one reason about many channels is one rate-limited series.
        """
        if kind not in REFUSAL_KINDS:
            raise ValueError(f"unknown refusal kind {kind!r}")
        if count <= 0:
            return
        if self._notify is not None:
            self._notify(kind, method, reason, count)
        self._log.note(
            (kind, method, reason),
            "connector_refused",
            level="warning",
            count=count,
            kind=kind,
            method=method,
            reason=reason,
            **fields,
        )

    def flush(self) -> None:
        """Write the summaries still owed (when the connection ends)."""
        self._log.flush()

    def statistics(self) -> RefusalStatistics:
        """The counts so far."""
        per_kind = dict.fromkeys(REFUSAL_KINDS, 0)
        rows: list[RefusalCount] = []
        for key, total in self._log.totals().items():
            kind, method, reason = cast(tuple[str, str, str], key)
            per_kind[kind] += total
            rows.append(RefusalCount(kind, method, reason, total))
        return RefusalStatistics(
            capability_denied=per_kind[CAPABILITY_DENIED],
            request_refused=per_kind[REQUEST_REFUSED],
            descriptors_rejected=per_kind[DESCRIPTOR_REJECTED],
            incoming_refused=per_kind[INCOMING_REFUSED],
            pushes_refused=per_kind[PUSH_REFUSED],
            inference_refused=per_kind[INFERENCE_REFUSED],
            by_reason=tuple(rows),
        )
