"""What host checks send and how they read the answers: probes, grants, and gates.

What this module knows:

- well-formed params the kit sends as a connector (``push/event``);
- how to read a host's grant from its ``featureSets/update`` (``effectiveCapabilities``, read
  with the protocol's one-segment matcher) and its enabled feature sets;
- whether a one-message answer admitted the message, and whether an answer is the
  ``-32002`` refusal of a revoked or ungranted capability;
- which capability each host-to-server method needs (``context/beforeInference`` needs
  ``observe`` or any ``inject.*`` leaf), to judge everything a host sends against its grant;
- the bare parents of the capability vocabulary (``channels``, ``contextHooks`` ...), which
  a one-segment matcher treats as granting nothing.

What it deliberately does not know: which check uses what, or how the host was started.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from switchboard.protocol import CAPABILITY_PATHS, MCPL_VERSION, METHOD_GATES, Grant

from ..common.outcomes import fail
from ..common.reply import Reply
from .session import HostMessage

__all__ = [
    "BARE_PARENTS",
    "EVERYTHING",
    "HOOK_LEAVES",
    "accepted_one",
    "effective",
    "enabled_sets",
    "gate_of",
    "outside_grant",
    "push_params",
    "refusal",
]

EVERYTHING: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "pushEvents": True,
    "modelInfo": True,
    "inferenceLifecycle": True,
    "inferenceRequest": {"streaming": True},
    "contextHooks": {"beforeInference": True},
    "channels": True,
    "featureSets": {"kit.push": {"description": "the kit's push events", "uses": ["pushEvents"]}},
}
"""An advertisement of every capability path (besides ``tools``, which MCP advertises)."""

HOOK_LEAVES: Final = tuple(
    sorted(p for p in CAPABILITY_PATHS if p.startswith("contextHooks.beforeInference."))
)

BARE_PARENTS: Final = frozenset(
    prefix
    for path in CAPABILITY_PATHS
    for prefix in (".".join(path.split(".")[:n]) for n in range(1, path.count(".") + 1))
    if prefix not in CAPABILITY_PATHS
)
"""Dotted prefixes of capability paths that are not paths themselves."""

_HOST_TO_SERVER: Final = frozenset(
    {
        "inference/lifecycle",
        "channels/open",
        "channels/close",
        "channels/publish",
        "channels/outgoing/chunk",
        "channels/outgoing/complete",
        "channels/acknowledge",
        "channels/typing",
        "channels/list",
    }
)


def push_params(
    feature_set: str = "kit.push",
    event_id: str = "kit-event-1",
    *,
    tags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A well-formed ``push/event`` naming ``feature_set``."""
    params: dict[str, Any] = {
        "featureSet": feature_set,
        "eventId": event_id,
        "timestamp": "2026-01-01T00:00:00Z",
        "payload": {"content": [{"type": "text", "text": "a push from the conformance kit"}]},
    }
    if tags is not None:
        params["tags"] = list(tags)
    return params


def _string_list(policy: HostMessage, key: str) -> list[str] | None:
    params = policy.params if isinstance(policy.params, Mapping) else {}
    if key not in params:
        return None
    value = params[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        fail(f"featureSets/update {key} is not a list of strings: {value!r}")
    return list(value)


def effective(policy: HostMessage) -> list[str]:
    """The ``effectiveCapabilities`` of a policy message (absent: nothing granted)."""
    return _string_list(policy, "effectiveCapabilities") or []


def enabled_sets(policy: HostMessage) -> list[str] | None:
    """The ``enabled`` list of a policy message, or ``None`` when it has none."""
    return _string_list(policy, "enabled")


def accepted_one(reply: Reply) -> bool:
    """Whether a one-message ``channels/incoming`` answer admitted the message."""
    results = reply.result.get("results") if isinstance(reply.result, Mapping) else None
    return (
        isinstance(results, list)
        and len(results) == 1
        and isinstance(results[0], Mapping)
        and results[0].get("accepted") is True
    )


def refusal(reply: Reply, what: str) -> str | None:
    """Why ``reply`` is not the ``-32002`` refusal of a capability, or ``None`` when it is."""
    if reply.ok:
        return f"{what} was accepted: {reply.describe()}"
    if reply.code != -32002:
        return f"{what} got {reply.describe()}, not -32002"
    return None


def gate_of(message: HostMessage) -> tuple[str, ...] | None:
    """The capability paths of which ``message`` needs one, or ``None`` for an ungated one."""
    if message.method == "context/beforeInference":
        return HOOK_LEAVES
    if message.method == "inference/chunk":
        return ("inferenceRequest",)
    if message.method in _HOST_TO_SERVER:
        return (METHOD_GATES[message.method],)
    return None


def outside_grant(messages: Sequence[HostMessage], grant: Grant) -> list[str]:
    """The gated host messages that ``grant`` does not cover, as ``method (needs ...)``."""
    found: list[str] = []
    for message in messages:
        gates = gate_of(message)
        if gates is not None and not any(grant.allows(g) for g in gates):
            found.append(f"{message.method} (needs {' or '.join(gates)})")
    return found
