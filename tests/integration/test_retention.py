"""Retention on a real board (issue #13, item 8; docs/operations.md, "Retention").

The board is built over a real SQLite store with two configured agents; messages come in
through the store as a connector's would. What the host owes is real: agents' acknowledged
cursors, mail deposited for an agent with no session, tune-out epochs in its memory. Last,
``switchboard run`` in a subprocess runs its retention passes and logs them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import orjson
import pytest

from switchboard.app.board import Switchboard
from switchboard.channels import ChannelRef
from switchboard.config import AgentEntry, Config, StoreConfig
from switchboard.directory import Directory
from switchboard.lifecycle.rules.decisions import Source, TuneOutEpoch, TuneOutScope
from switchboard.lifecycle.rules.events import EndReason, TuneOutStarted
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.retention import RetentionTask
from switchboard.tuneouts.records import Settled

pytestmark = pytest.mark.anyio

DAY = 86_400.0
LATER = 90 * DAY  # the board's clock runs this far ahead: what is stored now is old


def _wire(n: int) -> dict[str, object]:
    return {
        "channelId": "general",
        "messageId": f"m-{n}",
        "author": {"id": "u1", "name": "User"},
        "timestamp": "2026-01-01T00:00:00Z",
        "content": [{"type": "text", "text": f"message {n} " + "x" * 150}],
    }


@asynccontextmanager
async def board_at(path: Path) -> AsyncIterator[Switchboard]:
    """A board with agents alice and bob, ``retain = "30d"``, no duplicate window (so that a
    pass may delete the newest messages too), and a clock 90 days ahead."""
    store = await MessageStore.open(path, dedupe_window=0)
    directory = Directory.open(path)
    config = Config(
        agents=[
            AgentEntry(handle="@alice", roles=["default_delivery"]),
            AgentEntry(handle="@bob"),
        ],
        store=StoreConfig.model_validate({"path": str(path), "retain": "30d"}),
    )
    try:
        yield Switchboard(config, store, directory=directory, clock=lambda: time.time() + LATER)
    finally:
        directory.close()
        await store.aclose()


def _retention(board: Switchboard) -> RetentionTask:
    assert isinstance(board.retention, RetentionTask)  # the SQLite store's retention
    return board.retention


async def _incoming(board: Switchboard, first: int, count: int) -> None:
    for n in range(first, first + count):
        await board.store.submit_wire("demo", [_wire(n)])


async def _stored(board: Switchboard) -> list[tuple[int, str]]:
    return [(m.seq, m.server_id) for m in await board.store.read(0, limit=10_000)]


async def test_messages_every_agent_acknowledged_are_deleted_once_older_than_retain(
    tmp_path: Path,
) -> None:
    async with board_at(tmp_path / "sb.sqlite") as board:
        await _incoming(board, 1, 10)
        await board.store.set_cursor("alice", 10)
        await board.store.set_cursor("bob", 6)

        report = await _retention(board).run_pass()

        assert report.messages == 6
        assert [seq for seq, _ in await _stored(board)] == [7, 8, 9, 10]
        assert report.held_by == "agent @bob (acknowledged up to 6)"


async def test_mail_held_for_an_agent_with_no_session_is_kept_until_it_acknowledges(
    tmp_path: Path,
) -> None:
    async with board_at(tmp_path / "sb.sqlite") as board:
        await _incoming(board, 1, 3)
        deposit = await board.mail.deposit("alice", "@bob", "for when you are back")
        await _incoming(board, 4, 3)
        await board.store.set_cursor("alice", board.store.latest_seq)

        held = await _retention(board).run_pass()

        assert held.messages == 0  # bob never attached: everything stays
        assert "@bob" in held.held_by
        await board.store.set_cursor("bob", board.store.latest_seq)
        after = await _retention(board).run_pass()
        assert after.messages == 6
        # mail itself is never deleted: its numbering continues from the stored mail
        assert await _stored(board) == [(deposit.seq, MAIL_SERVER)]


async def test_a_tune_out_in_effect_keeps_everything_after_it_began(tmp_path: Path) -> None:
    async with board_at(tmp_path / "sb.sqlite") as board:
        await _incoming(board, 1, 10)
        epoch = TuneOutEpoch(
            "epoch-1",
            "alice",
            TuneOutScope(ChannelRef("demo", "general")),
            started_at=time.time(),
            backlog_cap=50,
            started_at_sequence=4,
        )
        board.tuneouts.state.book.apply(TuneOutStarted(epoch, Source.AGENT_TOOL))
        await board.store.set_cursor("alice", 10)  # its inbox sorted past the diverted ones
        await board.store.set_cursor("bob", 10)

        report = await _retention(board).run_pass()

        assert [seq for seq, _ in await _stored(board)] == [5, 6, 7, 8, 9, 10]
        assert report.held_by == "tune-out epoch-1 of @alice"


async def test_an_owed_tune_out_backlog_is_kept_until_delivered_and_passed(
    tmp_path: Path,
) -> None:
    async with board_at(tmp_path / "sb.sqlite") as board:
        await _incoming(board, 1, 10)
        epoch = TuneOutEpoch(
            "epoch-2",
            "bob",
            TuneOutScope(ChannelRef("demo", "general")),
            started_at=time.time(),
            backlog_cap=50,
            started_at_sequence=2,
        )
        owed = board.tuneouts.state.owed
        owed.keep(Settled(epoch, EndReason.CANCELLED, time.time(), 8))
        await board.store.set_cursor("alice", 10)
        await board.store.set_cursor("bob", 10)

        kept = await _retention(board).run_pass()
        assert [seq for seq, _ in await _stored(board)] == list(range(3, 11))
        assert kept.held_by == "the backlog of tune-out epoch-2 of @bob"

        owed.mark_delivered("epoch-2")
        owed.forget_passed("bob", 10)
        gone = await _retention(board).run_pass()
        assert gone.messages == 8
        assert await _stored(board) == []


# -- switchboard run -----------------------------------------------------------------------


async def test_switchboard_run_starts_retention_and_logs_each_pass(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    config = tmp_path / "switchboard.toml"
    config.write_text(
        'log_level = "DEBUG"\n'
        f"[store]\npath = {orjson.dumps(str(store)).decode()}\n"
        'retain = "1s"\nmax_size = "1GB"\nretention_interval = "0.1s"\n'
        '[agent]\ntransport = "stdio"\n'
    )
    process = await anyio.open_process(
        [sys.executable, "-m", "switchboard", "run", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen = b""
    try:
        assert process.stderr is not None
        with anyio.fail_after(60):
            while seen.count(b"retention_pass") < 2:
                seen += await process.stderr.receive()
    finally:
        process.terminate()
        with anyio.fail_after(30):
            await process.wait()
        await process.aclose()
    text = seen.decode()
    assert "retention_started" in text
    assert "retain_seconds=1.0" in text
    assert "max_size_bytes=1000000000" in text
    assert "held_by=" in text
