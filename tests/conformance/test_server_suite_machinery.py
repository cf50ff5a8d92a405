"""The kit's machinery without a server: registry, runner, reports, coverage, targets, wire."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from switchboard.conformance.common.catalogue import link_errors, load_catalogue
from switchboard.conformance.common.junit import render_junit
from switchboard.conformance.common.outcomes import (
    CheckResult,
    FrameRecord,
    Level,
    NotExercised,
    Outcome,
    Verdict,
    fail,
    passed,
)
from switchboard.conformance.common.registry import Check, CheckRegistry
from switchboard.conformance.common.report import Report, render_json, render_text
from switchboard.conformance.common.runner import run_checks
from switchboard.conformance.common.suite_coverage import suite_coverage
from switchboard.conformance.common.transcript import RecordingLink, Transcript
from switchboard.conformance.host_suite import HOST_CHECKS
from switchboard.conformance.server.answers import HostAnswers
from switchboard.conformance.server_suite import SERVER_CHECKS, server_coverage
from switchboard.conformance.target import ServerTarget
from switchboard.protocol import CapabilityDenied, Grant
from switchboard.transport import memory_link_pair
from tests.protocol import test_digest, test_digest_published

pytestmark = pytest.mark.anyio

Context = str


def _registry(*checks: tuple[str, Any]) -> CheckRegistry[Context]:
    registry: CheckRegistry[Context] = CheckRegistry("test")
    for check_id, run in checks:
        registry.add(Check(check_id, ("S-01",), "MUST", "One", check_id, run))
    return registry


async def _run(registry: CheckRegistry[Context], limit: float = 5.0) -> list[CheckResult]:
    return await run_checks(
        list(registry),
        lambda check, transcript: check.id,
        skip_reason=lambda check: "skipped" if check.id.endswith("skip") else None,
        limit=limit,
        concurrency=3,
    )


async def test_the_runner_turns_returns_raises_hangs_and_crashes_into_outcomes() -> None:
    async def passes(ctx: Context) -> Verdict:
        return passed(f"ran {ctx}")

    async def fails_in_a_task_group(ctx: Context) -> Verdict:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep, 10)
            fail("deep inside")
        raise AssertionError("unreachable")

    async def hangs(ctx: Context) -> Verdict:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def crashes(ctx: Context) -> Verdict:
        raise RuntimeError("kit bug")

    async def idle(ctx: Context) -> Verdict:
        raise NotExercised("nothing to see")

    async def never_called(ctx: Context) -> Verdict:
        raise AssertionError("a not-applicable check must not run")

    registry = _registry(
        ("t.passes", passes),
        ("t.fails", fails_in_a_task_group),
        ("t.hangs", hangs),
        ("t.crashes", crashes),
        ("t.idle", idle),
        ("t.skip", never_called),
    )
    with anyio.fail_after(5):
        results = await _run(registry, limit=0.2)
    by_id = {r.check_id: r for r in results}
    assert [r.check_id for r in results] == list(registry.ids)
    assert (by_id["t.passes"].outcome, by_id["t.passes"].message) == (Outcome.PASS, "ran t.passes")
    assert (by_id["t.fails"].outcome, by_id["t.fails"].message) == (Outcome.FAIL, "deep inside")
    assert by_id["t.hangs"].outcome is Outcome.FAIL
    assert "did not finish within 0.2 s" in by_id["t.hangs"].message
    assert "RuntimeError: kit bug" in by_id["t.crashes"].message
    assert by_id["t.idle"].outcome is Outcome.NOT_EXERCISED
    assert (by_id["t.skip"].outcome, by_id["t.skip"].message) == (Outcome.NOT_APPLICABLE, "skipped")


def test_the_registry_refuses_malformed_and_duplicate_ids_and_orders_by_section() -> None:
    async def run(ctx: Context) -> Verdict:
        return passed()

    registry = _registry(("a.one", run))
    with pytest.raises(ValueError, match="duplicate"):
        registry.add(Check("a.one", (), "MUST", "One", "t", run))
    with pytest.raises(ValueError, match="malformed check id"):
        registry.add(Check("Not An Id", (), "MUST", "One", "t", run))
    with pytest.raises(ValueError, match="malformed requirement"):
        registry.add(Check("a.two", ("X-1",), "MUST", "One", "t", run))
    registry.add(Check("a.first", (), "MUST", "Zero", "t", run))
    registry.order_sections(["Zero", "One"])
    assert registry.ids == ("a.first", "a.one")
    with pytest.raises(KeyError, match=r"a\.nope"):
        registry.select(["a.nope"])
    with pytest.raises(ValueError, match="without a place"):
        registry.order_sections(["Zero"])


def _result(check_id: str, outcome: Outcome, level: Level = "MUST") -> CheckResult:
    frames = (
        FrameRecord(1, "sent", 0.001, '{"jsonrpc":"2.0","id":1,"method":"initialize"}'),
        FrameRecord(1, "received", 0.002, "Logged in as bot \x07"),
    )
    return CheckResult(
        check_id, "A title", ("S-30",), level, "Channels", outcome, "why", 0.5, frames
    )


def test_only_a_failed_must_check_fails_the_run() -> None:
    should = Report("server", "x", (_result("s.a", Outcome.FAIL, "SHOULD"),))
    must = Report("server", "x", (_result("s.a", Outcome.FAIL), _result("s.b", Outcome.PASS)))
    assert (should.exit_code, must.exit_code) == (0, 1)
    assert must.failed_ids == {"s.a"}
    assert "1 failed (1 MUST)" in must.summary()


def test_reports_show_failures_with_their_frames_in_every_format() -> None:
    report = Report(
        "server",
        "python -m x",
        (_result("s.a", Outcome.FAIL, "SHOULD"), _result("s.b", Outcome.NOT_EXERCISED)),
    )
    text = render_text(report)
    assert "FAIL  s.a  [S-30 SHOULD]" in text
    assert '→ {"jsonrpc":"2.0","id":1,"method":"initialize"}' in text
    assert "← Logged in as bot" in text
    data = json.loads(render_json(report))
    frames = data["sections"][0]["checks"][0]["frames"]
    assert frames[0]["message"]["method"] == "initialize"
    assert frames[1]["raw"].startswith("Logged in")
    root = ET.fromstring(render_junit(report))
    failure = root.find(".//failure")
    assert failure is not None
    assert failure.get("type") == "SHOULD"
    assert "method" in (failure.text or "")
    skipped = root.find(".//skipped")
    assert skipped is not None
    assert skipped.get("message") == "not exercised: why"


def test_the_server_suite_covers_its_catalogue_without_link_errors() -> None:
    coverage = server_coverage()
    assert coverage is not None
    assert coverage.link_errors == ()
    catalogue = load_catalogue()
    for requirement in catalogue.requirements:
        if requirement.target == "server" and not requirement.planned:
            assert requirement.check is not None
            assert requirement.check in SERVER_CHECKS, requirement.id
            assert requirement.id in SERVER_CHECKS[requirement.check].requirements
    for check in SERVER_CHECKS:
        levels = {catalogue.by_id[r].level for r in check.requirements}
        assert {catalogue.by_id[r].target for r in check.requirements} == {"server"}
        strongest = next(level for level in ("MUST", "SHOULD", "MAY") if level in levels)
        assert check.level == strongest, check.id


def test_the_whole_catalogue_links_with_the_server_and_digest_checks_registered() -> None:
    catalogue = load_catalogue()
    registered: dict[str, tuple[str, ...]] = dict(SERVER_CHECKS.requirement_map())
    registered.update(HOST_CHECKS.requirement_map())  # host checks are in the catalogue too
    for check_id in {**test_digest.CHECKS, **test_digest_published.CHECKS}:
        registered[check_id] = tuple(r.id for r in catalogue.requirements if r.check == check_id)
    assert link_errors(catalogue, registered) == []


def test_coverage_reports_a_missing_check_and_a_check_that_does_not_name_its_requirement() -> None:
    catalogue = load_catalogue()
    registered: Mapping[str, tuple[str, ...]] = {
        check.id: check.requirements
        for check in SERVER_CHECKS
        if check.id != "server.channels.close"
    }
    registered = {**registered, "server.channels.open": ()}
    coverage = suite_coverage("server", registered, catalogue=catalogue)
    assert coverage is not None
    assert set(coverage.link_errors) == {
        "S-32: no registered check provides server.channels.close",
        "S-31: check server.channels.open does not name S-31",
    }


def test_targets_are_commands_or_supported_urls() -> None:
    assert ServerTarget.of(["python", "-m", "x"]).kind == "stdio"
    assert ServerTarget.of("tcp://127.0.0.1:4000").kind == "tcp"
    assert ServerTarget.of("wss://example.org/mcpl").kind == "ws"
    assert ServerTarget.of(["a", "b"]).describe() == "a b"
    for bad in ("http://example.org", "127.0.0.1:4000"):
        with pytest.raises(ValueError, match="unsupported target URL"):
            ServerTarget.of(bad)
    with pytest.raises(ValueError, match="cannot be empty"):
        ServerTarget.of([])


async def test_a_recording_link_records_both_directions_and_numbers_what_it_receives() -> None:
    near, far = memory_link_pair()
    transcript = Transcript(anyio.current_time())
    seen: list[tuple[bytes, int]] = []
    link = RecordingLink(near, transcript, transcript.new_connection())
    link.set_observer(lambda frame, position: seen.append((frame, position)))
    with anyio.fail_after(5):
        await link.send(b'{"a":1}')
        await link.send_raw(b"not json")
        assert await far.receive() == b'{"a":1}'
        assert await far.receive() == b"not json"
        await far.send(b'{"b":2}')
        assert await link.receive() == b'{"b":2}'
    assert [(f.direction, f.text) for f in transcript.frames] == [
        ("sent", '{"a":1}'),
        ("sent", "not json"),
        ("received", '{"b":2}'),
    ]
    assert seen == [(b'{"b":2}', 1)]
    assert link.received == 1


async def test_the_kit_as_host_refuses_privileged_requests_until_ready_and_granted() -> None:
    host = HostAnswers()
    register = {"channels": [{"id": "x:1", "type": "x", "label": "One", "direction": "inbound"}]}
    with pytest.raises(CapabilityDenied):
        await host.answer("channels/register", register)
    host.ready, host.granted = True, Grant(["channels.register"])
    assert await host.answer("channels/register", register) == {
        "results": [{"id": "x:1", "accepted": True}]
    }
    with pytest.raises(CapabilityDenied):
        await host.answer("push/event", {})


async def test_the_kit_itemizes_registrations_and_can_refuse_the_first_descriptor() -> None:
    host = HostAnswers()
    host.ready, host.granted, host.reject_first = True, Grant(["channels.*"]), True
    good = {"type": "x", "label": "L", "direction": "bidirectional"}
    answer = await host.answer(
        "channels/register",
        {"channels": [{"id": "x:1", **good}, {"id": "x:2", **good}, {"id": "x:3"}]},
    )
    assert answer["results"] == [
        {"id": "x:1", "accepted": False, "reason": "capability_denied"},
        {"id": "x:2", "accepted": True},
        {"id": "x:3", "accepted": False, "reason": "malformed"},
    ]
    incoming = await host.answer(
        "channels/incoming", {"messages": [{"messageId": "a", "channelId": "x:1"}]}
    )
    assert incoming == {"results": [{"messageId": "a", "accepted": False}]}
