"""Policy and push messages: ``featureSets/update``, its receipt, and ``push/event``.

What this module knows (mcpl-protocol.md 3.3-3.5, 3.8): the shape of the grant the host
sends, the degradation receipt the server answers with, read tolerantly (an unknown ``mode``
such as matrix's ``"full"``, extra members, and a bare ``{accepted:true}`` are all fine), and
the params and result of ``push/event``.

What it deliberately does not know: what to do with a receipt. A receipt is testimony about
consequences and never widens a grant (3.5); applying fallbacks and ordering grant changes
is the host's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import Field

from .content import ContentBlock
from .wire import JsonObject, WireModel

__all__ = [
    "FALLBACKS",
    "FeatureSetsUpdateParams",
    "PushEventParams",
    "PushEventResult",
    "PushPayload",
    "Receipt",
    "UnavailableFeature",
    "parse_receipt",
]

FALLBACKS: Final[frozenset[str]] = frozenset({"mcp-only", "close"})


class FeatureSetsUpdateParams(WireModel):
    """``featureSets/update`` params. In a Request, an absent grant means *grant nothing*."""

    effective_capabilities: list[str] | None = Field(default=None, alias="effectiveCapabilities")
    denied_capabilities: list[str] | None = Field(default=None, alias="deniedCapabilities")
    enabled: list[str] | None = None
    disabled: list[str] | None = None

    def overlap(self) -> frozenset[str]:
        """Paths literally in both the grant and the denied list (malformed policy, A-14)."""
        if not self.effective_capabilities or not self.denied_capabilities:
            return frozenset()
        return frozenset(self.effective_capabilities) & frozenset(self.denied_capabilities)


class PushPayload(WireModel):
    """``push/event`` ``payload``."""

    content: list[ContentBlock]


class PushEventParams(WireModel):
    """``push/event`` params (§9). ``origin`` and ``tags`` are untrusted claims."""

    feature_set: str = Field(alias="featureSet", min_length=1)
    event_id: str = Field(alias="eventId", min_length=1)
    timestamp: str = Field(min_length=1)
    origin: JsonObject | None = None
    tags: list[str] | None = None
    payload: PushPayload


class PushEventResult(WireModel):
    """``push/event`` result; ``accepted:false`` is for non-authorization outcomes only."""

    accepted: bool
    inference_id: str | None = Field(default=None, alias="inferenceId")
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class UnavailableFeature:
    """One ``unavailableFeatures`` entry of a receipt."""

    feature_set: str | None
    missing_capabilities: tuple[str, ...]
    effect: str | None


@dataclass(frozen=True, slots=True)
class Receipt:
    """A degradation receipt, read tolerantly (3.5).

    Attributes:
        accepted: ``True`` only when the server sent ``accepted: true``; anything else
            (absent, not a boolean) reads as ``False`` with a problem noted.
        fallback: ``"mcp-only"``, ``"close"``, or whatever string the server sent.
        mode: ``"degraded"``, or any other string the server sent (``"full"``...).
        unavailable: the ``unavailableFeatures`` entries that were objects.
        raw: the receipt object as received (a copy), ``{}`` if it was not an object.
        missing_capabilities: the top-level ``missingCapabilities`` strings.
        reason: the top-level ``reason``.
        problems: ways the receipt departs from the spec, for diagnostics.
    """

    accepted: bool
    fallback: str | None
    mode: str | None
    unavailable: list[UnavailableFeature] = field(hash=False)
    raw: dict[str, Any] = field(hash=False, repr=False)
    missing_capabilities: tuple[str, ...] = ()
    reason: str | None = None
    problems: tuple[str, ...] = ()


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _optional_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_receipt(obj: Any) -> Receipt:
    """Read the result of a ``featureSets/update`` Request. Never raises.

    Args:
        obj: the JSON-RPC ``result`` value.

    Returns:
        The receipt. Deviations (no boolean ``accepted``, ``accepted:false`` without a known
        ``fallback``, an entry without ``effect``...) are listed in ``problems``; an
        unknown ``mode`` is kept as given and is not a problem.
    """
    problems: list[str] = []
    if not isinstance(obj, Mapping):
        return Receipt(False, None, None, [], {}, problems=("receipt is not an object",))
    raw = dict(obj)
    accepted = raw.get("accepted")
    if not isinstance(accepted, bool):
        problems.append("accepted missing or not a boolean; read as false")
        accepted = False
    fallback = _optional_str(raw.get("fallback"))
    if not accepted and fallback not in FALLBACKS:
        problems.append(f"accepted:false needs fallback 'mcp-only' or 'close', got {fallback!r}")
    unavailable: list[UnavailableFeature] = []
    entries = raw.get("unavailableFeatures")
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping):
            problems.append("unavailableFeatures entry is not an object; skipped")
            continue
        effect = _optional_str(entry.get("effect"))
        if effect is None:
            problems.append("unavailableFeatures entry without effect")
        unavailable.append(
            UnavailableFeature(
                feature_set=_optional_str(entry.get("featureSet")),
                missing_capabilities=_strings(entry.get("missingCapabilities")),
                effect=effect,
            )
        )
    return Receipt(
        accepted=accepted,
        fallback=fallback,
        mode=_optional_str(raw.get("mode")),
        unavailable=unavailable,
        raw=raw,
        missing_capabilities=_strings(raw.get("missingCapabilities")),
        reason=_optional_str(raw.get("reason")),
        problems=tuple(problems),
    )
