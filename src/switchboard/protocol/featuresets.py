"""Feature-set declarations: parsing them from a manifest and deriving which are enabled.

What this module knows (mcpl-protocol.md 3.4, 3.7):

- both shapes real connectors send: the 0.5 record keyed by name and the 0.4 array of
  ``{name, ...}`` entries (peers.md §0, §14), keeping every member of an entry in ``raw``;
- validity: ``uses`` must be a non-empty list whose every entry is one of the 17 capability
  paths; an invalid set is disabled with reason ``invalid_uses``, never guessed at;
- derivation, fail-closed: valid, every ``uses`` path granted, selected by ``enabled`` when
  that list is present, and not named in ``disabled``.

What it deliberately does not know: tag ontologies (kept untouched in ``raw``), the wire form
of ``featureSets/update``, or whether a given server-initiated request matches its set's
``uses`` (that declaration-mismatch check belongs to whoever handles the request).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from .capabilities import CAPABILITY_PATHS, Grant, validate_path_charset

__all__ = [
    "REASON_CAPABILITY_DENIED",
    "REASON_DISABLED",
    "REASON_INVALID_USES",
    "REASON_NOT_SELECTED",
    "FeatureSetDecl",
    "derive_enabled",
    "parse_feature_sets",
]

REASON_INVALID_USES: Final = "invalid_uses"
REASON_CAPABILITY_DENIED: Final = "capability_denied"
REASON_NOT_SELECTED: Final = "not_selected"
REASON_DISABLED: Final = "disabled"


@dataclass(frozen=True, slots=True)
class FeatureSetDecl:
    """One declared feature set.

    Attributes:
        name: the set's name (charset ``[A-Za-z0-9._:*-]``).
        description: free text; empty when the declaration had none.
        uses: the string entries of ``uses`` in declared order (non-strings dropped).
        rollback: whether the set declared ``rollback: true``.
        valid: whether ``uses`` is a non-empty list of valid capability paths (§6.4).
        raw: the declaration exactly as received (read-only view), ``tagOntology`` included.
    """

    name: str
    description: str
    uses: tuple[str, ...]
    rollback: bool
    valid: bool
    raw: Mapping[str, Any] = field(hash=False, compare=False, repr=False)


def _decl(name: str, entry: Mapping[str, Any], diagnostics: list[str]) -> FeatureSetDecl:
    description = entry.get("description")
    if not isinstance(description, str):
        diagnostics.append(f"feature set {name!r}: description missing or not a string")
        description = ""
    raw_uses = entry.get("uses")
    if isinstance(raw_uses, list):
        uses = tuple(u for u in raw_uses if isinstance(u, str))
        bad = [u for u in raw_uses if not isinstance(u, str) or u not in CAPABILITY_PATHS]
        valid = bool(raw_uses) and not bad
        if not raw_uses:
            diagnostics.append(f"feature set {name!r}: invalid_uses (empty)")
        elif bad:
            diagnostics.append(f"feature set {name!r}: invalid_uses {bad!r}")
    else:
        uses = ()
        valid = False
        diagnostics.append(f"feature set {name!r}: invalid_uses (absent or not a list)")
    return FeatureSetDecl(
        name=name,
        description=description,
        uses=uses,
        rollback=entry.get("rollback") is True,
        valid=valid,
        raw=MappingProxyType(dict(entry)),
    )


def _add(
    out: dict[str, FeatureSetDecl], name: object, entry: object, diagnostics: list[str]
) -> None:
    if not isinstance(name, str) or not validate_path_charset(name):
        diagnostics.append(f"feature set skipped: bad name {name!r}")
        return
    if not isinstance(entry, Mapping):
        diagnostics.append(f"feature set {name!r} skipped: declaration is not an object")
        return
    if name in out:
        diagnostics.append(f"feature set {name!r}: duplicate declaration ignored")
        return
    out[name] = _decl(name, entry, diagnostics)


def parse_feature_sets(value: Any) -> tuple[dict[str, FeatureSetDecl], list[str]]:
    """Read a manifest's ``featureSets`` member in either shape.

    Args:
        value: a record keyed by name (0.5), an array of ``{name, ...}`` (0.4), or anything
            else (absent, garbage), which yields no sets.

    Returns:
        The declarations by name (first one wins on duplicates) and human-readable
        diagnostics for everything skipped or invalid. Never raises.
    """
    out: dict[str, FeatureSetDecl] = {}
    diagnostics: list[str] = []
    if value is None:
        return out, diagnostics
    if isinstance(value, Mapping):
        for name, entry in value.items():
            _add(out, name, entry, diagnostics)
    elif isinstance(value, list):
        diagnostics.append("featureSets is an array (0.4 shape); read by name")
        for index, entry in enumerate(value):
            if not isinstance(entry, Mapping):
                diagnostics.append(f"featureSets[{index}] skipped: not an object")
                continue
            _add(out, entry.get("name"), entry, diagnostics)
    else:
        diagnostics.append(f"featureSets ignored: neither a record nor an array ({value!r})")
    return out, diagnostics


def derive_enabled(
    decls: Mapping[str, FeatureSetDecl],
    grant: Grant,
    enabled: Collection[str] | None,
    disabled: Collection[str],
) -> dict[str, str | None]:
    """Decide each declared set's state, fail-closed (§6.3, §6.4; mcpl-protocol.md 3.7).

    Args:
        decls: the declared sets by name.
        grant: the effective grant of the connection.
        enabled: the selection allowlist, or ``None`` when ``enabled`` is absent (no
            constraint). Naming a set here never supplies capabilities.
        disabled: names that are always subtracted.

    Returns:
        For every declared name, ``None`` when enabled, otherwise the first failing reason
        in this order: ``invalid_uses``, ``capability_denied``, ``not_selected``,
        ``disabled``.
    """
    selected = None if enabled is None else frozenset(enabled)
    subtracted = frozenset(disabled)
    result: dict[str, str | None] = {}
    for name, decl in decls.items():
        if not decl.valid:
            result[name] = REASON_INVALID_USES
        elif not all(grant.allows(path) for path in decl.uses):
            result[name] = REASON_CAPABILITY_DENIED
        elif selected is not None and name not in selected:
            result[name] = REASON_NOT_SELECTED
        elif name in subtracted:
            result[name] = REASON_DISABLED
        else:
            result[name] = None
    return result
