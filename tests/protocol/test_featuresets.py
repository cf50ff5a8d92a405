"""Feature-set declarations in both shapes, validity and fail-closed derivation (§6)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.protocol import (
    FeatureSetDecl,
    Grant,
    derive_enabled,
    parse_feature_sets,
)


def test_a_05_record_is_read_by_name_with_everything_kept(
    slack_advertisement: dict[str, Any],
) -> None:
    decls, diagnostics = parse_feature_sets(slack_advertisement["featureSets"])
    assert list(decls) == ["slack.messaging", "slack.history", "slack.subscriptions"]
    messaging = decls["slack.messaging"]
    assert messaging.valid
    assert messaging.rollback
    assert "pushEvents" in messaging.uses
    assert messaging.raw["tagOntology"] == {"coreTags": ["chat:mention"]}
    assert not decls["slack.history"].rollback
    assert diagnostics == []


def test_a_04_array_is_read_by_name_and_noted(discord_advertisement: dict[str, Any]) -> None:
    """peers.md §2, §14: featureSets as an array of {name, ...} is still read."""
    decls, diagnostics = parse_feature_sets(discord_advertisement["featureSets"])
    assert list(decls) == [
        "discord.messaging",
        "discord.channels",
        "discord.history",
        "discord.subscriptions",
    ]
    assert all(decl.valid for decl in decls.values())
    assert decls["discord.messaging"].raw["hostState"] is False
    assert any("array" in d for d in diagnostics)


@pytest.mark.parametrize(
    "uses",
    [
        None,
        [],
        "tools",
        ["contextHooks.beforeInference"],
        ["tools", "channels.observe"],
        ["tools", 3],
    ],
)
def test_a_declaration_with_bad_uses_is_kept_but_invalid(uses: Any) -> None:
    """§6.4, A-6: absent, empty, non-array or unknown-path `uses` makes a set invalid."""
    entry: dict[str, Any] = {"description": "d"}
    if uses is not None:
        entry["uses"] = uses
    decls, diagnostics = parse_feature_sets({"x": entry})
    assert not decls["x"].valid
    assert any("invalid_uses" in d for d in diagnostics)


def test_garbage_entries_are_skipped_with_a_diagnostic_each() -> None:
    value = [
        "nope",
        {"uses": ["tools"]},
        {"name": "", "uses": ["tools"]},
        {"name": "has space", "uses": ["tools"]},
        {"name": "ok", "description": "d", "uses": ["tools"]},
        {"name": "ok", "description": "again", "uses": ["pushEvents"]},
    ]
    decls, diagnostics = parse_feature_sets(value)
    assert list(decls) == ["ok"]
    assert decls["ok"].description == "d"
    assert len(diagnostics) == 6  # array shape + five skipped entries


def test_a_record_entry_that_is_not_an_object_is_skipped() -> None:
    decls, diagnostics = parse_feature_sets(
        {"a": True, "b": {"description": "", "uses": ["tools"]}}
    )
    assert list(decls) == ["b"]
    assert diagnostics


@pytest.mark.parametrize("value", [True, "x", 3])
def test_a_feature_sets_member_of_the_wrong_type_yields_no_sets(value: Any) -> None:
    decls, diagnostics = parse_feature_sets(value)
    assert decls == {}
    assert len(diagnostics) == 1


def test_absent_feature_sets_yield_nothing_and_say_nothing() -> None:
    assert parse_feature_sets(None) == ({}, [])


def test_a_declaration_without_description_reads_as_empty_text() -> None:
    decls, diagnostics = parse_feature_sets({"x": {"uses": ["tools"]}})
    assert decls["x"].description == ""
    assert decls["x"].valid
    assert diagnostics


def test_a_declaration_is_an_immutable_value() -> None:
    decls, _ = parse_feature_sets({"x": {"description": "d", "uses": ["tools"]}})
    decl = decls["x"]
    assert isinstance(decl, FeatureSetDecl)
    assert decl == FeatureSetDecl("x", "d", ("tools",), False, True, {})
    assert hash(decl) == hash(FeatureSetDecl("x", "d", ("tools",), False, True, {}))
    with pytest.raises(TypeError):
        decl.raw["uses"] = []  # type: ignore[index]


def _decls() -> dict[str, FeatureSetDecl]:
    decls, _ = parse_feature_sets(
        {
            "push": {"description": "", "uses": ["pushEvents"]},
            "chat": {"description": "", "uses": ["channels.publish", "channels.incoming"]},
            "bad": {"description": "", "uses": ["contextHooks.beforeInference"]},
        }
    )
    return decls


def test_derivation_enables_valid_sets_whose_uses_are_all_granted() -> None:
    """§6.4 derivation with `enabled` absent: derivation alone decides."""
    grant = Grant(["pushEvents", "channels.publish", "channels.incoming"])
    assert derive_enabled(_decls(), grant, None, ()) == {
        "push": None,
        "chat": None,
        "bad": "invalid_uses",
    }


def test_a_single_denied_capability_disables_the_set() -> None:
    """§6.4: a denied capability in `uses` kills the whole set."""
    grant = Grant(["pushEvents", "channels.publish"])
    assert derive_enabled(_decls(), grant, None, ())["chat"] == "capability_denied"


def test_naming_a_set_in_enabled_never_supplies_missing_capabilities() -> None:
    """§6.3: selection narrows, never widens."""
    result = derive_enabled(_decls(), Grant(["pushEvents"]), ["push", "chat", "bad"], ())
    assert result == {"push": None, "chat": "capability_denied", "bad": "invalid_uses"}


def test_an_enabled_list_disables_every_set_it_does_not_name() -> None:
    """§6.3: `enabled` present is an allowlist; reason not_selected."""
    grant = Grant(["pushEvents", "channels.*"])
    result = derive_enabled(_decls(), grant, ["chat"], ())
    assert result["push"] == "not_selected"
    assert result["chat"] is None
    assert derive_enabled(_decls(), grant, [], ())["chat"] == "not_selected"


def test_disabled_always_subtracts() -> None:
    """§6.3: `disabled` subtracts even a set that `enabled` names."""
    grant = Grant(["pushEvents"])
    assert derive_enabled(_decls(), grant, ["push"], ["push"])["push"] == "disabled"
    assert derive_enabled(_decls(), grant, None, {"push"})["push"] == "disabled"


def test_the_empty_grant_enables_nothing() -> None:
    """§5.3: fail-closed; with no grant every valid set is capability_denied."""
    result = derive_enabled(_decls(), Grant.empty(), None, ())
    assert result == {
        "push": "capability_denied",
        "chat": "capability_denied",
        "bad": "invalid_uses",
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["name", "description", "uses", "rollback", "tools", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=25,
)


@given(json_values)
def test_any_json_value_parses_without_raising(value: Any) -> None:
    decls, diagnostics = parse_feature_sets(value)
    for name, decl in decls.items():
        assert decl.name == name
        assert all(isinstance(u, str) for u in decl.uses)
    assert all(isinstance(d, str) for d in diagnostics)
