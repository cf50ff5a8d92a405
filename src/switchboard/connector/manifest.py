"""The connector's own manifest: what it advertises at ``capabilities.experimental.mcpl``.

What this module knows (mcpl-protocol.md 1.4, 1.5, 3.7; S-01, S-02): how a connector's
settings become a conforming 0.5 manifest — ``version`` ``"0.5"``, ``channels`` as an object
of boolean leaves (never the old single boolean), ``pushEvents``, and ``featureSets`` as a
record keyed by name whose every ``uses`` entry is one of the 17 capability paths *and* one
this connector actually advertises. Mistakes there are programming errors, so they raise
``ValueError`` when the :class:`~switchboard.connector.Connector` is built, not at run time.

What it deliberately does not know: the grant, the wire, or the §17 revision digest (the
manifest carries no ``revision``, which the spec allows).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from switchboard.protocol import (
    CAPABILITY_PATHS,
    MCPL_VERSION,
    FeatureSetDecl,
    advertised_paths,
    parse_feature_sets,
    validate_path_charset,
)

__all__ = [
    "CHANNEL_LEAVES",
    "FeatureSetSpec",
    "ServerManifest",
    "build_manifest",
]

CHANNEL_LEAVES: Final[tuple[str, ...]] = (
    "register",
    "lifecycle",
    "publish",
    "incoming",
    "streaming",
    "acknowledge",
    "typing",
)
"""The seven boolean leaves of ``experimental.mcpl.channels`` (spec §14.1)."""


@dataclass(frozen=True, slots=True)
class FeatureSetSpec:
    """One feature set this connector declares (spec §6.1).

    Attributes:
        description: what the set does, for the host's operator.
        uses: every capability path the set exercises (accurate and complete, S-02).
        rollback: whether the set supports ``state/rollback``.

    Raises:
        ValueError: if ``uses`` is empty or names a path outside the 17 valid ones.
    """

    description: str
    uses: tuple[str, ...]
    rollback: bool = False

    def __post_init__(self) -> None:
        if not self.uses:
            raise ValueError("a feature set must use at least one capability path")
        unknown = [path for path in self.uses if path not in CAPABILITY_PATHS]
        if unknown:
            raise ValueError(f"feature set uses unknown capability paths: {unknown!r}")

    @classmethod
    def from_value(cls, value: FeatureSetSpec | Mapping[str, Any]) -> FeatureSetSpec:
        """Accept a spec or a ``{description, uses, rollback?}`` mapping."""
        if isinstance(value, FeatureSetSpec):
            return value
        uses = value.get("uses")
        if not isinstance(uses, list | tuple) or not all(isinstance(u, str) for u in uses):
            raise ValueError("feature set 'uses' must be a list of capability paths")
        description = value.get("description", "")
        if not isinstance(description, str):
            raise ValueError("feature set 'description' must be a string")
        return cls(
            description=description, uses=tuple(uses), rollback=value.get("rollback") is True
        )

    def to_wire(self) -> dict[str, Any]:
        """The declaration as it appears in the manifest record."""
        wire: dict[str, Any] = {"description": self.description, "uses": list(self.uses)}
        if self.rollback:
            wire["rollback"] = True
        return wire


@dataclass(frozen=True, slots=True)
class ServerManifest:
    """A built manifest and what follows from it.

    Attributes:
        advertised: the capability paths advertised (``tools`` included when offered).
        feature_sets: this connector's declarations, by name.
        decls: the same declarations as the protocol package reads them, for derivation.
        tools: whether MCP ``capabilities.tools`` is advertised.
    """

    advertised: frozenset[str]
    feature_sets: Mapping[str, FeatureSetSpec]
    decls: Mapping[str, FeatureSetDecl]
    tools: bool
    _mcpl: Mapping[str, Any] = field(repr=False)

    def mcpl(self) -> dict[str, Any]:
        """A fresh copy of the ``experimental.mcpl`` object, safe to hand to the wire."""
        return copy.deepcopy(dict(self._mcpl))

    def capabilities(self) -> dict[str, Any]:
        """The MCP ``capabilities`` object of the ``initialize`` result."""
        capabilities: dict[str, Any] = {"experimental": {"mcpl": self.mcpl()}}
        if self.tools:
            capabilities["tools"] = {"listChanged": False}
        return capabilities


def _channel_leaves(channels: Mapping[str, bool] | bool) -> dict[str, bool]:
    if isinstance(channels, bool):
        return dict.fromkeys(CHANNEL_LEAVES, channels)
    unknown = [key for key in channels if key not in CHANNEL_LEAVES]
    if unknown:
        raise ValueError(f"unknown channel capability leaves: {unknown!r}")
    return {leaf: channels.get(leaf, False) is True for leaf in CHANNEL_LEAVES}


def build_manifest(
    *,
    channels: Mapping[str, bool] | bool,
    push_events: bool,
    feature_sets: Mapping[str, FeatureSetSpec | Mapping[str, Any]] | None,
    tools: bool,
) -> ServerManifest:
    """Build and check the manifest of a connector.

    Args:
        channels: ``True`` for all seven channel leaves, ``False`` for none, or a mapping of
            leaf name to bool (missing leaves are ``False``).
        push_events: whether the connector sends ``push/event``.
        feature_sets: declarations by name; values are :class:`FeatureSetSpec` or mappings.
        tools: whether the connector offers MCP tools.

    Raises:
        ValueError: an unknown channel leaf, a bad feature-set name, or a set whose ``uses``
            names a path this connector does not advertise.
    """
    leaves = _channel_leaves(channels)
    specs = {name: FeatureSetSpec.from_value(value) for name, value in (feature_sets or {}).items()}
    mcpl: dict[str, Any] = {"version": MCPL_VERSION, "pushEvents": push_events}
    if any(leaves.values()):
        mcpl["channels"] = leaves
    mcpl["featureSets"] = {name: spec.to_wire() for name, spec in specs.items()}

    advertised = advertised_paths(mcpl, mcp_capabilities={"tools": {}} if tools else None)
    for name, spec in specs.items():
        if not validate_path_charset(name):
            raise ValueError(f"feature set name {name!r} is outside [A-Za-z0-9._:*-]")
        missing = [path for path in spec.uses if path not in advertised]
        if missing:
            raise ValueError(
                f"feature set {name!r} uses {missing!r}, which this connector does not "
                "advertise (enable them, or drop them from 'uses')"
            )
    decls, diagnostics = parse_feature_sets(mcpl["featureSets"])
    if diagnostics:  # cannot happen after the checks above; keep the two readers in step
        raise ValueError("; ".join(diagnostics))
    return ServerManifest(
        advertised=advertised,
        feature_sets=MappingProxyType(specs),
        decls=MappingProxyType(decls),
        tools=tools,
        _mcpl=MappingProxyType(mcpl),
    )
