"""Planted defects: for each broken connector the kit fails exactly the checks it should.

Each defect (tests/conformance/defects/, expectations in ``defects/expected.py``) is a real
subprocess over stdio with one behaviour broken. The kit runs the checks expected to fail
plus a few that must still pass (a full run per defect would take minutes), and the set of
failed ids must equal the expected set exactly. The unbroken raw connector most defects are
built on gets a full run and must fail nothing. Everything runs in one event loop, a few
suites at a time, in a module fixture.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Final

import anyio
import pytest

from switchboard.conformance.common.outcomes import Outcome
from switchboard.conformance.common.report import Report, render_text
from switchboard.conformance.server_suite import (
    ServerTarget,
    SuiteOptions,
    run_server_suite,
    server_check_ids,
)
from tests.conformance.defects.expected import CATEGORIES, DEFECTS, Defect

pytestmark = pytest.mark.slow

REPO: Final = Path(__file__).resolve().parents[2]
# Generous start and check limits: on a busy machine a connector process can take seconds
# to start, and only the limits the defects are about (request_timeout, silence) matter.
OPTIONS: Final = SuiteOptions(
    silence=0.8, policy_silence=0.8, concurrency=2, start_timeout=40, check_timeout=60
)
FULL_RUN_OPTIONS: Final = SuiteOptions(
    silence=0.8, policy_silence=0.8, concurrency=6, start_timeout=40
)
# The kit's default windows (the 6 s before the policy), for defects that act late.
DEFAULT_WINDOWS: Final = SuiteOptions(concurrency=2, start_timeout=40, check_timeout=60)
SUITES_AT_ONCE: Final = 6
RAW_BASE: Final = "rawkit"
ROLLBACK_BASE: Final = "rollkit"
ARRAY_ROLLBACK_BASE: Final = "array_rollkit"
ROLLBACK_CHECKS: Final = [
    "server.state.rollback_result_shape",
    "server.state.rollback_unknown_checkpoint",
]
BASES: Final = {"rawkit", "rollkit", "array_rollkit", "sdk", "expected", "__init__"}
ADVERTISEMENT: Final = "server.handshake.advertisement_shape"
# Issue #10 item 6: "the banner, the double count, the cascade and array-form rollback each
# get a defect that must fail exactly its own check". Each runs the whole suite, and its
# failures beyond those of the clean connector it is built on are exactly its own check.
# (The cascade is the host suite's: tests/conformance/test_host_suite.py.)
OWN_CHECK: Final = {
    "stdout_banner": ("server.transport.stdout_only_messages", RAW_BASE),  # S-46
    "policy_not_found": ("server.policy.receipt_returned", RAW_BASE),  # S-05; S-21 not again
    "array_rollback_unknown_accepted": (
        "server.state.rollback_unknown_checkpoint",  # S-44
        ARRAY_ROLLBACK_BASE,
    ),
}


def _target(name: str) -> ServerTarget:
    command = (sys.executable, "-m", f"tests.conformance.defects.{name}")
    return ServerTarget(command=command, cwd=str(REPO))


async def _run_all() -> dict[str, Report]:
    reports: dict[str, Report] = {}
    limiter = anyio.CapacityLimiter(SUITES_AT_ONCE)
    runs: dict[str, list[str] | None] = {RAW_BASE: None, ROLLBACK_BASE: None}
    runs[ARRAY_ROLLBACK_BASE] = None
    runs.update((name, defect.only) for name, defect in DEFECTS.items())

    async def run(name: str, only: list[str] | None) -> None:
        options = FULL_RUN_OPTIONS if only is None else OPTIONS
        if name in DEFECTS and DEFECTS[name].default_windows:
            options = DEFAULT_WINDOWS
        async with limiter:
            reports[name] = await run_server_suite(_target(name), only=only, options=options)

    async with anyio.create_task_group() as tg:
        for name, only in runs.items():
            tg.start_soon(run, name, only)
    return reports


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return anyio.run(_run_all)


def _must_failed(report: Report) -> bool:
    return any(r.level == "MUST" for r in report.results if r.outcome is Outcome.FAIL)


def test_there_are_at_least_twenty_four_planted_defects_two_in_every_category() -> None:
    modules = {p.stem for p in (REPO / "tests/conformance/defects").glob("*.py")}
    assert set(DEFECTS) == modules - BASES
    assert len(DEFECTS) >= 24
    per_category = Counter(defect.category for defect in DEFECTS.values())
    assert {c: n for c, n in per_category.items() if n < 2} == {}
    assert set(per_category) == set(CATEGORIES)


def test_the_defects_between_them_fail_most_of_the_checks_that_can_fail() -> None:
    failing = {check for defect in DEFECTS.values() for check in defect.fails}
    assert len(failing) >= 24
    assert len({defect.fails for defect in DEFECTS.values()}) >= 20


def test_every_expected_id_is_a_registered_check() -> None:
    for defect in DEFECTS.values():
        assert set(defect.fails) | set(defect.also) <= set(server_check_ids())


def test_the_unbroken_raw_connector_fails_no_check(reports: dict[str, Report]) -> None:
    report = reports[RAW_BASE]
    failures = {r.check_id: r.message for r in report.results if r.outcome is Outcome.FAIL}
    assert failures == {}
    assert report.exit_code == 0
    assert len(report.ids(Outcome.PASS)) >= 25


def test_a_connector_that_rolls_back_correctly_fails_nothing_and_passes_both_state_checks(
    reports: dict[str, Report],
) -> None:
    """S-44, S-45: the control for the rollback defects, in a whole run."""
    report = reports[ROLLBACK_BASE]
    assert report.failed_ids == frozenset()
    assert report.warnings == ()
    for check_id in ROLLBACK_CHECKS:
        assert report[check_id].outcome is Outcome.PASS, report[check_id]


def test_the_same_connector_in_the_array_form_fails_only_the_advertisement_check(
    reports: dict[str, Report],
) -> None:
    """S-01 judges the 0.4 array of feature sets; S-44 and S-45 still run and pass."""
    report = reports[ARRAY_ROLLBACK_BASE]
    assert report.failed_ids == {ADVERTISEMENT}
    assert "featureSets is list" in report[ADVERTISEMENT].message
    for check_id in ROLLBACK_CHECKS:
        assert report[check_id].outcome is Outcome.PASS, report[check_id]


@pytest.mark.parametrize("name", sorted(OWN_CHECK))
def test_each_defect_named_in_issue_10_fails_exactly_its_own_check_in_a_whole_run(
    name: str, reports: dict[str, Report]
) -> None:
    """S-46 (a banner on stdout), S-05 (a failed policy Request, counted once: S-21 and the
    other dependants are not exercised), S-44 (array-form rollback): nothing else fails
    beyond what the clean connector each is built on fails."""
    own, control = OWN_CHECK[name]
    report = reports[name]
    assert DEFECTS[name].full_run
    assert [r.check_id for r in report.results] == list(server_check_ids())
    assert reports[control].failed_ids <= report.failed_ids
    assert report.failed_ids - reports[control].failed_ids == {own}


def _fails_exactly(name: str, defect: Defect, report: Report) -> None:
    messages = {r.check_id: r.message for r in report.results if r.outcome is Outcome.FAIL}
    assert report.failed_ids == defect.fails, messages
    assert report.exit_code == (1 if _must_failed(report) else 0)
    for check_id in defect.also:
        assert report[check_id].outcome is Outcome.PASS, (name, check_id, report[check_id])


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_the_kit_fails_exactly_the_checks_a_planted_defect_breaks(
    name: str, reports: dict[str, Report]
) -> None:
    _fails_exactly(name, DEFECTS[name], reports[name])


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


def test_only_a_should_level_defect_leaves_the_exit_status_at_zero(
    reports: dict[str, Report],
) -> None:
    report = reports["bursts_not_coalesced"]
    assert report["server.manifest.bursts_coalesced"].level == "SHOULD"
    assert report.exit_code == 0
    assert reports["chunk_posts"].exit_code == 1


def test_an_mcp_only_server_makes_every_other_check_not_applicable(
    reports: dict[str, Report],
) -> None:
    report = reports["no_mcpl"]
    assert report.ids(Outcome.NOT_APPLICABLE) == set(server_check_ids()) - {
        "server.handshake.advertisement_shape",
        # the stdio rule is MCP's own: it holds for a plain MCP server too (S-46)
        "server.transport.stdout_only_messages",
    }
    assert report["server.transport.stdout_only_messages"].outcome is Outcome.PASS
    for result in report.results:
        if result.outcome is Outcome.NOT_APPLICABLE:
            assert result.frames == ()


def test_a_policy_request_that_fails_is_one_failure_and_its_dependants_name_it(
    reports: dict[str, Report],
) -> None:
    """S-05 fails once; S-21 (unknown members), S-08 (receipt mode) and every check that
    needs a completed policy exchange say "not exercised" and name the cause."""
    report = reports["policy_not_found"]
    assert report.failed_ids == {"server.policy.receipt_returned"}
    unexercised = report.ids(Outcome.NOT_EXERCISED)
    assert {
        "server.requests.unknown_fields_tolerated",
        "server.policy.receipt_mode",
        "server.policy.idle_before_request",
        "server.channels.publish_delivers",
    } <= unexercised
    for check_id in unexercised:
        assert "the policy Request itself failed" in report[check_id].message, check_id
        assert "server.policy.receipt_returned" in report[check_id].message, check_id


def test_a_banner_on_stdout_fails_the_stdio_rule_and_quotes_the_line(
    reports: dict[str, Report],
) -> None:
    """S-46: the line is quoted with its wire position; the unbroken connector passes."""
    result = reports["stdout_banner"]["server.transport.stdout_only_messages"]
    assert result.outcome is Outcome.FAIL
    assert "[x] Client initialized" in result.message
    assert any("banner written to stdout" in line for line in result.stderr)
    assert "banner written to stdout" in render_text(reports["stdout_banner"])
    clean = reports[RAW_BASE]["server.transport.stdout_only_messages"]
    assert clean.outcome is Outcome.PASS


def test_the_default_window_before_the_policy_outlasts_a_slow_registration_timer(
    reports: dict[str, Report],
) -> None:
    """S-03, S-04: 6 s by default, longer than the 2.5 s timer a 2 s window missed."""
    assert SuiteOptions().policy_silence >= 5.0
    report = reports["register_on_timer"]
    assert "channels/register" in report["server.policy.idle_before_request"].message


def test_a_connector_whose_own_registration_failed_is_warned_about_with_its_stderr(
    reports: dict[str, Report],
) -> None:
    """Nothing fails, but the report says no channels were registered and why."""
    report = reports["register_raises"]
    assert report.failed_ids == frozenset()
    [warning] = report.warnings
    assert "registered no channels" in warning
    assert "no platform token configured" in warning
    assert "Warning: the server advertises channels.register" in render_text(report)
    assert reports[RAW_BASE].warnings == ()


def test_a_passing_check_carries_no_stderr_tail(reports: dict[str, Report]) -> None:
    for result in reports[RAW_BASE].results:
        assert result.stderr == (), result.check_id
