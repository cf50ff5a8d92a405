"""Capability vocabulary, method gates, the §5.4 matcher and advertisement flattening."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from switchboard.protocol import (
    CAPABILITY_PATHS,
    METHOD_GATES,
    Grant,
    advertised_paths,
    effective_grant,
    path_matches,
    unknown_advertised_members,
    validate_path_charset,
)

CHANNEL_LEAVES = frozenset(
    {
        "channels.register",
        "channels.lifecycle",
        "channels.publish",
        "channels.incoming",
        "channels.streaming",
        "channels.acknowledge",
        "channels.typing",
    }
)
BEFORE_INFERENCE_LEAVES = frozenset(
    {
        "contextHooks.beforeInference.observe",
        "contextHooks.beforeInference.inject.system",
        "contextHooks.beforeInference.inject.beforeUser",
        "contextHooks.beforeInference.inject.afterUser",
    }
)
DEPTH_ONE = frozenset(
    {"pushEvents", "tools", "modelInfo", "inferenceRequest", "inferenceLifecycle"}
)


def test_there_are_exactly_the_seventeen_spec_capability_paths() -> None:
    """§6.2 / App. B.2 (mcpl-protocol.md 3.1): 17 paths, all in the identifier charset."""
    assert len(CAPABILITY_PATHS) == 17
    assert (
        DEPTH_ONE | CHANNEL_LEAVES | BEFORE_INFERENCE_LEAVES | {"inferenceRequest.streaming"}
        == CAPABILITY_PATHS
    )
    assert all(validate_path_charset(path) for path in CAPABILITY_PATHS)
    assert "channels.observe" not in CAPABILITY_PATHS


@pytest.mark.parametrize(
    ("method", "gate"),
    [
        ("push/event", "pushEvents"),
        ("inference/request", "inferenceRequest"),
        ("model/info", "modelInfo"),
        ("inference/lifecycle", "inferenceLifecycle"),
        ("channels/register", "channels.register"),
        ("channels/changed", "channels.register"),
        ("channels/list", "channels.register"),
        ("channels/open", "channels.lifecycle"),
        ("channels/close", "channels.lifecycle"),
        ("channels/publish", "channels.publish"),
        ("channels/incoming", "channels.incoming"),
        ("channels/outgoing/chunk", "channels.streaming"),
        ("channels/outgoing/complete", "channels.streaming"),
        ("channels/acknowledge", "channels.acknowledge"),
        ("channels/typing", "channels.typing"),
    ],
)
def test_each_gated_method_is_gated_by_its_spec_path(method: str, gate: str) -> None:
    """mcpl-protocol.md section 2: the gate column of the method table."""
    assert METHOD_GATES[method] == gate
    assert gate in CAPABILITY_PATHS


def test_ungated_methods_have_no_gate() -> None:
    """§6.7, §17: featureSets/update and the manifest methods are deliberately ungated."""
    for method in ("featureSets/update", "mcpl/manifest", "mcpl/manifestChanged"):
        assert method not in METHOD_GATES
    assert len(METHOD_GATES) == 15


# The §5.4 examples table (mcpl-protocol.md 3.2): entry, what it grants, what it does not.
SECTION_3_2_ROWS: list[tuple[str, frozenset[str], frozenset[str]]] = [
    ("channels.*", CHANNEL_LEAVES, frozenset({"channels.publish.x", "channels"})),
    (
        "contextHooks.*",
        frozenset({"contextHooks.beforeInference"}),
        BEFORE_INFERENCE_LEAVES,
    ),
    (
        "contextHooks.beforeInference.inject.*",
        BEFORE_INFERENCE_LEAVES - {"contextHooks.beforeInference.observe"},
        frozenset({"contextHooks.beforeInference.observe"}),
    ),
    (
        "contextHooks.beforeInference.*",
        frozenset({"contextHooks.beforeInference.observe"}),
        BEFORE_INFERENCE_LEAVES - {"contextHooks.beforeInference.observe"},
    ),
    ("*", DEPTH_ONE, CAPABILITY_PATHS - DEPTH_ONE),
    ("*.*", CHANNEL_LEAVES | {"inferenceRequest.streaming"}, frozenset()),
    ("channels", frozenset({"channels"}), CHANNEL_LEAVES),
]


@pytest.mark.parametrize(("entry", "grants", "does_not_grant"), SECTION_3_2_ROWS)
def test_the_section_5_4_examples_table_holds(
    entry: str, grants: frozenset[str], does_not_grant: frozenset[str]
) -> None:
    """§5.4: `*` is exactly one segment, segment counts must match, a bare parent is literal."""
    for path in grants:
        assert path_matches(entry, path), path
        assert Grant([entry]).allows(path), path
    for path in does_not_grant:
        assert not path_matches(entry, path), path
        assert not Grant([entry]).allows(path), path


def test_the_leaves_of_each_table_entry_are_exactly_the_valid_paths_it_grants() -> None:
    """§5.4: what a wildcard grant amounts to within the vocabulary."""
    assert Grant(["*"]).leaves() == DEPTH_ONE
    assert Grant(["*.*"]).leaves() == CHANNEL_LEAVES | {"inferenceRequest.streaming"}
    assert Grant(["contextHooks.*"]).leaves() == frozenset()
    assert Grant(["channels"]).leaves() == frozenset()


def test_a_partial_segment_glob_only_matches_itself_literally() -> None:
    """A-13: `*` is special only as a whole segment; `chan*` is a literal segment."""
    assert not path_matches("chan*.publish", "channels.publish")
    assert not path_matches("channels.pub*", "channels.publish")
    assert path_matches("chan*.publish", "chan*.publish")
    assert not Grant(["chan*.*"]).allows("channels.publish")


def test_a_bare_parent_grants_no_channel_method() -> None:
    """H-11 (§5.4): the grant ["channels"] leaves every channel method denied."""
    grant = Grant(["channels"])
    assert not any(grant.allows(METHOD_GATES[m]) for m in METHOD_GATES if m.startswith("ch"))


def test_the_empty_grant_allows_nothing() -> None:
    """§5.3: an absent or empty effectiveCapabilities grants nothing."""
    assert not any(Grant.empty().allows(path) for path in CAPABILITY_PATHS)
    assert Grant.empty().leaves() == frozenset()
    assert Grant.empty() == Grant([])


def test_grants_compare_and_hash_by_their_set_of_patterns() -> None:
    a = Grant(["pushEvents", "channels.*", "pushEvents"])
    b = Grant(["channels.*", "pushEvents"])
    assert a == b
    assert hash(a) == hash(b)
    assert a.patterns == ("pushEvents", "channels.*")
    assert a != Grant(["pushEvents"])
    assert len({a, b}) == 1
    assert a != "pushEvents"


def test_a_grant_cannot_be_changed_after_it_is_made() -> None:
    grant = Grant(["pushEvents"])
    with pytest.raises(AttributeError):
        grant.patterns = ("tools",)  # type: ignore[misc]
    assert grant.patterns == ("pushEvents",)


def test_a_grant_answers_repeated_checks_the_same_way() -> None:
    grant = Grant(["channels.*"])
    assert [grant.allows("channels.publish") for _ in range(3)] == [True] * 3
    assert [grant.allows("channels") for _ in range(3)] == [False] * 3


def test_a_grant_refuses_non_string_patterns() -> None:
    with pytest.raises(TypeError):
        Grant(["pushEvents", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Grant("pushEvents")


def test_a_grant_survives_copying_and_pickling() -> None:
    grant = Grant(["channels.*", "tools"])
    assert grant.allows("tools")
    for clone in (copy.copy(grant), copy.deepcopy(grant), pickle.loads(pickle.dumps(grant))):
        assert clone == grant
        assert clone.patterns == grant.patterns
        assert clone.allows("channels.publish")


def test_the_effective_grant_lists_explicit_advertised_leaves_only() -> None:
    """§5.4, H-07: advertised ∩ policy, sent as leaves, never as a covering wildcard."""
    grant = effective_grant(["channels.register", "channels.publish", "bogus"], ["channels.*"])
    assert grant.patterns == ("channels.publish", "channels.register")
    assert not grant.allows("channels.incoming")


def test_the_effective_grant_is_empty_when_policy_matches_nothing_advertised() -> None:
    assert effective_grant(CAPABILITY_PATHS, ["channels"]) == Grant.empty()
    assert effective_grant([], ["*", "*.*"]) == Grant.empty()


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("channels.publish", True),
        ("discord:acme/*", False),
        ("a-b_c.*:d", True),
        ("", False),
        ("chat:ns=1", False),
        ("with space", False),
        ("ünïcode", False),
    ],
)
def test_the_path_charset_is_ascii_identifiers_with_dot_colon_star_dash(
    path: str, ok: bool
) -> None:
    """mcpl-protocol.md 3.1: paths match [A-Za-z0-9._:*-]."""
    assert validate_path_charset(path) is ok


def test_a_non_string_never_passes_the_charset_check() -> None:
    assert not validate_path_charset(None)
    assert not validate_path_charset(["tools"])


# --- advertisement flattening (§5.1; mcpl-protocol.md 1.5) ---------------------------


def test_channels_true_advertises_all_seven_channel_leaves() -> None:
    """§5.1: `true` at a node means every leaf below it."""
    assert advertised_paths({"channels": True}) == CHANNEL_LEAVES


def test_a_channels_object_advertises_exactly_its_true_leaves() -> None:
    adv = {"channels": {"register": True, "publish": True, "streaming": False, "typing": None}}
    assert advertised_paths(adv) == {"channels.register", "channels.publish"}


def test_before_inference_true_advertises_observe_and_all_three_inject_leaves() -> None:
    """§5.1: the shorthand expands through any depth (here two levels of nesting)."""
    adv = {"contextHooks": {"beforeInference": True}}
    assert advertised_paths(adv) == BEFORE_INFERENCE_LEAVES


def test_the_flatten_is_generic_to_four_levels() -> None:
    """§5.4, AUDIT §2.8: no fixed list of nestable keys; depth-4 leaves are reachable."""
    adv = {"contextHooks": {"beforeInference": {"inject": {"afterUser": True, "system": False}}}}
    assert advertised_paths(adv) == {"contextHooks.beforeInference.inject.afterUser"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({}, {"inferenceRequest"}),
        ({"streaming": False}, {"inferenceRequest"}),
        ({"streaming": True}, {"inferenceRequest", "inferenceRequest.streaming"}),
        (True, {"inferenceRequest", "inferenceRequest.streaming"}),
        (False, set()),
    ],
)
def test_an_inference_request_object_advertises_the_method_path(
    value: Any, expected: set[str]
) -> None:
    """A-11: `inferenceRequest: {}` or `{streaming:false}` advertises the method, not streaming."""
    assert advertised_paths({"inferenceRequest": value}) == expected


def test_mcp_tools_capability_advertises_the_tools_path() -> None:
    """A-12: `tools` is advertised by MCP's capabilities.tools, outside experimental.mcpl."""
    assert advertised_paths({}, mcp_capabilities={"tools": {}}) == {"tools"}
    assert advertised_paths({}, mcp_capabilities={"resources": {}}) == frozenset()
    assert advertised_paths({}) == frozenset()


def test_the_discord_04_advertisement_flattens_to_push_and_all_channel_leaves(
    discord_advertisement: dict[str, Any],
) -> None:
    """peers.md §2: channels:true and a featureSets array; root `rollback` is not a path."""
    assert advertised_paths(discord_advertisement, mcp_capabilities={"tools": {}}) == (
        CHANNEL_LEAVES | {"pushEvents", "tools"}
    )
    assert unknown_advertised_members(discord_advertisement) == ("rollback",)


def test_the_slack_05_advertisement_flattens_to_its_declared_leaves(
    slack_advertisement: dict[str, Any],
) -> None:
    """peers.md §9: no acknowledge and no typing are advertised."""
    assert advertised_paths(slack_advertisement) == {
        "pushEvents",
        "channels.register",
        "channels.lifecycle",
        "channels.publish",
        "channels.incoming",
        "channels.streaming",
    }


def test_non_spec_members_are_ignored_and_reported() -> None:
    """peers.md §14: scopedAccess, observe, stateUpdate, afterInference are not paths."""
    adv = {
        "version": "0.5",
        "revision": "sha256:x",
        "featureSets": True,
        "scopedAccess": True,
        "observe": True,
        "channels": {"observe": True, "publish": True},
        "contextHooks": {"beforeInference": True, "afterInference": {"blocking": True}},
        "pushEvents": "yes",
    }
    assert advertised_paths(adv) == BEFORE_INFERENCE_LEAVES | {"channels.publish"}
    assert set(unknown_advertised_members(adv)) == {
        "scopedAccess",
        "observe",
        "channels.observe",
        "contextHooks.afterInference",
        "pushEvents",
    }


def test_an_object_at_a_pure_leaf_advertises_nothing() -> None:
    """§5.1: leaves are booleans; only a parent node may hold an object."""
    adv = {"pushEvents": {}, "channels": {"publish": {"really": True}, "typing": True}}
    assert advertised_paths(adv) == {"channels.typing"}
    assert set(unknown_advertised_members(adv)) == {"pushEvents", "channels.publish"}


def test_dotted_member_names_flatten_like_nested_objects() -> None:
    """A-13: `.` is legal inside member names; both spellings reach the same path."""
    assert advertised_paths({"channels.publish": True}) == {"channels.publish"}
    assert advertised_paths({"contextHooks.beforeInference": {"inject.system": True}}) == {
        "contextHooks.beforeInference.inject.system"
    }


def test_version_revision_and_feature_sets_never_advertise_paths() -> None:
    adv = {"version": "0.5", "featureSets": {"x": {"uses": ["tools"], "pushEvents": True}}}
    assert advertised_paths(adv) == frozenset()
