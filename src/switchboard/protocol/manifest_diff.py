"""What a changed manifest means for one connection: the diff, the narrowed grant, the receipt.

How to read a manifest fetched with ``mcpl/manifest``, what changed between two manifests
(compared by content, never by revision), and the grant narrowed to what the new one still
advertises: removals take effect, additions are never granted (mcpl-protocol.md 3.15, §17.5).

What it deliberately does not know: the wire (fetching, rate limits, the policy Request that
tells the narrowing), the registry, or sessions.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from .capabilities import Grant
from .featuresets import derive_enabled
from .manifest import Manifest, parse_manifest

__all__ = [
    "Impact",
    "ManifestChange",
    "Narrowing",
    "diff_manifests",
    "narrow",
    "read_fetched_manifest",
]

ImpactKind = Literal[
    "capability-revoked",
    "capability-expansion-pending",
    "feature-degraded",
    "feature-restored",
    "ontology-acceptance-invalidated",
    "surface-changed",
]
Disposition = Literal["applied", "decision-needed", "informational"]

_TOOLS: Final = "tools"


@dataclass(frozen=True, slots=True)
class Impact:
    """One line of a change receipt.

    Attributes:
        kind: what happened, from the closed §17.5 vocabulary.
        disposition: ``applied`` (done already), ``decision-needed`` (waits for the operator)
            or ``informational``.
        subject: the capability path or feature-set name concerned (empty for the surface).
    """

    kind: ImpactKind
    disposition: Disposition
    subject: str = ""

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "disposition": self.disposition, "subject": self.subject}


@dataclass(frozen=True, slots=True)
class ManifestChange:
    """The content diff of two manifests (never their revisions).

    Attributes:
        removed_paths: advertised before, not now.
        added_paths: advertised now, not before.
        removed_sets: feature sets declared before, not now.
        added_sets: feature sets declared now, not before.
        changed_sets: sets declared in both whose declaration (``tagOntology`` aside) differs.
        ontology_changed: sets declared in both whose ``tagOntology`` differs.
        surface_changed: anything at all differs, revision aside.
    """

    removed_paths: frozenset[str]
    added_paths: frozenset[str]
    removed_sets: frozenset[str]
    added_sets: frozenset[str]
    changed_sets: frozenset[str]
    ontology_changed: frozenset[str]
    surface_changed: bool

    @property
    def empty(self) -> bool:
        """Whether the content is the same."""
        return not self.surface_changed


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What the connection holds after a manifest change, and the receipt for it.

    Attributes:
        grant: the narrowed grant (explicit leaves; never wider than before).
        enabled: the feature sets still enabled (a subset of those enabled before).
        impacts: the change receipt's lines, in a stable order.
    """

    grant: Grant
    enabled: frozenset[str]
    impacts: tuple[Impact, ...]

    def narrows(self, grant: Grant, enabled: Collection[str]) -> bool:
        """Whether this differs from ``grant`` and ``enabled`` (then the server must be told)."""
        return self.grant != grant or self.enabled != frozenset(enabled)


def read_fetched_manifest(result: Any, *, tools: bool) -> Manifest | None:
    """Read an ``mcpl/manifest`` result; ``None`` when it does not parse (not an object).

    Args:
        result: the result as received.
        tools: whether MCP advertised ``tools`` at ``initialize`` (that path lives outside
            the manifest, so a fetched manifest can neither add nor remove it).
    """
    if not isinstance(result, Mapping):
        return None
    capabilities: dict[str, Any] = {"experimental": {"mcpl": result}}
    if tools:
        capabilities[_TOOLS] = {}
    return parse_manifest({"capabilities": capabilities})


def _without_revision(raw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k != "revision"}


def _split_ontology(decl: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    rest = {k: v for k, v in decl.items() if k != "tagOntology"}
    return rest, decl.get("tagOntology")


def diff_manifests(old: Manifest, new: Manifest) -> ManifestChange:
    """Compare ``old`` (in force) with ``new`` (just fetched) by content.

    What it knows (mcpl-protocol.md 3.15, MCPL §17.5):

    - how to read a manifest fetched with ``mcpl/manifest`` (the bare ``experimental.mcpl`` object)
      the way one is read at ``initialize``, keeping the ``tools`` path, which MCP advertises
      outside the manifest; anything that is not a JSON object does not parse;
    - the diff of the manifest in force against the new one, which is authoritative: capability
      paths and feature sets that appeared or disappeared, feature sets whose declaration changed,
      tag ontologies that changed, and whether anything else on the surface changed;
    - the consequences, fail-closed. The grant only ever narrows: it becomes the old grant
      intersected with what the new manifest advertises, so a removal is revoked and an addition
      grants nothing. A feature set stays enabled only if it was enabled before and still derives as
      enabled under the narrowed grant; a new or repaired set is never switched on;
    - the host-internal change receipt with its closed impact vocabulary (``capability-revoked``,
      ``capability-expansion-pending``, ``feature-degraded``, ``feature-restored``,
      ``ontology-acceptance-invalidated``, ``surface-changed``) and each impact's disposition.
    """
    old_sets, new_sets = old.feature_sets, new.feature_sets
    both = old_sets.keys() & new_sets.keys()
    changed: set[str] = set()
    ontology: set[str] = set()
    for name in both:
        old_rest, old_ontology = _split_ontology(old_sets[name].raw)
        new_rest, new_ontology = _split_ontology(new_sets[name].raw)
        if old_rest != new_rest:
            changed.add(name)
        if old_ontology != new_ontology:
            ontology.add(name)
    return ManifestChange(
        removed_paths=old.advertised - new.advertised,
        added_paths=new.advertised - old.advertised,
        removed_sets=frozenset(old_sets.keys() - new_sets.keys()),
        added_sets=frozenset(new_sets.keys() - old_sets.keys()),
        changed_sets=frozenset(changed),
        ontology_changed=frozenset(ontology),
        surface_changed=_without_revision(old.raw) != _without_revision(new.raw),
    )


def narrow(
    new: Manifest,
    change: ManifestChange,
    *,
    grant: Grant,
    enabled: Collection[str],
    policy: Collection[str],
    selection: Collection[str] | None,
) -> Narrowing:
    """Apply ``change`` to a connection holding ``grant`` and ``enabled``, narrowing only.

    Args:
        new: the manifest that is now in force.
        change: its diff against the previous one.
        grant: the grant in force (explicit leaves).
        enabled: the feature sets enabled now.
        policy: the host's configured grant patterns, to tell which additions it would grant
            if the operator decided so (``capability-expansion-pending``) from those it never
            would (reported as ``surface-changed``).
        selection: the configured ``enabled_feature_sets`` allowlist, or ``None``.
    """
    before = frozenset(enabled)
    narrowed = Grant(sorted(grant.leaves() & new.advertised))
    status = derive_enabled(new.feature_sets, narrowed, selection, ())
    still = frozenset(name for name, why in status.items() if why is None) & before
    impacts: list[Impact] = [
        Impact("capability-revoked", "applied", path)
        for path in sorted(grant.leaves() - narrowed.leaves())
    ]
    wanted = Grant(policy)
    for path in sorted(change.added_paths):
        if wanted.allows(path):
            impacts.append(Impact("capability-expansion-pending", "decision-needed", path))
        else:
            impacts.append(Impact("surface-changed", "informational", path))
    impacts.extend(Impact("feature-degraded", "applied", name) for name in sorted(before - still))
    for name in sorted(n for n, why in status.items() if why is None and n not in before):
        # Enabling it would widen what the server may do: that waits for a decision.
        kind: ImpactKind = (
            "capability-expansion-pending" if name in change.added_sets else "feature-restored"
        )
        impacts.append(Impact(kind, "decision-needed", name))
    impacts.extend(
        Impact("ontology-acceptance-invalidated", "informational", name)
        for name in sorted(change.ontology_changed)
    )
    if change.surface_changed and not impacts:
        impacts.append(Impact("surface-changed", "informational"))
    return Narrowing(narrowed, still, tuple(impacts))
