"""The connector's side of the policy exchange, as a plain state object."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from switchboard.connector import PolicyState, build_manifest
from switchboard.transport import INVALID_PARAMS, RpcError


def state() -> PolicyState:
    return PolicyState(
        build_manifest(
            channels=True,
            push_events=True,
            feature_sets={
                "alerts": {"description": "alerts", "uses": ["pushEvents"]},
                "chat": {"description": "chat", "uses": ["channels.incoming", "channels.publish"]},
            },
            tools=False,
        )
    )


ALL = ["pushEvents", "channels.*"]


def test_nothing_is_allowed_before_any_policy() -> None:
    policy = state()
    assert not policy.ready
    assert policy.active == frozenset()
    assert policy.feature_set_status("alerts") == "capability_denied"


def test_a_full_grant_is_answered_without_a_mode_and_activates_on_commit() -> None:
    """S-08: when nothing degraded the receipt omits mode (no invented value)."""
    policy = state()
    change, receipt = policy.apply_request({"effectiveCapabilities": ALL})
    assert receipt == {"accepted": True}
    assert not policy.allows("channels.publish")  # an expansion waits for the receipt
    assert policy.commit(change)
    assert policy.ready
    assert policy.allows("channels.publish")
    assert policy.allows("pushEvents")
    assert policy.feature_set_status("alerts") is None


def test_a_partial_grant_is_answered_degraded_naming_the_sets_that_lost_capabilities() -> None:
    """S-07, S-08: every unavailableFeatures entry carries featureSet, missing and effect."""
    policy = state()
    _, receipt = policy.apply_request({"effectiveCapabilities": ["channels.incoming"]})
    assert receipt == {
        "accepted": True,
        "mode": "degraded",
        "unavailableFeatures": [
            {"featureSet": "alerts", "missingCapabilities": ["pushEvents"], "effect": "disabled"},
            {
                "featureSet": "chat",
                "missingCapabilities": ["channels.publish"],
                "effect": "disabled",
            },
        ],
    }


def test_an_absent_grant_grants_nothing() -> None:
    """S-09: a Request with only enabled:[...] leaves the connector unprivileged."""
    policy = state()
    change, _ = policy.apply_request({"enabled": ["alerts", "chat"]})
    policy.commit(change)
    assert policy.ready
    assert policy.active == frozenset()


def test_wildcards_match_exactly_one_segment() -> None:
    """S-11: contextHooks.* grants no inject leaf; channels.* grants the channel leaves."""
    policy = state()
    change, _ = policy.apply_request({"effectiveCapabilities": ["contextHooks.*", "channels.*"]})
    policy.commit(change)
    assert policy.allows("channels.incoming")
    assert not policy.allows("pushEvents")
    assert not any(path.startswith("contextHooks") for path in policy.active)


def test_a_grant_wider_than_the_advertisement_never_allows_an_unadvertised_path() -> None:
    policy = state()
    change, _ = policy.apply_request({"effectiveCapabilities": ["modelInfo", "*", "*.*"]})
    policy.commit(change)
    assert not policy.allows("modelInfo")
    assert policy.allows("pushEvents")


def test_a_path_both_granted_and_denied_is_malformed_and_fails_closed() -> None:
    """S-12: reject with -32602 and do not exercise the path."""
    policy = state()
    change, _ = policy.apply_request({"effectiveCapabilities": ALL})
    policy.commit(change)
    with pytest.raises(RpcError) as caught:
        policy.apply_request(
            {
                "effectiveCapabilities": ["channels.publish"],
                "deniedCapabilities": ["channels.publish"],
            }
        )
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {
        "errors": [
            {
                "field": "deniedCapabilities",
                "message": "'channels.publish' is both granted and denied",
            }
        ]
    }
    assert policy.active == frozenset()


def test_a_pattern_outside_the_charset_is_malformed_and_named_with_its_list() -> None:
    """S-12: each bad pattern is one invalid_params problem, under the list that holds it."""
    policy = state()
    with pytest.raises(RpcError) as caught:
        policy.apply_request(
            {"effectiveCapabilities": ["tools", "bad path"], "deniedCapabilities": ["x/y"]}
        )
    assert caught.value.code == INVALID_PARAMS
    assert [p["field"] for p in caught.value.data["errors"]] == [
        "effectiveCapabilities",
        "deniedCapabilities",
    ]
    assert "'bad path'" in caught.value.data["errors"][0]["message"]
    assert policy.active == frozenset()


def test_params_that_are_not_a_policy_fail_closed_too() -> None:
    policy = state()
    change, _ = policy.apply_request({"effectiveCapabilities": ALL})
    policy.commit(change)
    with pytest.raises(ValidationError):
        policy.apply_request({"effectiveCapabilities": "channels.*"})
    assert policy.active == frozenset()


def test_a_reduction_applies_at_once_before_its_receipt_is_sent() -> None:
    """S-13: a server respects a reduction immediately."""
    policy = state()
    first, _ = policy.apply_request({"effectiveCapabilities": ALL})
    policy.commit(first)
    policy.apply_request({"effectiveCapabilities": ["pushEvents", "channels.publish"]})
    assert not policy.allows("channels.incoming")
    assert policy.allows("channels.publish")


def test_a_superseded_change_is_never_committed() -> None:
    policy = state()
    older, _ = policy.apply_request({"effectiveCapabilities": ALL})
    newer, _ = policy.apply_request({"effectiveCapabilities": ["channels.incoming"]})
    assert not policy.commit(older)
    assert not policy.ready
    assert policy.commit(newer)
    assert policy.active == {"channels.incoming"}


def test_enabled_is_an_allowlist_and_disabled_subtracts() -> None:
    """S-14."""
    policy = state()
    change, _ = policy.apply_request({"effectiveCapabilities": ALL, "enabled": ["chat"]})
    policy.commit(change)
    assert policy.feature_set_status("alerts") == "not_selected"
    assert policy.feature_set_status("chat") is None
    change, _ = policy.apply_request({"effectiveCapabilities": ALL, "disabled": ["chat"]})
    assert policy.feature_set_status("chat") == "disabled"  # subtracting is immediate
    policy.commit(change)
    assert policy.feature_set_status("alerts") is None


def test_a_notification_only_narrows_and_never_makes_the_connection_ready() -> None:
    """S-04, S-14: effectiveCapabilities in a Notification is ignored; disabled applies."""
    policy = state()
    ignored = policy.apply_notification({"effectiveCapabilities": ALL, "disabled": ["alerts"]})
    assert ignored == ["effectiveCapabilities"]
    assert not policy.ready
    assert policy.active == frozenset()
    change, _ = policy.apply_request({"effectiveCapabilities": ALL})
    policy.commit(change)
    assert policy.feature_set_status("alerts") is None  # the Request is a complete statement
    policy.apply_notification({"disabled": ["alerts"]})
    assert policy.feature_set_status("alerts") == "disabled"
    assert policy.allows("pushEvents")
