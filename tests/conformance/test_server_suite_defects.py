"""Planted defects: for each broken connector the kit fails exactly the checks it should.

Each defect (tests/conformance/defects/) is a real subprocess over stdio with one behaviour
broken. The kit runs the checks expected to fail plus a few that must still pass (a full
run per defect would take minutes), and the set of failed ids must equal the expected set
exactly. All defects run in one event loop, a few at a time, in a module fixture.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import pytest

from switchboard.conformance.outcomes import Outcome
from switchboard.conformance.report import Report
from switchboard.conformance.server_suite import (
    ServerTarget,
    SuiteOptions,
    run_server_suite,
    server_check_ids,
)

pytestmark = pytest.mark.slow

REPO: Final = Path(__file__).resolve().parents[2]
OPTIONS: Final = SuiteOptions(silence=0.8, concurrency=2)
SUITES_AT_ONCE: Final = 8


@dataclass(frozen=True, slots=True)
class Defect:
    """What one planted defect must fail, and what must still pass beside it."""

    fails: frozenset[str]
    also: tuple[str, ...] = ()
    full_run: bool = False

    @property
    def only(self) -> list[str] | None:
        return None if self.full_run else sorted(self.fails | set(self.also))


def _defect(fails: set[str], *also: str, full_run: bool = False) -> Defect:
    return Defect(frozenset(fails), also, full_run)


DEFECTS: Final[dict[str, Defect]] = {
    # handshake
    "no_mcpl": _defect({"server.handshake.advertisement_shape"}, full_run=True),
    "array_feature_sets": _defect(
        {"server.handshake.advertisement_shape"},
        "server.manifest.fetch_returns_full_manifest",
        "server.policy.receipt_mode",
    ),
    "register_before_policy": _defect(
        {"server.policy.idle_before_request", "server.policy.notification_never_ready"},
        "server.policy.absent_grant_is_empty",
        "server.grant.acts_within_grant",
        "server.channels.publish_unknown_channel",
    ),
    "notification_readies": _defect(
        {"server.policy.notification_never_ready", "server.policy.enabled_disabled_semantics"},
        "server.policy.idle_before_request",
        "server.policy.receipt_returned",
    ),
    "receipt_mode_full": _defect(
        {"server.policy.receipt_mode"},
        "server.policy.receipt_schema",
        "server.policy.receipt_returned",
    ),
    # grants
    "ungranted_accepted": _defect(
        {
            "server.grant.acts_within_grant",
            "server.grant.overlapping_lists_refused",
            "server.grant.reduction_respected",
            "server.policy.enabled_disabled_semantics",
        },
        "server.grant.wildcard_semantics",
    ),
    "bare_parent_grants_all": _defect(
        {"server.grant.wildcard_semantics"},
        "server.grant.acts_within_grant",
        "server.grant.reduction_respected",
    ),
    # registration and incoming
    "non_itemized_register": _defect(
        {"server.channels.itemized_rejection_honoured"},
        "server.channels.register_request_form",
        "server.channels.incoming_is_request",
    ),
    "incoming_notification": _defect(
        {"server.channels.incoming_is_request"},
        "server.tags.namespaced",
        "server.channels.publish_delivers",
    ),
    # publish
    "publish_without_message_id": _defect(
        {"server.channels.publish_delivers"},
        "server.channels.publish_unknown_channel",
        "server.requests.unknown_fields_tolerated",
    ),
    "unknown_channel_wrong_code": _defect(
        {"server.channels.publish_unknown_channel", "server.channels.itemized_rejection_honoured"},
        "server.channels.close",
    ),
    # lifecycle
    "close_unknown_accepted": _defect(
        {"server.channels.close"},
        "server.channels.open",
        "server.channels.publish_unknown_channel",
    ),
    # streaming
    "delivers_on_complete": _defect(
        {"server.channels.no_delivery_side_effect"},
        "server.channels.streaming_gaps_tolerated",
        "server.channels.publish_delivers",
    ),
    # requests and robustness
    "unknown_method_invalid_params": _defect(
        {"server.requests.every_request_answered"},
        "server.requests.unknown_fields_tolerated",
        "server.requests.survives_malformed_input",
    ),
    "unknown_method_silent": _defect(
        {"server.requests.every_request_answered"},
        "server.requests.survives_malformed_input",
    ),
    "dies_on_malformed_json": _defect(
        {"server.requests.survives_malformed_input"},
        "server.requests.every_request_answered",
        "server.handshake.advertisement_shape",
    ),
}


def _target(name: str) -> ServerTarget:
    command = (sys.executable, "-m", f"tests.conformance.defects.{name}")
    return ServerTarget(command=command, cwd=str(REPO))


async def _run_all() -> dict[str, Report]:
    reports: dict[str, Report] = {}
    limiter = anyio.CapacityLimiter(SUITES_AT_ONCE)

    async def run(name: str, defect: Defect) -> None:
        async with limiter:
            reports[name] = await run_server_suite(_target(name), only=defect.only, options=OPTIONS)

    async with anyio.create_task_group() as tg:
        for name, defect in DEFECTS.items():
            tg.start_soon(run, name, defect)
    return reports


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return anyio.run(_run_all)


def test_there_are_at_least_twelve_distinct_planted_defects() -> None:
    modules = {p.stem for p in (REPO / "tests/conformance/defects").glob("*.py")}
    assert set(DEFECTS) <= modules
    assert len(DEFECTS) >= 12
    assert len({d.fails for d in DEFECTS.values()}) >= 12


def test_every_expected_id_is_a_registered_check() -> None:
    for defect in DEFECTS.values():
        assert set(defect.fails) | set(defect.also) <= set(server_check_ids())


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_the_kit_fails_exactly_the_checks_a_planted_defect_breaks(
    name: str, reports: dict[str, Report]
) -> None:
    report = reports[name]
    messages = {r.check_id: r.message for r in report.results if r.outcome is Outcome.FAIL}
    assert report.failed_ids == DEFECTS[name].fails, messages
    assert report.exit_code == 1


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_failure_carries_the_message_exchange_that_shows_it(
    name: str, reports: dict[str, Report]
) -> None:
    for check_id in DEFECTS[name].fails:
        result = reports[name][check_id]
        assert result.message
        directions = {frame.direction for frame in result.frames}
        assert directions == {"sent", "received"}, check_id
        assert '"initialize"' in result.frames[0].text


def test_an_mcp_only_server_makes_every_other_check_not_applicable(
    reports: dict[str, Report],
) -> None:
    report = reports["no_mcpl"]
    assert report.ids(Outcome.NOT_APPLICABLE) == set(server_check_ids()) - {
        "server.handshake.advertisement_shape"
    }
    for result in report.results:
        if result.outcome is Outcome.NOT_APPLICABLE:
            assert result.frames == ()
