"""The host suite against real hosts: Switchboard passes, each planted defect fails exactly.

Every host here is a real subprocess: Switchboard behind a generated config
(:mod:`tests.conformance.hostdefects.switchboard_host`), a clean raw-asyncio host, and raw
hosts with one rule broken each. The kit's connector is a relay subprocess they spawn.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from switchboard.conformance.common.catalogue import load_catalogue
from switchboard.conformance.common.outcomes import Outcome
from switchboard.conformance.common.report import render_text, report_json
from switchboard.conformance.host_suite import (
    HOST_CHECKS,
    HostTarget,
    SuiteOptions,
    host_check_ids,
    run_host_suite,
)

pytestmark = [pytest.mark.anyio]

REPO: Final = Path(__file__).resolve().parents[2]
FAST: Final = SuiteOptions(
    check_timeout=40.0, request_timeout=3.0, expect_within=5.0, silence=1.0, concurrency=6
)

# What a host that runs no inference of its own never sends, so these stay "not exercised".
NO_INFERENCE: Final = frozenset(
    {
        "host.push.deduplicated_by_event_id",
        "host.hooks.inference_traffic_shape",
        "host.hooks.observe_gets_user_text",
        "host.hooks.timeout_proceeds",
        "host.hooks.inference_request_streaming",
        # Both hosts grant explicit leaves, never a bare parent.
        "host.grant.bare_parent_grants_nothing",
    }
)
# With no agent attached Switchboard publishes and streams nothing.
NO_AGENT: Final = frozenset(
    {
        "host.channels.no_streaming_undeclared",
        "host.grant.nothing_sent_outside_grant",
        "host.channels.streams_well_formed",
        "host.channels.complete_matches_chunks",
    }
)
ALL: Final = frozenset(host_check_ids())
POLICY_REQUEST: Final = "host.policy.initial_update_is_request"
THE_POLICY_ITSELF: Final = frozenset(
    {
        "host.handshake.advertises_mcpl",
        "host.grant.within_advertised_and_policy",
        "host.grant.effective_and_denied_disjoint",
        # A plain MCP server gets no policy at all, so it does not depend on one.
        "host.general.no_mcpl_without_advertisement",
    }
)
EXPECTED_FAILURES: Final[dict[str, frozenset[str]]] = {
    # One failure for the cause: without a policy Request there is no receipt, so every
    # check that needs one is "not exercised" (the test below), never a cascade of failures.
    "policy_notification": frozenset({POLICY_REQUEST}),
    # Serving channels/register without a completed policy exchange shows in every state
    # where there is none: before the receipt, after an mcp-only refusal, and MCP-only.
    "register_before_policy": frozenset(
        {
            "host.policy.privileged_rejected_before_ready",
            "host.grant.mcp_only_fallback_stops_mcpl",
            "host.general.no_mcpl_without_advertisement",
        }
    ),
    "register_not_itemized": frozenset({"host.channels.register_itemized"}),
    "list_silent": frozenset(
        {"host.channels.list_answered", "host.requests.every_request_answered"}
    ),
    "incoming_first_result": frozenset({"host.channels.incoming_result_per_message"}),
    "manifest_not_fetched": frozenset({"host.manifest.fetch_before_acting"}),
    "manifest_additions_granted": frozenset({"host.manifest.additions_not_granted"}),
    "manifest_fetch_unbounded": frozenset({"host.manifest.fetch_rate_bounded"}),
    "manifest_revision_trusted": frozenset({"host.manifest.unchanged_revision_not_trusted"}),
    "manifest_garbage_drops_mcpl": frozenset({"host.manifest.unparseable_keeps_old"}),
    # The kit's stale revision is also not the digest, so refusing mismatches breaks both.
    "manifest_digest_enforced": frozenset(
        {
            "host.manifest.digest_mismatch_not_rejected",
            "host.manifest.unchanged_revision_not_trusted",
        }
    ),
}


def host(module: str, *args: str) -> HostTarget:
    """A host from tests/conformance/hostdefects, run from the repository root."""
    command = (sys.executable, "-m", f"tests.conformance.hostdefects.{module}", *args)
    return HostTarget((*command, "{connector}"), cwd=str(REPO))


async def outcomes(
    target: HostTarget, *, only: list[str] | None = None, options: SuiteOptions = FAST
) -> dict[str, Outcome]:
    report = await run_host_suite(target, only=only, options=options)
    return {result.check_id: result.outcome for result in report.results}


def of(seen: dict[str, Outcome], outcome: Outcome) -> set[str]:
    return {check for check, got in seen.items() if got is outcome}


@pytest.mark.slow
async def test_switchboard_passes_every_host_check_it_can_exercise() -> None:
    seen = await outcomes(host("switchboard_host"))
    assert set(seen) == ALL
    assert of(seen, Outcome.FAIL) == set()
    assert of(seen, Outcome.NOT_EXERCISED) == NO_INFERENCE | NO_AGENT
    assert of(seen, Outcome.PASS) == ALL - NO_INFERENCE - NO_AGENT


@pytest.mark.slow
async def test_switchboard_run_as_an_operator_starts_it_passes_the_manifest_checks() -> None:
    """``switchboard run`` itself (not the in-process host) for the §17 handling."""
    only = ["host.handshake.advertises_mcpl", "host.manifest.removals_host_first"]
    seen = await outcomes(host("switchboard_host", "--full"), only=only)
    assert seen == dict.fromkeys(only, Outcome.PASS)


@pytest.mark.slow
async def test_a_host_that_dials_its_connector_at_the_kits_url_is_checked_the_same_way() -> None:
    """URL mode: ``{url}`` is the kit's own listener; Switchboard dials it over TCP."""
    only = [
        "host.handshake.advertises_mcpl",
        "host.policy.initial_update_is_request",
        "host.manifest.removals_host_first",
    ]
    command = (sys.executable, "-m", "tests.conformance.hostdefects.switchboard_host")
    target = HostTarget((*command, "--url", "{url}"), cwd=str(REPO))
    seen = await outcomes(target, only=only)
    assert seen == dict.fromkeys(only, Outcome.PASS)


def test_a_host_command_must_say_where_the_kit_goes() -> None:
    with pytest.raises(ValueError, match=r"\{connector\} or \{url\}"):
        HostTarget(("myhost", "--verbose"))
    assert HostTarget(("h", "--dial={url}")).argv(["c"], url="tcp://x:1") == [
        "h",
        "--dial=tcp://x:1",
    ]


@pytest.mark.slow
async def test_the_clean_raw_host_passes_so_each_defect_is_its_only_difference() -> None:
    seen = await outcomes(host("rawhost"))
    assert of(seen, Outcome.FAIL) == set()
    assert of(seen, Outcome.NOT_EXERCISED) == NO_INFERENCE
    # Its echo "agent" publishes and streams, so those checks pass rather than go unexercised.
    assert of(seen, Outcome.PASS) >= NO_AGENT


@pytest.mark.slow
async def test_each_planted_defect_host_fails_exactly_the_checks_of_its_rule() -> None:
    """All defect hosts at once (each suite run is mostly waiting), compared in one dict."""
    options = SuiteOptions(
        check_timeout=40.0, request_timeout=3.0, expect_within=5.0, silence=1.0, concurrency=3
    )
    failing: dict[str, frozenset[str]] = {}

    async def run(module: str) -> None:
        seen = await outcomes(host(module), options=options)
        failing[module] = frozenset(of(seen, Outcome.FAIL))

    async with anyio.create_task_group() as tg:
        for module in EXPECTED_FAILURES:
            tg.start_soon(run, module)
    assert failing == EXPECTED_FAILURES


def test_every_host_check_names_the_requirements_whose_catalogue_entry_names_it() -> None:
    catalogue = load_catalogue()
    for check in HOST_CHECKS:
        for requirement_id in check.requirements:
            requirement = catalogue.by_id[requirement_id]
            assert requirement.target == "host"
            if requirement.check == check.id:
                assert not requirement.planned, requirement_id
        named = {r.id for r in catalogue.requirements if r.check == check.id}
        assert named <= set(check.requirements), check.id


def test_every_host_requirement_has_a_written_check_or_a_reason() -> None:
    """Issue #5: each H-xx is a check here, or not checkable from outside with the reason."""
    catalogue = load_catalogue()
    for requirement in catalogue.requirements:
        if requirement.target != "host":
            continue
        if requirement.not_checkable is None:
            assert requirement.check in ALL, requirement.id
            assert requirement.id in HOST_CHECKS[requirement.check].requirements
        else:
            assert requirement.check is None, requirement.id


def test_the_connector_placeholder_expands_to_the_relay_argv_in_place() -> None:
    target = HostTarget(("host", "--spawn", "{connector}", "--then", "cmd={connector}"))
    argv = target.argv(["py", "-m", "relay x"])
    assert argv == ["host", "--spawn", "py", "-m", "relay x", "--then", "cmd=py -m 'relay x'"]


def test_a_host_command_without_the_placeholder_is_refused() -> None:
    with pytest.raises(ValueError, match="connector"):
        HostTarget(("host", "--no-placeholder"))
    with pytest.raises(ValueError, match="empty"):
        HostTarget.of([])


def test_each_host_check_has_the_strongest_level_of_its_host_requirements() -> None:
    catalogue = load_catalogue()
    for check in HOST_CHECKS:
        levels = {catalogue.by_id[r].level for r in check.requirements}
        assert {catalogue.by_id[r].target for r in check.requirements} == {"host"}
        strongest = next(level for level in ("MUST", "SHOULD", "MAY") if level in levels)
        assert check.level == strongest, check.id


@pytest.mark.slow
async def test_a_policy_sent_as_a_notification_fails_once_and_the_rest_name_that_cause() -> None:
    """H-02: the one failure. Checks of the policy's content (H-07, H-08) still judge it; the
    checks that need a receipt are "not exercised" and name the cause."""
    report = await run_host_suite(host("policy_notification"), options=FAST)
    seen = {result.check_id: result.outcome for result in report.results}
    assert of(seen, Outcome.FAIL) == {POLICY_REQUEST}
    assert of(seen, Outcome.PASS) == THE_POLICY_ITSELF
    unexercised = of(seen, Outcome.NOT_EXERCISED)
    assert unexercised == ALL - THE_POLICY_ITSELF - {POLICY_REQUEST}
    for result in report.results:
        if result.outcome is Outcome.NOT_EXERCISED:
            assert "the host sent no policy Request" in result.message, result.check_id
            assert POLICY_REQUEST in result.message, result.check_id


@pytest.mark.slow
async def test_a_failed_host_check_shows_the_tail_of_what_the_host_wrote_to_stderr() -> None:
    """H-52 (the failing check): as for a connector, a host's failure carries the last lines
    it wrote to stderr, in the text and the JSON report; a passing check carries none."""
    listed, advertised = "host.channels.list_answered", "host.handshake.advertises_mcpl"
    report = await run_host_suite(host("list_silent"), only=[listed, advertised], options=FAST)
    failure = report[listed]
    assert failure.outcome is Outcome.FAIL
    said = [line for line in failure.stderr if "left unanswered" in line]
    assert said, failure.stderr
    assert said[0].startswith("[1] rawhost: channels/list")
    text = render_text(report)
    assert "the target's stderr (last" in text
    assert said[0] in text
    [checks] = [
        s["checks"] for s in report_json(report)["sections"] if s["checks"][0]["id"] == listed
    ]
    assert said[0] in checks[0]["stderr"]
    assert report[advertised].outcome is Outcome.PASS
    assert report[advertised].stderr == ()


@pytest.mark.slow
async def test_h05_is_not_exercised_when_the_host_sends_its_policy_as_a_notification() -> None:
    """H-05 (privileged requests before the receipt get an error) needs the window between
    the policy Request and its receipt. A legacy host that sends the policy as a Notification
    opens no such window (there is no receipt to wait for), so H-05 could not be tried: it is
    "not exercised" and names H-02's check, which is the one failure for that host; never a
    pass (nothing was refused) nor a second failure for the same cause."""
    h05 = "host.policy.privileged_rejected_before_ready"
    report = await run_host_suite(
        host("policy_notification"), only=[POLICY_REQUEST, h05], options=FAST
    )
    assert report[h05].outcome is Outcome.NOT_EXERCISED
    assert "featureSets/update came as a Notification" in report[h05].message
    assert POLICY_REQUEST in report[h05].message
    assert report.failed_ids == {POLICY_REQUEST}
    assert report[h05].requirements == ("H-05",)
