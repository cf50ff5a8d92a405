"""One log format for every line, tracebacks joined, volume bounded (issue #13, item 3).

The in-process parts: :func:`switchboard.runtime.logs.configure` renders the stdlib's records (the
MCP SDK's, uvicorn's) with the same renderer as structlog's events;
:class:`~switchboard.runtime.ratelog.LineJoiner` turns a connector's stderr lines into blocks;
:class:`~switchboard.runtime.ratelog.VolumeBudget` bounds how much of it is logged. The whole path
through a real ``switchboard run`` is in tests/integration/test_operator_logs.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from switchboard.config import ConfigError, load_config
from switchboard.connections.supervisor import exit_status
from switchboard.events import (
    ChannelsRegistered,
    ConnectorExited,
    ConnectorReady,
    ConnectorRestartScheduled,
    ConnectorStarted,
    log_event,
)
from switchboard.runtime.logs import LOG_FORMATS, configure
from switchboard.runtime.ratelog import LineJoiner, VolumeBudget

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/srv/connector.py", line 8, in on_ready',
    '    {}["missing"]',
    "    ~~^^^^^^^^^^^",
    "KeyError: 'missing'",
]


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put structlog and the root logger back as the suite had them."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        structlog.configure(**saved)
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


def test_the_two_log_formats_are_console_and_json() -> None:
    assert LOG_FORMATS == ("console", "json")


def test_in_json_mode_stdlib_records_and_structlog_events_are_each_one_json_object(
    capsys: pytest.CaptureFixture[str], restored_logging: None
) -> None:
    configure("INFO", json=True)
    structlog.get_logger("switchboard.test").info("connector_connected", server_id="echo")
    logging.getLogger("mcp.server.streamable_http_manager").info(
        "StreamableHTTP session manager started"
    )
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    try:
        raise KeyError("missing")
    except KeyError:
        structlog.get_logger("switchboard.test").exception("listener_failed")
    out = capsys.readouterr()
    assert out.out == ""
    entries = [json.loads(line) for line in _lines(out.err)]
    by_event = {entry["event"]: entry for entry in entries}
    assert by_event["connector_connected"]["server_id"] == "echo"
    sdk = by_event["StreamableHTTP session manager started"]
    assert (sdk["level"], sdk["logger"]) == ("info", "mcp.server.streamable_http_manager")
    assert "timestamp" in sdk
    assert by_event["Invalid HTTP request received."]["level"] == "warning"
    assert "KeyError: 'missing'" in by_event["listener_failed"]["exception"]


def test_in_console_mode_stdlib_records_have_the_structlog_layout(
    capsys: pytest.CaptureFixture[str], restored_logging: None
) -> None:
    configure("INFO")
    structlog.get_logger("switchboard.test").info("connector_started", pid=7)
    logging.getLogger("mcp.server.streamable_http_manager").info("Terminating session: abc")
    own, sdk = _lines(capsys.readouterr().err)
    assert "[info     ] connector_started" in own
    assert "[info     ] Terminating session: abc" in sdk
    assert "[mcp.server.streamable_http_manager]" in sdk
    assert own[:4] == sdk[:4]  # both start with the ISO timestamp


def test_records_below_the_level_are_dropped_for_both_kinds(
    capsys: pytest.CaptureFixture[str], restored_logging: None
) -> None:
    configure("WARNING", json=True)
    structlog.get_logger("switchboard.test").info("quiet")
    logging.getLogger("uvicorn.error").info("also quiet")
    structlog.get_logger("switchboard.test").warning("loud")
    assert [json.loads(line)["event"] for line in _lines(capsys.readouterr().err)] == ["loud"]


# -- joining a connector's stderr ----------------------------------------------------------


def test_a_traceback_is_one_block_even_when_its_lines_arrive_slowly() -> None:
    joiner = LineJoiner(window=0.05, traceback_window=1.0)
    done: list[str] = []
    for i, line in enumerate(TRACEBACK):
        done += joiner.add(line, now=0.3 * i)  # every line later than the 50 ms window
    assert done == []
    assert joiner.flush() == "\n".join(TRACEBACK)


def test_after_the_final_line_of_a_traceback_the_short_window_applies_again() -> None:
    joiner = LineJoiner(window=0.05, traceback_window=1.0)
    for line in TRACEBACK:
        joiner.add(line, now=0.0)
    assert joiner.deadline() == pytest.approx(0.05)
    assert joiner.add("connector restarting", now=0.5) == ["\n".join(TRACEBACK)]
    assert joiner.flush() == "connector restarting"


def test_a_traceback_starts_its_own_block_after_ordinary_lines() -> None:
    joiner = LineJoiner(window=0.05)
    assert joiner.add("policy_received granted=[...]", now=0.0) == []
    assert joiner.add(TRACEBACK[0], now=0.01) == ["policy_received granted=[...]"]
    for line in TRACEBACK[1:]:
        assert joiner.add(line, now=0.02) == []
    assert joiner.flush() == "\n".join(TRACEBACK)


def test_a_chained_traceback_stays_one_block() -> None:
    chained = [
        *TRACEBACK,
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        *TRACEBACK,
    ]
    joiner = LineJoiner(window=0.05)
    done: list[str] = []
    for line in chained:
        done += joiner.add(line, now=0.0)
    assert done == []
    assert joiner.flush() == "\n".join(chained)


def test_lines_apart_by_more_than_the_window_are_separate_blocks() -> None:
    joiner = LineJoiner(window=0.05)
    assert joiner.add("one", now=0.0) == []
    assert joiner.add("two", now=0.03) == []
    assert joiner.add("three", now=0.2) == ["one\ntwo"]
    assert joiner.deadline() == pytest.approx(0.25)
    assert joiner.flush() == "three"
    assert joiner.deadline() is None
    assert joiner.flush() is None


def test_a_block_is_cut_at_its_line_and_byte_bounds() -> None:
    joiner = LineJoiner(max_lines=3, max_bytes=1024)
    done: list[str] = []
    for i in range(7):
        done += joiner.add(f"line {i}", now=0.0)
    assert done == ["line 0\nline 1\nline 2", "line 3\nline 4\nline 5"]
    huge = LineJoiner(max_bytes=1024)
    assert huge.add("x" * 5000, now=0.0) == []
    block = huge.flush()
    assert block is not None
    assert len(block.encode()) <= 1024
    assert block.endswith("more bytes cut>")


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["plain", "  indented", "", TRACEBACK[0], "ValueError: x", "é" * 40]),
            st.floats(min_value=0, max_value=0.2),
        ),
        max_size=60,
    ),
    st.integers(min_value=1, max_value=10),
)
def test_joined_blocks_hold_every_line_in_order_within_the_bounds(
    arrivals: list[tuple[str, float]], max_lines: int
) -> None:
    joiner = LineJoiner(max_lines=max_lines, max_bytes=256)
    blocks: list[str] = []
    now = 0.0
    for line, gap in arrivals:
        now += gap
        blocks += joiner.add(line, now)
    last = joiner.flush()
    if last is not None:
        blocks.append(last)
    assert [line for block in blocks for line in block.split("\n")] == [a[0] for a in arrivals]
    for block in blocks:
        assert block.count("\n") + 1 <= max_lines
        assert len(block.encode()) <= 256


# -- bounding the volume -------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_volume_budget_allows_a_burst_then_its_rate() -> None:
    clock = _Clock()
    budget = VolumeBudget(burst=1000, per_second=100, clock=clock)
    assert budget.take(600) is True
    assert budget.take(600) is False  # nothing spent by a refused take
    assert budget.take(400) is True
    assert budget.take(1) is False
    clock.now = 2.0
    assert budget.take(200) is True
    assert budget.take(1) is False
    clock.now = 1000.0
    assert budget.take(1000) is True  # refilled to the burst, never beyond
    assert budget.take(1) is False


def test_a_budget_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="burst"):
        VolumeBudget(burst=0, per_second=1)


# -- the host's lines about a connector's life ----------------------------------------------


class _Ended:
    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode


def test_a_childs_exit_status_is_a_code_or_a_signal_name() -> None:
    assert exit_status(_Ended(3)) == (3, None)
    assert exit_status(_Ended(0)) == (0, None)
    assert exit_status(_Ended(-9)) == (None, "SIGKILL")
    assert exit_status(_Ended(-15)) == (None, "SIGTERM")
    assert exit_status(_Ended(None)) == (None, None)
    assert exit_status(object()) == (None, None)  # a TCP or WebSocket link


def test_the_log_listener_says_the_connectors_life_in_one_line_per_event(
    logs: list[MutableMapping[str, Any]],
) -> None:
    log_event(ConnectorStarted("echo", 41, "stdio:echo[pid 41]", ("python", "echo.py")))
    log_event(
        ConnectorReady(
            "echo",
            ("channels.register",),
            False,
            dialect="mcpl-0.4",
            mcpl_version="0.4",
            enabled=("chat",),
            disabled=("voice",),
        )
    )
    log_event(ChannelsRegistered("echo", tuple(f"c{i}" for i in range(500))))
    log_event(ConnectorExited("echo", ("c1", "c2"), None, "SIGKILL"))
    log_event(ConnectorRestartScheduled("echo", 0.4567, 2))
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("connector_started", "info"),
        ("connector_connected", "info"),
        ("channels_registered", "info"),
        ("connector_exited", "info"),
        ("connector_restart_scheduled", "info"),
    ]
    started, connected, registered, exited, restart = logs
    assert (started["pid"], started["command"]) == (41, ["python", "echo.py"])
    assert (connected["dialect"], connected["enabled"], connected["disabled"]) == (
        "mcpl-0.4",
        ["chat"],
        ["voice"],
    )
    assert registered["channels"] == 500
    assert "channel_ids" not in registered  # a count at INFO, never the list
    assert (exited["signal"], exited["channels_dropped"]) == ("SIGKILL", 2)
    assert "exit_code" not in exited
    assert restart["delay"] == 0.457


def test_a_library_logger_with_its_own_lower_level_still_stops_at_the_configured_level(
    capsys: pytest.CaptureFixture[str], restored_logging: None
) -> None:
    configure("WARNING", json=True)
    chatty = logging.getLogger("uvicorn.error")
    old = chatty.level
    chatty.setLevel(logging.INFO)  # what uvicorn does with its own log_level
    try:
        chatty.info("Started server process [1]")
        chatty.error("Exception in ASGI application")
    finally:
        chatty.setLevel(old)
    [line] = _lines(capsys.readouterr().err)
    assert json.loads(line)["event"] == "Exception in ASGI application"


def test_log_format_in_the_config_is_console_or_json(tmp_path: Path) -> None:
    config = tmp_path / "switchboard.toml"
    config.write_text('log_format = "json"\n')
    assert load_config(config).log_format == "json"
    config.write_text("")
    assert load_config(config).log_format == "console"
    config.write_text('log_format = "xml"\n')
    with pytest.raises(ConfigError, match="log_format"):
        load_config(config)
