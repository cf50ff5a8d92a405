"""Crash safety (issue #4 acceptance): SIGKILL Switchboard in the middle of a stream of
decisions and incoming messages, restart it on the same files, and check what survived.

The first Switchboard runs as a real process (``switchboard run``) with the agent on stdio,
driven by a real MCP client, and a real connector subprocess streaming messages. The client
makes decisions back to back (tune_out start and cancel on one channel, channel_close and
channel_open on the other) while messages stream in; the test kills the whole process group
once enough of both happened, usually with a call in flight. Then:

- the log holds exactly the decisions whose call returned success, in order, plus at most the
  one in flight (the committed prefix), and every tune-out end has its settle record beside it
  (nothing half-applied);
- a restarted Switchboard shows that state through its tools;
- every message the connector saw acknowledged (``accepted: true``) reaches the agent exactly
  once: through the inbox, or in a tune-out's delivered backlog.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from switchboard.channels import ChannelRef
from switchboard.lifecycle.rules.decisions import Source
from switchboard.lifecycle.rules.events import (
    DesiredStateSet,
    TuneOutEnded,
    TuneOutStarted,
    decode_event,
)
from switchboard.store.sqlite import DecisionLog
from switchboard.tuneouts.records import Settled, decode_host_record
from tests.integration.crash_support import (
    StderrWatch,
    kill_group,
    mcp_over,
    spawn_switchboard,
    write_config,
)

pytestmark = pytest.mark.anyio

ROOM, OTHER = "crash:room", "crash:other"
CYCLE = (
    ("tune_out", {"channel": ROOM, "backlog_cap": 500}, "start"),
    ("channel_close", {"channel": OTHER}, "close"),
    ("tune_out", {"channel": ROOM, "mode": "cancel"}, "cancel"),
    ("channel_open", {"channel": OTHER}, "open"),
)
ENOUGH_DECISIONS = 6
ENOUGH_MESSAGES = 150
PHASE_SECONDS = 60  # each run takes a few seconds; the margin is for a loaded machine


def logged_decisions(records: list[dict[str, Any]]) -> list[str]:
    """The agent's decisions in the log, in order; checks each end's settle record."""
    out: list[str] = []
    other = ChannelRef("crash", OTHER)
    for i, data in enumerate(records):
        event = decode_event(data)
        if isinstance(event, TuneOutStarted):
            out.append("start")
        elif isinstance(event, TuneOutEnded):
            settled = decode_host_record(records[i + 1]) if i + 1 < len(records) else None
            assert isinstance(settled, Settled), "an end was recorded without its settle record"
            assert settled.epoch_id == event.epoch_id
            out.append("cancel")
        elif (
            isinstance(event, DesiredStateSet)
            and event.ref == other
            and event.source is Source.AGENT_TOOL
        ):
            out.append(event.state.value.replace("closed", "close"))
    return out


async def first_run(tmp_path: Path, store: Path, accepted: Path) -> tuple[list[str], str | None]:
    """Decide while messages stream; SIGKILL mid-stream. Returns the decisions that returned
    success, and the kind of the call in flight at the kill (if one was)."""
    config = write_config(tmp_path / "first.toml", store, ["stream", str(accepted)])
    process = await spawn_switchboard(config)
    watch = StderrWatch(process)
    done: list[str] = []
    in_flight: list[str] = []
    enough = anyio.Event()

    async def decide(client: Client) -> None:
        for n in range(10_000):
            tool, args, kind = CYCLE[n % len(CYCLE)]
            try:
                result = await client.call_tool(tool, args)
            except Exception:
                in_flight.append(kind)  # the kill cut this call off: its outcome is unknown
                return
            assert not result.is_error, (tool, result.structured_content, watch.tail)
            done.append(kind)
            if len(done) >= ENOUGH_DECISIONS:
                enough.set()

    try:
        with anyio.fail_after(PHASE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch.run)
                async with Client(mcp_over(process), mode="legacy") as client:
                    await watch.until_accepted(2)  # registered, and messages are flowing
                    async with anyio.create_task_group() as deciding:
                        deciding.start_soon(decide, client)
                        await enough.wait()
                        await watch.until_accepted(ENOUGH_MESSAGES)
                        kill_group(process)
                await process.wait()
    except TimeoutError as exc:
        raise AssertionError(
            f"the first run timed out after {len(done)} decisions and {watch.accepted} "
            f"accepted messages; its stderr ended with: {watch.tail[-3000:]!r}"
        ) from exc
    finally:
        kill_group(process)
        await process.aclose()
    return done, (in_flight[0] if in_flight else None)


async def read_everything(client: Client) -> tuple[list[str], list[str]]:
    """Every message id the agent's inbox hands over (until ``ready-1`` and dry), and the ids
    of the tune-out notices among them."""
    raw: list[str] = []
    notices: list[str] = []
    while "ready-1" not in raw:
        result = await client.call_tool("inbox", {"wait_seconds": 10, "limit": 500})
        for m in (result.structured_content or {})["messages"]:
            (notices if m["message_id"].startswith("tuneout-ended:") else raw).append(
                m["message_id"]
            )
    return raw, notices


async def test_a_sigkilled_switchboard_restarts_with_the_committed_decisions_and_messages(
    tmp_path: Path,
) -> None:
    store, accepted_file = tmp_path / "crash.sqlite", tmp_path / "accepted.txt"
    done, cut_off = await first_run(tmp_path, store, accepted_file)

    async with await DecisionLog.open(store) as log:
        loaded = await log.load()
    assert loaded.snapshot is None
    logged = logged_decisions(loaded.tail)
    assert logged[: len(done)] == done
    assert len(logged) - len(done) in (0, 1)
    if len(logged) > len(done):
        assert logged[-1] == cut_off
    active = _last(logged, "start") < _last(logged, "cancel")
    other_open = _last(logged, "open") < _last(logged, "close")

    second = write_config(tmp_path / "second.toml", store, ["quiet", str(tmp_path / "q.txt")])
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "switchboard", "run", "--config", str(second)]
    )
    with anyio.fail_after(PHASE_SECONDS):
        async with Client(params, mode="legacy") as client:
            raw, notices = await read_everything(client)
            listed = (await client.call_tool("channel_list", {})).structured_content or {}
            status = (await client.call_tool("tune_out_status", {})).structured_content or {}
            if active:
                cancel = await client.call_tool("tune_out", {"channel": ROOM, "mode": "cancel"})
                assert not cancel.is_error, cancel.structured_content
            final = await client.call_tool("inbox", {"limit": 500})
    for m in (final.structured_content or {})["messages"]:
        (notices if m["message_id"].startswith("tuneout-ended:") else raw).append(m["message_id"])

    desired = {c["channel_id"]: c["desired"] for c in listed["channels"]}
    assert desired[ROOM] == ("tuned-out" if active else "closed")
    assert desired[OTHER] == ("open" if other_open else "closed")
    assert len(status["tune_outs"]) == (1 if active else 0)
    accepted = accepted_file.read_text().split()
    assert len(accepted) >= ENOUGH_MESSAGES
    assert len(raw) == len(set(raw)), "a message reached the agent twice"
    assert set(accepted) <= set(raw), "an acknowledged message was lost"
    assert len(notices) == logged.count("cancel") + (1 if active else 0)


def _last(items: list[str], kind: str) -> int:
    """How many items ago ``kind`` was last seen (a large number when never)."""
    return items[::-1].index(kind) if kind in items else 1 << 30
