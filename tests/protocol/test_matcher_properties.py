"""Property tests for the §5.4 grant matcher and the advertisement flattener."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from switchboard.protocol import (
    CAPABILITY_PATHS,
    Grant,
    advertised_paths,
    effective_grant,
    path_matches,
)

# Small alphabets make collisions (and therefore matches) common.
segments = st.sampled_from(["a", "b", "channels", "publish", "x-1", "c:d"])
paths_as_lists = st.lists(segments, min_size=1, max_size=5)
paths = paths_as_lists.map(".".join)
pattern_segments = st.one_of(segments, st.just("*"))
patterns = st.lists(pattern_segments, min_size=1, max_size=5).map(".".join)
known_paths = st.sampled_from(sorted(CAPABILITY_PATHS))
any_patterns = st.one_of(patterns, known_paths, st.sampled_from(["*", "*.*", "channels.*"]))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    *("channels", "publish", "contextHooks", "beforeInference", "inject", "system"),
                    *("inferenceRequest", "streaming", "pushEvents", "tools", "x", "a.b"),
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@given(paths_as_lists, st.data())
def test_a_star_matches_exactly_one_segment(segs: list[str], data: st.DataObject) -> None:
    """§5.4: replacing any one segment of a path with `*` still matches it."""
    index = data.draw(st.integers(min_value=0, max_value=len(segs) - 1))
    pattern = ".".join([*segs[:index], "*", *segs[index + 1 :]])
    assert path_matches(pattern, ".".join(segs))


@given(paths_as_lists)
def test_a_star_never_matches_zero_or_two_segments(segs: list[str]) -> None:
    """§5.4: `*` is not a subtree match and there is no multi-segment wildcard."""
    path = ".".join(segs)
    assert not path_matches(f"{path}.*", path)
    if len(segs) >= 2:
        assert not path_matches(".".join([*segs[:-2], "*"]), path)


@given(patterns, paths)
def test_segment_counts_must_be_equal(pattern: str, path: str) -> None:
    """§5.4: a pattern only matches paths with as many dot segments as it has."""
    if pattern.count(".") != path.count("."):
        assert not path_matches(pattern, path)


@given(paths, paths_as_lists)
def test_a_bare_parent_grants_nothing_below_it(parent: str, tail: list[str]) -> None:
    """§5.4, H-11: a parent path is literal, never a subtree grant."""
    child = ".".join([parent, *tail])
    assert not path_matches(parent, child)
    assert not Grant([parent]).allows(child)


@given(paths)
def test_a_pattern_equal_to_a_path_matches_it(path: str) -> None:
    assert path_matches(path, path)
    assert Grant([path]).allows(path)


@given(st.lists(any_patterns, max_size=6), st.lists(st.one_of(paths, known_paths), max_size=8))
def test_a_grant_allows_exactly_what_one_of_its_patterns_matches(
    grant_patterns: list[str], checked: list[str]
) -> None:
    grant = Grant(grant_patterns)
    for path in checked + checked:  # second round answers from the cache
        assert grant.allows(path) == any(path_matches(q, path) for q in grant_patterns)


@given(
    st.lists(st.one_of(known_paths, paths), max_size=10),
    st.lists(any_patterns, max_size=6),
)
def test_the_effective_grant_is_within_advertised_and_policy(
    advertised: list[str], policy: list[str]
) -> None:
    """§5.4, H-07: effective ⊆ advertised ∩ what policy matches, as explicit leaves."""
    grant = effective_grant(advertised, policy)
    policy_grant = Grant(policy)
    assert set(grant.patterns) <= set(advertised) & CAPABILITY_PATHS
    assert all(policy_grant.allows(p) for p in grant.patterns)
    assert not any("*" in p for p in grant.patterns)
    assert grant.leaves() == set(grant.patterns)


@given(st.sampled_from(["chan*", "*nels", "c*s", "**"]), segments)
def test_a_star_inside_a_segment_is_literal(glob: str, other: str) -> None:
    """A-13: only a whole-segment `*` is a wildcard."""
    assert path_matches(f"{glob}.publish", f"{glob}.publish")
    if other != glob:
        assert not path_matches(f"{glob}.publish", f"{other}.publish")


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_flattening_any_json_object_yields_only_valid_paths(adv: dict[str, Any]) -> None:
    """§5.1: whatever a peer sends, only members of the 17-path vocabulary come out."""
    assert advertised_paths(adv) <= CAPABILITY_PATHS


@given(st.sets(known_paths))
def test_an_advertisement_of_leaves_set_to_true_flattens_back_to_those_leaves(
    leaves: set[str],
) -> None:
    adv: dict[str, Any] = {}
    for leaf in sorted(leaves, key=lambda p: p.count(".")):
        *parents, last = leaf.split(".")
        node = adv
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        if not isinstance(node.get(last), dict):
            node[last] = True
    # inferenceRequest is both a path and a parent: `true` covers streaming, and an
    # object at that node advertises the method itself. Every other leaf is exact.
    expected = set(leaves)
    if adv.get("inferenceRequest") is True:
        expected.add("inferenceRequest.streaming")
    if isinstance(adv.get("inferenceRequest"), dict):
        expected.add("inferenceRequest")
    assert advertised_paths(adv) == expected
