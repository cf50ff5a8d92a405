"""The whole server suite against Demo Town, a real subprocess over stdio, and its reports.

Demo Town (``python -m switchboard.connectors.demo --interval 0 --hello``) passes every
check that applies to it. One full run feeds every test here; the report formats are
checked on that real report.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

import anyio
import pytest

from switchboard.conformance.common.junit import render_junit, write_junit
from switchboard.conformance.common.outcomes import Outcome
from switchboard.conformance.common.report import Report, render_json, render_text
from switchboard.conformance.server.context import SECTIONS
from switchboard.conformance.server_suite import SuiteOptions, run_server_suite, server_check_ids

pytestmark = pytest.mark.slow

DEMO: Final = [
    sys.executable,
    "-m",
    "switchboard.connectors.demo",
    "--interval",
    "0",
    "--hello",
    "--log-level",
    "WARNING",
]
OPTIONS: Final = SuiteOptions(silence=0.8, policy_silence=0.8)

# What the demo offers decides each outcome: no push events, hooks, lifecycle, revision or
# rollback (not applicable), and no manifest change or channels/changed to observe.
NOT_APPLICABLE: Final = {
    "server.featuresets.uses_complete",
    "server.featuresets.declared_and_enabled",
    "server.push.params_complete",
    "server.push.stable_event_id_on_retry",
    "server.hooks.timely_valid_response",
    "server.hooks.no_inference_request_while_pending",
    "server.hooks.lifecycle_terminal_tolerance",
    "server.manifest.revision_is_digest",
    "server.manifest.revision_stable_across_restarts",
    "server.manifest.no_redundant_announcement",
    "server.state.rollback_unknown_checkpoint",
    "server.state.rollback_result_shape",
}
NOT_EXERCISED: Final = {
    "server.channels.changed_request_form",
    "server.manifest.changed_params_exact",
    "server.manifest.bursts_coalesced",
}


@pytest.fixture(scope="module")
def report() -> Report:
    return anyio.run(lambda: run_server_suite(DEMO, options=OPTIONS))


def test_the_demo_connector_fails_no_check(report: Report) -> None:
    failures = {r.check_id: r.message for r in report.results if r.outcome is Outcome.FAIL}
    assert failures == {}
    assert report.exit_code == 0


def test_every_registered_check_ran_once_in_report_order(report: Report) -> None:
    assert tuple(r.check_id for r in report.results) == server_check_ids()


def test_the_demo_passes_every_check_it_offers_something_for(report: Report) -> None:
    assert report.ids(Outcome.NOT_APPLICABLE) == NOT_APPLICABLE
    assert report.ids(Outcome.NOT_EXERCISED) == NOT_EXERCISED
    expected_passes = set(server_check_ids()) - NOT_APPLICABLE - NOT_EXERCISED
    assert report.ids(Outcome.PASS) == expected_passes
    assert len(expected_passes) >= 25


def test_not_applicable_checks_open_no_connection_and_others_record_both_directions(
    report: Report,
) -> None:
    for result in report.results:
        if result.outcome is Outcome.NOT_APPLICABLE:
            assert result.frames == ()
        else:
            assert {f.direction for f in result.frames} == {"sent", "received"}
            assert json.loads(result.frames[0].text)["method"] == "initialize"


def test_the_delivery_check_was_calibrated_by_a_real_publish(report: Report) -> None:
    result = report["server.channels.no_delivery_side_effect"]
    assert "a real publish showed up in channels/incoming" in result.message
    sent = [json.loads(f.text) for f in result.frames if f.direction == "sent"]
    methods = [m.get("method") for m in sent]
    assert methods.count("channels/outgoing/chunk") == 5  # three granted, two stray
    assert methods.count("channels/outgoing/complete") == 2


def test_the_terminal_report_groups_results_by_section_in_order(report: Report) -> None:
    text = render_text(report)
    positions = [text.index(f"\n{section}\n") for section in SECTIONS]
    assert positions == sorted(positions)
    assert "Summary: " in text
    assert "link errors: none" in text
    assert "message exchange" not in text  # only failures show their frames


def test_the_json_report_holds_every_frame_of_every_check(report: Report) -> None:
    data = json.loads(render_json(report))
    assert data["summary"]["fail"] == 0
    assert data["summary"]["exit_code"] == 0
    assert [s["section"] for s in data["sections"]] == list(SECTIONS)
    checks = [c for s in data["sections"] for c in s["checks"]]
    assert len(checks) == len(server_check_ids())
    frames = sum(len(c["frames"]) for c in checks)
    assert frames == sum(len(r.frames) for r in report.results)
    first = checks[0]["frames"][0]
    assert first["direction"] == "sent"
    assert first["message"]["method"] == "initialize"
    assert data["coverage"]["link_errors"] == []


def test_the_junit_report_is_xml_with_one_case_per_check(report: Report, tmp_path: Path) -> None:
    path = tmp_path / "server.xml"
    write_junit(report, path)
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    assert path.read_text(encoding="utf-8") == render_junit(report)
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == list(server_check_ids())
    assert root.findall(".//failure") == []
    skipped = len(NOT_APPLICABLE) + len(NOT_EXERCISED)
    assert len(root.findall(".//skipped")) == skipped
    assert root.get("skipped") == str(skipped)
    assert [s.get("name") for s in root.findall("testsuite")] == list(SECTIONS)


def test_the_report_states_the_catalogue_coverage(report: Report) -> None:
    coverage = report.coverage
    assert coverage is not None
    assert coverage.link_errors == ()
    assert len(coverage.implemented) == coverage.total == 46
    assert set(coverage.planned) == set()
