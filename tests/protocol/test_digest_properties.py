"""Properties of the §17.2 digest: what it ignores (member order, set order and repeats) and
what it must notice (the order of every other array)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.protocol.digest import manifest_digest

IDENT = st.text(alphabet="abcXYZ019._:*-", min_size=1, max_size=6)
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
# Distinct values with distinct canonical forms: integers past 2^53 could collide as doubles.
DISTINCT_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1), st.text()
)
CAPABILITY_NAME = IDENT.filter(lambda name: name not in {"version", "revision", "featureSets"})
CAPABILITY_TREE = st.recursive(
    st.booleans(), lambda inner: st.dictionaries(IDENT, inner, max_size=3), max_leaves=6
)
RULE = st.fixed_dictionaries(
    {"behavior": st.sampled_from(["immediate", "mute"])},
    optional={"tagsAny": st.lists(IDENT, max_size=3), "tagsNone": st.lists(IDENT, max_size=3)},
)
ONTOLOGY = st.fixed_dictionaries(
    {},
    optional={
        "coreTags": st.lists(IDENT, max_size=4),
        "tags": st.dictionaries(
            IDENT,
            st.fixed_dictionaries(
                {"desc": st.text(max_size=5)},
                optional={
                    "implies": st.lists(IDENT, max_size=4),
                },
            ),
            max_size=3,
        ),
        "keyed": st.dictionaries(
            IDENT, st.fixed_dictionaries({"values": st.lists(IDENT, max_size=3)}), max_size=2
        ),
        "suggestedTreatment": st.lists(RULE, max_size=3),
    },
)
FEATURE_SET = st.fixed_dictionaries(
    {"description": st.text(max_size=8), "uses": st.lists(IDENT, max_size=5)},
    optional={"tagOntology": ONTOLOGY, "rollback": st.booleans()},
)
MANIFEST = st.fixed_dictionaries(
    {
        "version": st.just("0.5"),
        "featureSets": st.dictionaries(IDENT, FEATURE_SET, max_size=3),
    },
    optional={"revision": st.text(max_size=10), "demoValues": st.lists(SCALAR, max_size=4)},
).flatmap(
    lambda base: st.dictionaries(CAPABILITY_NAME, CAPABILITY_TREE, max_size=3).map(
        lambda capabilities: {**capabilities, **base}
    )
)


def _reorder_members(value: Any, rnd: random.Random) -> Any:
    """The same JSON value with the members of every object in another insertion order."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {key: _reorder_members(item, rnd) for key, item in items}
    if isinstance(value, list):
        return [_reorder_members(item, rnd) for item in value]
    return value


def _shuffle_with_repeats(values: list[str], rnd: random.Random) -> list[str]:
    grown = values + [rnd.choice(values) for _ in range(rnd.randint(0, 3))] if values else []
    rnd.shuffle(grown)
    return grown


def _scramble_sets(manifest: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    """The same manifest with every set-valued array permuted and given extra repeats."""
    for feature_set in manifest["featureSets"].values():
        feature_set["uses"] = _shuffle_with_repeats(feature_set["uses"], rnd)
        ontology = feature_set.get("tagOntology", {})
        if "coreTags" in ontology:
            ontology["coreTags"] = _shuffle_with_repeats(ontology["coreTags"], rnd)
        for tag in ontology.get("tags", {}).values():
            if "implies" in tag:
                tag["implies"] = _shuffle_with_repeats(tag["implies"], rnd)
    return manifest


@settings(max_examples=80)
@given(manifest=MANIFEST, rnd=st.randoms(use_true_random=False))
def test_the_digest_ignores_the_member_order_of_every_object(
    manifest: dict[str, Any], rnd: random.Random
) -> None:
    assert manifest_digest(_reorder_members(manifest, rnd)) == manifest_digest(manifest)


@settings(max_examples=80)
@given(manifest=MANIFEST, rnd=st.randoms(use_true_random=False))
def test_the_digest_ignores_order_and_repeats_inside_set_valued_arrays(
    manifest: dict[str, Any], rnd: random.Random
) -> None:
    expected = manifest_digest(manifest)
    assert manifest_digest(_scramble_sets(manifest, rnd)) == expected


@settings(max_examples=80)
@given(
    manifest=MANIFEST,
    values=st.lists(DISTINCT_SCALAR, min_size=2, max_size=5, unique=True),
    data=st.data(),
)
def test_permuting_a_vendor_list_changes_the_digest(
    manifest: dict[str, Any], values: list[Any], data: st.DataObject
) -> None:
    reordered = data.draw(st.permutations(values).filter(lambda p: p != values))
    before = manifest_digest({**manifest, "demoList": {"items": values}})
    assert manifest_digest({**manifest, "demoList": {"items": reordered}}) != before


@settings(max_examples=80)
@given(
    manifest=MANIFEST,
    matchers=st.lists(IDENT, min_size=2, max_size=4, unique=True),
    field=st.sampled_from(["tagsAny", "tagsAll", "tagsNone", "values"]),
    data=st.data(),
)
def test_permuting_a_list_that_looks_like_a_set_changes_the_digest(
    manifest: dict[str, Any], matchers: list[str], field: str, data: st.DataObject
) -> None:
    reordered = data.draw(st.permutations(matchers).filter(lambda p: p != matchers))

    def with_list(items: list[str]) -> dict[str, Any]:
        ontology: dict[str, Any]
        if field == "values":
            ontology = {"keyed": {"urgency": {"values": items}}}
        else:
            ontology = {"suggestedTreatment": [{field: items, "behavior": "mute"}]}
        feature_set = {"description": "d", "uses": ["tools"], "tagOntology": ontology}
        return {**manifest, "featureSets": {"probe": feature_set}}

    assert manifest_digest(with_list(reordered)) != manifest_digest(with_list(matchers))


@settings(max_examples=50)
@given(manifest=MANIFEST, revision=st.text(max_size=20))
def test_only_the_root_revision_is_ignored(manifest: dict[str, Any], revision: str) -> None:
    stripped = {key: value for key, value in manifest.items() if key != "revision"}
    assert manifest_digest({**stripped, "revision": revision}) == manifest_digest(stripped)
    nested = {**stripped, "demoExt": {"revision": True}}
    assert manifest_digest(nested) != manifest_digest(stripped)
