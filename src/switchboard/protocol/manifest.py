"""The server's manifest as read from ``initialize``, and the host's own advertisement.

What this module knows (mcpl-protocol.md 1.2, 1.4, 1.5): where the manifest lives
(``result.capabilities.experimental.mcpl``), that its absence means the connection is
MCP-only, how to read its version, revision, advertised capability paths and feature sets
in both the 0.4 and 0.5 shapes, and what the host honestly advertises back.

What it deliberately does not know: the §17 revision digest (hashing and the identifier
refusal), diffing one manifest against another, or anything about the connection that
delivered it. The manifest is untrusted testimony; nothing here grants anything.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .capabilities import advertised_paths, unknown_advertised_members
from .featuresets import FeatureSetDecl, parse_feature_sets

__all__ = [
    "MCPL_VERSION",
    "MCP_PROTOCOL_VERSION",
    "Manifest",
    "host_advertisement",
    "parse_manifest",
]

MCPL_VERSION: Final = "0.5"

# The MCP protocolVersion the host puts in ``initialize``. MCPL does not change it (§3.1);
# 2025-06-18 is an MCP revision that the fleet's TypeScript and Python connectors accept in
# the handshake.
MCP_PROTOCOL_VERSION: Final = "2025-06-18"


@dataclass(frozen=True, slots=True)
class Manifest:
    """What a server's ``experimental.mcpl`` object says, read tolerantly.

    Attributes:
        version: the declared MCPL version (``"0.5"``, ``"0.4"``...), or ``None``.
        revision: the server-authored revision string, compared only for equality.
        advertised: the capability paths advertised (``tools`` from MCP included).
        feature_sets: declared feature sets by name, valid or not.
        raw: a private deep copy of the ``experimental.mcpl`` object.
        diagnostics: what was ignored or found wrong while reading.
    """

    version: str | None
    revision: str | None
    advertised: frozenset[str]
    feature_sets: dict[str, FeatureSetDecl] = field(hash=False, compare=True)
    raw: dict[str, Any] = field(hash=False, compare=True, repr=False)
    diagnostics: tuple[str, ...] = ()


def _mapping_at(obj: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else None


def parse_manifest(initialize_result: Mapping[str, Any]) -> Manifest | None:
    """Read the server's manifest from an ``initialize`` result.

    Args:
        initialize_result: the ``result`` member of the ``initialize`` response.

    Returns:
        ``None`` when there is no ``capabilities.experimental.mcpl`` object, meaning the
        server is MCP-only and every MCPL behaviour must be skipped (§3.1). Otherwise the
        manifest; it never raises on odd content and records what it ignored.
    """
    capabilities = _mapping_at(initialize_result, "capabilities")
    if capabilities is None:
        return None
    experimental = _mapping_at(capabilities, "experimental")
    mcpl = None if experimental is None else _mapping_at(experimental, "mcpl")
    if mcpl is None:
        return None
    # Read from a private copy so nothing in the result aliases the caller's objects.
    mcpl = copy.deepcopy(dict(mcpl))

    diagnostics: list[str] = []
    raw_version = mcpl.get("version")
    version: str | None
    if isinstance(raw_version, str):
        version = raw_version
    elif isinstance(raw_version, int | float) and not isinstance(raw_version, bool):
        version = str(raw_version)
        diagnostics.append(f"version is a number ({raw_version!r}); read as {version!r}")
    else:
        version = None
        diagnostics.append("version missing or not a string")
    if version is not None and version != MCPL_VERSION:
        diagnostics.append(f"version {version!r} is not {MCPL_VERSION!r}")

    raw_revision = mcpl.get("revision")
    revision = raw_revision if isinstance(raw_revision, str) else None
    if raw_revision is not None and revision is None:
        diagnostics.append("revision ignored: not a string")

    advertised = advertised_paths(mcpl, mcp_capabilities=capabilities)
    diagnostics.extend(
        f"non-spec capability member ignored: {name}" for name in unknown_advertised_members(mcpl)
    )
    feature_sets, fs_diagnostics = parse_feature_sets(mcpl.get("featureSets"))
    diagnostics.extend(fs_diagnostics)

    return Manifest(
        version=version,
        revision=revision,
        advertised=advertised,
        feature_sets=feature_sets,
        raw=mcpl,
        diagnostics=tuple(diagnostics),
    )


def host_advertisement(*, streaming: bool = True) -> dict[str, Any]:
    """Return the object the host sends at ``capabilities.experimental.mcpl`` in ``initialize``.

    It is honest (H-01, AUDIT §2.5): Switchboard implements push events and every channel
    method, and sends ``context/beforeInference`` at the start of each agent turn (keeping
    injections at every position the grant allows), so it advertises those; it sends no
    ``inference/lifecycle`` notifications, answers no ``model/info`` and runs no
    server-initiated inference, so it does not advertise them.

    Args:
        streaming: whether the host streams outgoing text (``channels/outgoing/*``).

    Returns:
        A fresh dict each call, safe to mutate.
    """
    return {
        "version": MCPL_VERSION,
        "pushEvents": True,
        "contextHooks": {"beforeInference": True},
        "channels": {
            "register": True,
            "publish": True,
            "incoming": True,
            "lifecycle": True,
            "streaming": streaming,
            "acknowledge": True,
            "typing": True,
        },
        "featureSets": True,
    }
