"""Reconciliation end to end: a real connector subprocess comes back with a different idea of
which channels are open, and Switchboard brings it to the recorded state; Switchboard restarts
on its store and does the same (issue #4 part 4 acceptance; channel-registry.md §5.6, §5.8)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.events import ConnectorRestartScheduled, ConnectorStarted
from switchboard.lifecycle.answers import Origin
from switchboard.lifecycle.rules.decisions import DesiredState, Source
from tests.agents.tools.channel_support import call
from tests.fake import lifecycle_event
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio

SCRIPT = str(Path(__file__).with_name("lifecycle_connector.py"))


def _setup(tmp_path: Path, plan: dict[str, dict[str, bool]]) -> Path:
    folder = tmp_path / "connector"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps(plan))
    return folder


def _ops(folder: Path, generation: int) -> dict[str, list[str]]:
    ops: dict[str, list[str]] = {"open": [], "close": []}
    log = folder / "log.jsonl"
    if log.exists():
        for line in log.read_text().splitlines():
            entry: dict[str, Any] = json.loads(line)
            if entry["gen"] == generation:
                ops[entry["op"]].append(entry["channel"])
    return {op: sorted(channels) for op, channels in ops.items()}


async def _reconciled(recorder: Recorder, nth: int) -> None:
    """Wait until the host reported its ``nth`` finished reconciliation."""
    reconciled = lifecycle_event("reconciled")
    with anyio.fail_after(30):
        while sum(1 for e in recorder.events if reconciled(e)) < nth:
            await recorder.wait_for(lambda e: True, after=len(recorder.events))


def _state(board: Switchboard, cid: str) -> tuple[DesiredState, Source] | None:
    record = board.lifecycle.record(ChannelRef("gen", cid))
    return None if record is None else (record.state, record.source)


async def test_a_restarted_connector_is_converged_to_the_recorded_state(tmp_path: Path) -> None:
    folder = _setup(
        tmp_path,
        {
            "1": {"a": True, "b": False, "c": False},
            "default": {"a": True, "b": False, "c": True},
        },
    )
    recorder = Recorder()
    gen = connector("gen", [sys.executable, SCRIPT, str(folder)])
    async with running_board(tmp_path, gen, recorder=recorder) as board:
        await _reconciled(recorder, 1)
        lifecycle = board.lifecycle
        assert (await lifecycle.close(ChannelRef("gen", "a"))).status == "closed"
        assert (await lifecycle.open(ChannelRef("gen", "b"))).status == "opened"
        assert (await lifecycle.close(ChannelRef("gen", "c"))).status == "already closed"
        os.kill(int((folder / "pid").read_text()), signal.SIGKILL)
        await _reconciled(recorder, 2)
        states = {cid: _state(board, cid) for cid in "abc"}
        entries = [board.registry.get(ChannelRef("gen", cid)) for cid in "abc"]
        opened = {e.ref.channel_id for e in entries if e is not None and e.transport_open}
    assert (folder / "generation").read_text() == "2"
    assert _ops(folder, 1) == {"open": ["a", "b"], "close": ["a"]}
    # Generation 2 came back with a and c open and b closed; the record says the opposite.
    assert _ops(folder, 2) == {"open": ["b"], "close": ["a", "c"]}
    assert states == {
        "a": (DesiredState.CLOSED, Source.AGENT_TOOL),
        "b": (DesiredState.OPEN, Source.AGENT_TOOL),
        "c": (DesiredState.CLOSED, Source.AGENT_TOOL),
    }
    assert opened == {"b"}


async def test_after_switchboard_restarts_the_record_is_back_and_reconciled(
    tmp_path: Path,
) -> None:
    folder = _setup(tmp_path, {"default": {"a": True, "b": False}})
    gen = connector("gen", [sys.executable, SCRIPT, str(folder)])
    recorder = Recorder()
    async with running_board(tmp_path, gen, recorder=recorder) as board:
        await _reconciled(recorder, 1)
        assert (await board.lifecycle.close(ChannelRef("gen", "a"))).status == "closed"
        opened = await board.lifecycle.open(ChannelRef("gen", "b"), origin=Origin.MODULE)
        assert opened.status == "opened"
    recorder = Recorder()
    async with running_board(tmp_path, gen, recorder=recorder) as board:
        restored = {cid: _state(board, cid) for cid in "ab"}  # before the connector registers
        await _reconciled(recorder, 1)
    assert restored == {
        "a": (DesiredState.CLOSED, Source.AGENT_TOOL),
        "b": (DesiredState.OPEN, Source.MODULE_TOOL),
    }
    assert _ops(folder, 1) == {"open": ["a", "b"], "close": ["a"]}
    assert _ops(folder, 2) == {"open": ["b"], "close": ["a"]}


async def test_a_restarting_connectors_channels_are_refused_server_connecting_naming_it(
    tmp_path: Path,
) -> None:
    """Issue #26, item 5: the echo connector (a real stdio child, its channel ``echo:room``) is
    killed; while the host waits to restart it, a publish to its channel by its id or its
    qualified name (``echo:echo:room``), without a server id, is refused ``server-connecting``
    naming the server, as is the same call with the server id."""
    echo = str(Path(__file__).with_name("echo_connector.py"))
    recorder = Recorder()
    slow = connector("echo", [sys.executable, echo], backoff_initial=60.0, backoff_max=60.0)
    async with running_board(tmp_path, slow, recorder=recorder) as board:
        started = await recorder.wait_kind(ConnectorStarted)
        with anyio.fail_after(30):
            while "echo:room" not in board.registry.server_channels("echo"):
                await recorder.wait_for(lambda e: True, after=len(recorder.events))
        assert started.pid is not None
        os.kill(started.pid, signal.SIGKILL)
        await recorder.wait_kind(ConnectorRestartScheduled)
        async with Client(build_server(board, agent="a"), mode="legacy") as client:
            by_id = await call(client, "channel_publish", {"channel": "echo:room", "text": "x"})
            qualified = await call(
                client, "channel_publish", {"channel": "echo:echo:room", "text": "x"}
            )
            with_id = await call(
                client,
                "channel_publish",
                {"channel": "echo:room", "server_id": "echo", "text": "x"},
            )
    for refused in (by_id, qualified, with_id):
        assert refused["refusal"] == "server-connecting", refused
        assert refused["server_id"] == "echo"
        assert "server 'echo'" in refused["message"]
        assert "is restarting" in refused["message"]
