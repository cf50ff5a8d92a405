"""The pure shape rules the server checks apply to what a server sends."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.conformance.common.shapes import (
    advertisement_problems,
    change_domains,
    descriptor_problems,
    incoming_problems,
    injection_problems,
    is_iso8601,
    manifest_changed_problems,
    push_problems,
    receipt_problems,
    tag_problems,
    tag_warnings,
    umbrella_problems,
)

REVISION = "sha256:" + "A" * 43


def _init(mcpl: Any) -> dict[str, Any]:
    return {"capabilities": {"experimental": {"mcpl": mcpl}}}


GOOD = {
    "version": "0.5",
    "revision": REVISION,
    "pushEvents": True,
    "channels": {"register": True, "publish": False},
    "contextHooks": {"beforeInference": {"observe": True, "inject": {"system": False}}},
    "featureSets": {"chat.main": {"description": "Chat", "uses": ["pushEvents"]}},
    "rollback": True,  # a non-spec member: tolerated
}


def test_a_well_shaped_advertisement_has_no_problems() -> None:
    assert advertisement_problems(_init(GOOD)) == []
    assert advertisement_problems(_init({"version": "0.5", "channels": True})) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"version": 0.5}, "version is 0.5"),
        ({"version": "0.4"}, "version is '0.4'"),
        ({"revision": "sha256:short"}, "revision"),
        ({"featureSets": [{"name": "a", "uses": ["tools"]}]}, "not an object keyed by name"),
        ({"featureSets": {"a": {"uses": ["tools"]}}}, "no description"),
        ({"featureSets": {"a": {"description": "A", "uses": []}}}, "non-empty array"),
        (
            {"featureSets": {"a": {"description": "A", "uses": ["contextHooks.beforeInference"]}}},
            "not among the 17 paths",
        ),
        ({"featureSets": {"bad name": {"description": "A", "uses": ["tools"]}}}, "outside"),
        ({"channels": {"register": "yes"}}, "channels.register is str"),
        ({"pushEvents": 1}, "pushEvents is int"),
    ],
)
def test_each_advertisement_defect_is_named(change: dict[str, Any], problem: str) -> None:
    problems = advertisement_problems(_init({**GOOD, **change}))
    assert any(problem in p for p in problems), problems


def test_a_result_without_the_mcpl_object_is_one_problem() -> None:
    assert advertisement_problems({"capabilities": {}}) == [
        "the initialize result has no capabilities.experimental.mcpl object"
    ]
    assert advertisement_problems("nonsense") != []


@pytest.mark.parametrize(
    ("receipt", "ok"),
    [
        ({"accepted": True}, True),
        ({"accepted": False, "fallback": "mcp-only"}, True),
        ({"accepted": False}, False),
        ({"accepted": "yes"}, False),
        (
            {
                "accepted": True,
                "mode": "degraded",
                "unavailableFeatures": [
                    {"featureSet": "a", "missingCapabilities": ["tools"], "effect": "disabled"}
                ],
            },
            True,
        ),
        ({"accepted": True, "unavailableFeatures": [{"featureSet": "a"}]}, False),
        ([], False),
    ],
)
def test_receipts_are_held_to_the_schema(receipt: Any, ok: bool) -> None:
    assert (receipt_problems(receipt) == []) is ok


def test_descriptors_and_incoming_messages_need_their_required_members() -> None:
    good = {"id": "x:1", "type": "x", "label": "One", "direction": "inbound"}
    assert descriptor_problems(good) == []
    assert descriptor_problems({**good, "direction": "sideways"}) != []
    message = {
        "channelId": "x:1",
        "messageId": "m1",
        "author": {"id": "u", "name": "U"},
        "timestamp": "2026-01-02T03:04:05Z",
        "content": [{"type": "text", "text": "hi"}],
    }
    assert incoming_problems(message) == []
    assert incoming_problems({**message, "timestamp": "yesterday"}) != []
    assert incoming_problems({k: v for k, v in message.items() if k != "author"}) != []


def test_push_params_need_an_event_id_an_iso_timestamp_and_valid_content() -> None:
    good = {
        "featureSet": "a",
        "eventId": "e1",
        "timestamp": "2026-01-02T03:04:05.123+00:00",
        "payload": {"content": [{"type": "text", "text": "hi"}]},
    }
    assert push_problems(good) == []
    assert len(push_problems({**good, "eventId": "", "payload": {"content": "hi"}})) == 2


def test_tags_must_be_namespaced_and_core_tags_are_noted() -> None:
    assert tag_problems(["chat:mention", "discord:role=mod"]) == []
    assert tag_problems(["mention"]) == ["tags without a namespace: ['mention']"]
    assert tag_warnings(["chat:ambient", "chat:mention"]) != []
    assert tag_warnings(["chat:shouting"]) != []
    assert umbrella_problems(["chat:mention"]) == ["chat:mention without chat:addressed"]
    assert umbrella_problems(["chat:dm", "chat:addressed", "chat:private"]) == []


def test_manifest_changed_params_are_exactly_revision_and_domains() -> None:
    assert manifest_changed_problems({"revision": REVISION, "domains": ["featureSets"]}) == []
    assert manifest_changed_problems({"revision": REVISION, "domains": []}) != []
    extra = {"revision": REVISION, "domains": ["capabilities"], "summary": "we changed"}
    assert any("extra members" in p for p in manifest_changed_problems(extra))
    dupes = {"revision": REVISION, "domains": ["capabilities", "capabilities"]}
    assert manifest_changed_problems(dupes) != []


def test_change_domains_tell_absent_from_empty() -> None:
    before = {"version": "0.5"}
    assert change_domains(before, {**before, "featureSets": {}}) == {"featureSets", "tagOntology"}
    with_set: dict[str, Any] = {
        "version": "0.5",
        "featureSets": {"a": {"description": "A", "uses": ["tools"]}},
    }
    ontology = {"featureSets": {"a": {**with_set["featureSets"]["a"], "tagOntology": {}}}}
    assert change_domains(with_set, {**with_set, **ontology}) == {"tagOntology"}
    assert change_domains(before, {**before, "pushEvents": True}) == {"capabilities"}
    assert change_domains(before, {**before, "revision": REVISION}) == set()


manifests = st.dictionaries(
    st.sampled_from(["version", "revision", "pushEvents", "channels", "featureSets", "tools"]),
    st.recursive(
        st.none() | st.booleans() | st.text(max_size=3),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=3), children, max_size=3)
        ),
        max_leaves=8,
    ),
)


@given(manifests, manifests)
def test_change_domains_are_symmetric_and_empty_only_for_equal_content(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    domains = change_domains(old, new)
    assert domains == change_domains(new, old)
    assert change_domains(old, old) == set()
    assert domains <= {"capabilities", "featureSets", "tagOntology"}
    content = {k: v for k, v in old.items() if k not in ("version", "revision")}
    if domains == set():
        assert content == {k: v for k, v in new.items() if k not in ("version", "revision")}


def test_injection_answers_need_a_feature_set_and_valid_positions() -> None:
    good = {
        "featureSet": "memory",
        "contextInjections": [
            {"namespace": "m", "position": "afterUser", "content": "remember this"},
            {"namespace": "m", "position": "system", "content": [{"type": "text", "text": "x"}]},
        ],
    }
    assert injection_problems(good) == []
    bad = {"contextInjections": [{"namespace": "m", "position": "middle", "content": 3}]}
    assert len(injection_problems(bad)) == 3


def test_iso8601_needs_a_date_and_a_time() -> None:
    assert is_iso8601("2026-11-29T12:00:00Z")
    assert not is_iso8601("2026-11-29")
    assert not is_iso8601(1700000000)
