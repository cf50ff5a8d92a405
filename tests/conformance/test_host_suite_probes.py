"""The host suite's reading of what a host sends: gates, bare parents, grants (no processes)."""

from __future__ import annotations

from typing import Any

import pytest

from switchboard.conformance.common.outcomes import CheckFailed
from switchboard.conformance.host.manifest import BASE_MANIFEST, with_revision
from switchboard.conformance.host.probes import (
    BARE_PARENTS,
    HOOK_LEAVES,
    effective,
    enabled_sets,
    gate_of,
    outside_grant,
    push_params,
)
from switchboard.conformance.host.session import HostMessage, manifest_of
from switchboard.protocol import Grant, PushEventParams, manifest_digest


def sent(method: str, params: Any = None, *, request: bool = False) -> HostMessage:
    return HostMessage(1, method, params, request, True)


def test_bare_parents_are_the_prefixes_that_are_not_paths_themselves() -> None:
    expected = {
        "channels",
        "contextHooks",
        "contextHooks.beforeInference",
        "contextHooks.beforeInference.inject",
    }
    assert set(BARE_PARENTS) == expected
    assert "inferenceRequest" not in BARE_PARENTS  # a path and a parent at once


def test_a_hook_needs_any_observe_or_inject_leaf_and_other_methods_their_gate() -> None:
    assert gate_of(sent("context/beforeInference")) == HOOK_LEAVES
    assert len(HOOK_LEAVES) == 4
    assert gate_of(sent("channels/publish")) == ("channels.publish",)
    assert gate_of(sent("channels/outgoing/chunk")) == ("channels.streaming",)
    assert gate_of(sent("inference/chunk")) == ("inferenceRequest",)
    assert gate_of(sent("mcpl/manifest")) is None
    assert gate_of(sent("featureSets/update")) is None


def test_what_a_host_sends_is_judged_against_its_grant_with_one_segment_wildcards() -> None:
    """H-23, H-45: the grant ``channels.*`` covers publish; ``contextHooks.*`` covers no hook."""
    traffic = [
        sent("channels/publish"),
        sent("channels/typing"),
        sent("context/beforeInference"),
        sent("inference/lifecycle"),
        sent("mcpl/manifest"),
    ]
    grant = Grant(["channels.*", "contextHooks.*"])
    assert outside_grant(traffic, grant) == [
        "context/beforeInference (needs " + " or ".join(HOOK_LEAVES) + ")",
        "inference/lifecycle (needs inferenceLifecycle)",
    ]
    inject_only = Grant(["contextHooks.beforeInference.inject.beforeUser"])
    assert outside_grant([sent("context/beforeInference")], inject_only) == []


def test_a_policy_without_effective_capabilities_grants_nothing_and_junk_fails_the_check() -> None:
    assert effective(sent("featureSets/update", {"enabled": []}, request=True)) == []
    assert enabled_sets(sent("featureSets/update", {}, request=True)) is None
    assert enabled_sets(sent("featureSets/update", {"enabled": ["a"]}, request=True)) == ["a"]
    with pytest.raises(CheckFailed, match="not a list of strings"):
        effective(sent("featureSets/update", {"effectiveCapabilities": "channels.*"}))


def test_the_kits_push_event_is_well_formed_for_the_protocol_models() -> None:
    params = push_params("kit.push", "e-1", tags=["chat:mention"])
    parsed = PushEventParams.model_validate(params)
    assert parsed.feature_set == "kit.push"
    assert parsed.tags == ["chat:mention"]


def test_the_kits_manifests_carry_their_digest_and_a_plain_server_has_none() -> None:
    assert BASE_MANIFEST["revision"] == manifest_digest(dict(BASE_MANIFEST))
    changed = with_revision({**BASE_MANIFEST, "pushEvents": False})
    assert changed["revision"] != BASE_MANIFEST["revision"]
    assert "experimental" not in manifest_of(None)["capabilities"]
    assert manifest_of({"version": "0.5"})["capabilities"]["experimental"]["mcpl"] == {
        "version": "0.5"
    }
