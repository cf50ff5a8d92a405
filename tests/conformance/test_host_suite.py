"""The host suite against real hosts: Switchboard passes, each planted defect fails exactly.

Every host here is a real subprocess: ``python -m switchboard run`` behind a generated config
(:mod:`tests.conformance.hostdefects.switchboard_host`), a clean raw-asyncio host, and four
raw hosts with one rule broken each. The kit's connector is a relay subprocess they spawn.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import pytest

from switchboard.conformance.catalogue import load_catalogue
from switchboard.conformance.host_suite import (
    HOST_CHECKS,
    HostTarget,
    SuiteOptions,
    host_check_ids,
    run_host_suite,
)
from switchboard.conformance.outcomes import Outcome

pytestmark = [pytest.mark.anyio]

REPO: Final = Path(__file__).resolve().parents[2]
FAST: Final = SuiteOptions(
    check_timeout=20.0, request_timeout=2.0, expect_within=5.0, silence=1.0, concurrency=6
)
STREAMING_CHECK: Final = "host.channels.no_streaming_undeclared"


def host(module: str) -> HostTarget:
    """A host from tests/conformance/hostdefects, run from the repository root."""
    command = (sys.executable, "-m", f"tests.conformance.hostdefects.{module}", "{connector}")
    return HostTarget(command, cwd=str(REPO))


async def outcomes(module: str) -> dict[str, Outcome]:
    report = await run_host_suite(host(module), options=FAST)
    return {result.check_id: result.outcome for result in report.results}


@pytest.mark.slow
async def test_switchboard_passes_every_implemented_host_check() -> None:
    seen = await outcomes("switchboard_host")
    assert set(seen) == set(host_check_ids())
    failing = {check for check, outcome in seen.items() if outcome is Outcome.FAIL}
    assert failing == set()
    # With no agent attached Switchboard publishes nothing, so H-46 cannot be exercised.
    assert seen.pop(STREAMING_CHECK) in (Outcome.PASS, Outcome.NOT_EXERCISED)
    assert set(seen.values()) == {Outcome.PASS}


@pytest.mark.slow
async def test_the_clean_raw_host_passes_so_each_defect_is_its_only_difference() -> None:
    seen = await outcomes("rawhost")
    assert {c for c, o in seen.items() if o is Outcome.FAIL} == set()


EVERYTHING_AFTER_THE_POLICY: Final = frozenset(host_check_ids()) - {
    "host.handshake.advertises_mcpl",
    "host.grant.within_advertised_and_policy",
    "host.grant.effective_and_denied_disjoint",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "expected"),
    [
        # Without a policy Request there is no receipt, so nothing after it can be tried.
        ("policy_notification", EVERYTHING_AFTER_THE_POLICY),
        ("register_before_policy", {"host.policy.privileged_rejected_before_ready"}),
        ("register_not_itemized", {"host.channels.register_itemized"}),
        (
            "list_silent",
            {"host.channels.list_answered", "host.requests.every_request_answered"},
        ),
    ],
)
async def test_a_planted_defect_host_fails_exactly_the_checks_of_its_rule(
    module: str, expected: frozenset[str]
) -> None:
    seen = await outcomes(module)
    assert {c for c, o in seen.items() if o is Outcome.FAIL} == set(expected)


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
