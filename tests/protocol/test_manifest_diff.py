"""The manifest diff and its consequences, without a connection (MCPL §17.5; H-58..H-60)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from switchboard.protocol import CAPABILITY_PATHS, Grant, Manifest, effective_grant
from switchboard.protocol.manifest_diff import diff_manifests, narrow, read_fetched_manifest

PATHS = sorted(CAPABILITY_PATHS - {"tools"})


def as_manifest(paths: set[str] | frozenset[str], sets: dict[str, Any] | None = None) -> Manifest:
    """A manifest advertising exactly ``paths`` (as nested objects) and ``sets``."""
    body: dict[str, Any] = {"version": "0.5"}
    for path in sorted(paths, key=lambda p: -p.count(".")):  # deepest first
        node = body
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if isinstance(node.get(leaf), dict):  # inferenceRequest is also a parent
            continue
        node[leaf] = True
    if sets is not None:
        body["featureSets"] = sets
    manifest = read_fetched_manifest(body, tools=False)
    assert manifest is not None
    return manifest


path_sets = st.frozensets(st.sampled_from(PATHS))


@given(old=path_sets, new=path_sets, policy=path_sets)
def test_a_manifest_change_only_ever_narrows_the_grant(
    old: frozenset[str], new: frozenset[str], policy: frozenset[str]
) -> None:
    """H-58, H-59: the new grant is the old one minus what disappeared; nothing is added."""
    before, after = as_manifest(old), as_manifest(new)
    grant = effective_grant(before.advertised, policy)
    result = narrow(
        after,
        diff_manifests(before, after),
        grant=grant,
        enabled=(),
        policy=sorted(policy),
        selection=None,
    )
    assert result.grant.leaves() == grant.leaves() & after.advertised
    revoked = {i.subject for i in result.impacts if i.kind == "capability-revoked"}
    assert revoked == set(grant.leaves() - after.advertised)
    pending = {i.subject for i in result.impacts if i.kind == "capability-expansion-pending"}
    assert pending == {p for p in after.advertised - before.advertised if p in policy}
    assert all(i.disposition == "decision-needed" for i in result.impacts if i.subject in pending)


def test_the_diff_names_what_appeared_disappeared_and_changed_by_content() -> None:
    sets_before = {
        "a": {"description": "a", "uses": ["pushEvents"]},
        "b": {"description": "b", "uses": ["pushEvents"], "tagOntology": {"coreTags": []}},
        "gone": {"description": "g", "uses": ["pushEvents"]},
    }
    sets_after = {
        "a": {"description": "a, reworded", "uses": ["pushEvents"]},
        "b": {"description": "b", "uses": ["pushEvents"], "tagOntology": {"open": True}},
        "new": {"description": "n", "uses": ["pushEvents"]},
    }
    before = as_manifest({"pushEvents", "channels.register"}, sets_before)
    after = as_manifest({"pushEvents", "modelInfo"}, sets_after)
    change = diff_manifests(before, after)
    assert change.removed_paths == {"channels.register"}
    assert change.added_paths == {"modelInfo"}
    assert change.removed_sets == {"gone"}
    assert change.added_sets == {"new"}
    assert change.changed_sets == {"a"}
    assert change.ontology_changed == {"b"}
    assert not change.empty


def test_the_revision_alone_is_not_a_change() -> None:
    body = {"version": "0.5", "pushEvents": True}
    one = read_fetched_manifest({**body, "revision": "sha256:one"}, tools=False)
    two = read_fetched_manifest({**body, "revision": "sha256:two"}, tools=False)
    assert one is not None
    assert two is not None
    assert diff_manifests(one, two).empty


def test_anything_but_an_object_does_not_parse_and_tools_survive_a_fetch() -> None:
    """H-61: a string, a list or null is unparseable; ``tools`` lives outside the manifest."""
    for junk in ("garbage", ["version"], None, 3):
        assert read_fetched_manifest(junk, tools=True) is None
    fetched = read_fetched_manifest({"version": "0.5"}, tools=True)
    assert fetched is not None
    assert fetched.advertised == {"tools"}


def test_feature_sets_stay_enabled_only_if_they_were_and_still_derive_enabled() -> None:
    sets = {
        "keep": {"description": "k", "uses": ["pushEvents"]},
        "widen": {"description": "w", "uses": ["pushEvents"]},
        "off": {"description": "o", "uses": ["pushEvents"]},
    }
    before = as_manifest({"pushEvents"}, sets)
    after_sets = {
        "keep": sets["keep"],
        "widen": {"description": "w", "uses": ["pushEvents", "modelInfo"]},
        "off": sets["off"],
        "new": {"description": "n", "uses": ["pushEvents"]},
    }
    after = as_manifest({"pushEvents", "modelInfo"}, after_sets)
    result = narrow(
        after,
        diff_manifests(before, after),
        grant=Grant(["pushEvents"]),
        enabled={"keep", "widen"},
        policy=["pushEvents", "modelInfo"],
        selection=None,
    )
    assert result.enabled == {"keep"}
    lines = {(i.kind, i.subject, i.disposition) for i in result.impacts}
    assert ("feature-degraded", "widen", "applied") in lines
    assert ("feature-restored", "off", "decision-needed") in lines
    assert ("capability-expansion-pending", "new", "decision-needed") in lines
    assert ("capability-expansion-pending", "modelInfo", "decision-needed") in lines
    assert result.narrows(Grant(["pushEvents"]), {"keep", "widen"})
    assert not result.narrows(Grant(["pushEvents"]), {"keep"})


def test_an_ontology_change_and_a_pure_surface_change_are_informational() -> None:
    sets = {"s": {"description": "s", "uses": ["pushEvents"], "tagOntology": {"open": True}}}
    before = as_manifest({"pushEvents"}, sets)
    after = as_manifest({"pushEvents"}, {"s": {**sets["s"], "tagOntology": {"open": False}}})
    result = narrow(
        after,
        diff_manifests(before, after),
        grant=Grant(["pushEvents"]),
        enabled={"s"},
        policy=["pushEvents"],
        selection=None,
    )
    assert [(i.kind, i.disposition) for i in result.impacts] == [
        ("ontology-acceptance-invalidated", "informational")
    ]
    reworded = as_manifest({"pushEvents"}, {"s": {**sets["s"], "description": "t"}})
    surface = narrow(
        reworded,
        diff_manifests(before, reworded),
        grant=Grant(["pushEvents"]),
        enabled={"s"},
        policy=["pushEvents"],
        selection=None,
    )
    assert [(i.kind, i.subject) for i in surface.impacts] == [("surface-changed", "")]
    assert surface.enabled == {"s"}
