"""Agent lifetimes: idle TTLs, task agents' deadlines, idle timeouts and turn limits, results
mailed to the parent, and what a restart does (new incarnations, leftover tasks ended).

Time is a :class:`~tests.fake.ManualClock` given to the board and its directory; the
timer is driven by calling :meth:`Lifetimes.tick` directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, MutableMapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from switchboard.agents.port.protocol import message_text
from switchboard.agents.roster.lifetimes import EndedAgent
from switchboard.app.board import Switchboard
from switchboard.config import AgentEntry, Config, StoreConfig
from switchboard.directory import Directory, NotFound
from switchboard.refusals.refusal import Refusal, RefusalKind
from switchboard.store import StoredMessage
from switchboard.store.mailmark import is_mail
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.lifetimes import RECORDS_TABLE
from tests.fake import ManualClock

pytestmark = pytest.mark.anyio

Logs = list[MutableMapping[str, Any]]

RESIDENT = AgentEntry(handle="@resident", roles=["default_delivery"], tags=["home"])
HELPER = AgentEntry(handle="@helper", idle_ttl=60, description="helps now and then")


@asynccontextmanager
async def board_at(
    path: Path, clock: ManualClock, agents: Sequence[AgentEntry] = (RESIDENT, HELPER)
) -> AsyncIterator[Switchboard]:
    """A board over the store file ``path`` with the directory in it, restored as at start."""
    store = await MessageStore.open(path)
    directory = Directory.open(path, clock=clock)
    try:
        config = Config(agents=list(agents), store=StoreConfig(path=str(path)))
        board = Switchboard(config, store, clock=clock, directory=directory)
        await board.restore()
        yield board
    finally:
        directory.close()
        await store.aclose()


async def mail_of(board: Switchboard, name: str) -> list[StoredMessage]:
    """The mail in ``name``'s inbox (read without acknowledging it)."""
    read = await board.delivery.read(name, limit=500)
    return [m for m in read.messages if is_mail(m)]


def ended(got: list[EndedAgent]) -> list[tuple[str, str]]:
    return [(e.handle, e.reason) for e in got]


def listed(board: Switchboard, address: str) -> bool:
    try:
        board.directory.lookup(address)
    except NotFound:
        return False
    return True


async def test_configured_agents_are_listed_at_start_as_their_first_incarnation(
    tmp_path: Path,
) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        entry = board.directory.lookup("@helper")
        resident = board.roster.get("resident")

    assert entry.holder == "@helper"
    assert entry.held
    assert entry.ttl is None
    assert entry.description == "helps now and then"
    assert entry.metadata["incarnation"] == 1
    assert resident is not None
    assert resident.incarnation == 1


async def test_an_agent_with_an_idle_ttl_ends_after_it_and_its_address_is_released(
    tmp_path: Path, logs: Logs
) -> None:
    clock = ManualClock()
    async with board_at(tmp_path / "s.sqlite", clock) as board:
        clock.now += 59
        assert await board.lifetimes.tick() == []
        clock.now += 2
        got = await board.lifetimes.tick()

        assert ended(got) == [("@helper", "idle-ttl")]
        assert board.roster.get("helper") is None
        assert not listed(board, "@helper")
        assert board.roster.get("resident") is not None
    (line,) = [e for e in logs if e["event"] == "agent_ended"]
    assert (line["log_level"], line["agent"], line["reason"]) == ("info", "@helper", "idle-ttl")


async def test_an_attached_agent_does_not_end_by_its_idle_ttl_until_it_has_been_away_that_long(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with board_at(tmp_path / "s.sqlite", clock) as board:
        board.attachments.attach("helper")
        clock.now += 600
        assert await board.lifetimes.tick() == []
        board.attachments.detach("helper")
        clock.now += 30
        assert await board.lifetimes.tick() == []
        clock.now += 30
        assert ended(await board.lifetimes.tick()) == [("@helper", "idle-ttl")]


async def test_the_default_delivery_agent_never_ends_by_idle_ttl(
    tmp_path: Path, logs: Logs
) -> None:
    clock = ManualClock()
    lone = AgentEntry(handle="@resident", roles=["default_delivery"], idle_ttl=5)
    async with board_at(tmp_path / "s.sqlite", clock, [lone]) as board:
        clock.now += 3600
        assert await board.lifetimes.tick() == []
        assert board.roster.get("resident") is not None
    assert any(e["event"] == "idle_ttl_ignored" for e in logs)


async def test_a_task_ends_at_its_deadline_and_its_parent_is_told_by_mail_from_it(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with board_at(tmp_path / "s.sqlite", clock) as board:
        spawned = board.agents.port("resident").spawn_task("@worker", deadline_seconds=30)
        assert board.roster.by_token(spawned.token) is board.roster.get("worker")
        assert board.directory.lookup("@worker").held
        clock.now += 29
        assert await board.lifetimes.tick() == []
        clock.now += 1
        got = await board.lifetimes.tick()
        mail = await mail_of(board, "resident")

        assert ended(got) == [("@worker", "deadline")]
        assert got[0].told == "@resident"
        assert board.roster.by_token(spawned.token) is None
        assert not listed(board, "@worker")
    (told,) = mail
    assert told.author_id == "@worker"
    assert message_text(told).startswith("[task result] @worker ended: deadline")


async def test_a_task_ends_after_its_idle_timeout_without_activity(tmp_path: Path) -> None:
    clock = ManualClock()
    async with board_at(tmp_path / "s.sqlite", clock) as board:
        board.agents.port("resident").spawn_task("@worker", idle_timeout_seconds=10)
        clock.now += 6
        board.attachments.touch("worker")
        clock.now += 6
        assert await board.lifetimes.tick() == []
        clock.now += 4
        assert ended(await board.lifetimes.tick()) == [("@worker", "idle-timeout")]


async def test_a_task_ends_when_it_has_used_its_turns_and_would_begin_another(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with board_at(tmp_path / "s.sqlite", clock) as board:
        board.agents.port("resident").spawn_task("@worker", turn_limit=2)
        port = board.agents.port("worker")
        for n in (1, 2):
            await board.mail.deposit("resident", "@worker", f"job {n}")
            read = await port.read_inbox()
            await port.read_inbox(after=read.cursor)
            assert port.turn == n
            assert await board.lifetimes.tick() == []
        await board.mail.deposit("resident", "@worker", "job 3")
        await port.read_inbox()
        got = await board.lifetimes.tick()

    assert ended(got) == [("@worker", "turn-limit")]


async def test_a_finished_tasks_result_reaches_its_parents_inbox_as_mail_from_the_task(
    tmp_path: Path,
) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        board.agents.port("resident").spawn_task("@worker")
        done = await board.agents.port("worker").finish_task("42 widgets counted")
        mail = await mail_of(board, "resident")
        helper_sees = await mail_of(board, "helper")

    assert (done.handle, done.reason, done.told) == ("@worker", "finished", "@resident")
    (result,) = mail
    assert result.author_id == "@worker"
    assert (result.metadata or {}).get("from") == "@worker"
    assert message_text(result) == "[task result] @worker ended: finished\n42 widgets counted"
    assert helper_sees == []


async def test_a_parent_ends_only_its_own_tasks(tmp_path: Path) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        board.agents.port("resident").spawn_task("@worker")
        with pytest.raises(Refusal) as refused:
            await board.agents.port("helper").end_task("@worker")
        assert refused.value.kind is RefusalKind.NOT_YOUR_TASK
        done = await board.agents.port("resident").end_task("@worker")

    assert (done.handle, done.reason) == ("@worker", "ended-by-parent")


async def test_a_tasks_own_tasks_end_when_it_ends(tmp_path: Path, logs: Logs) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        board.agents.port("resident").spawn_task("@worker")
        board.agents.port("worker").spawn_task("@sub")
        await board.agents.port("worker").finish_task("done")

        assert board.roster.get("sub") is None
        assert not listed(board, "@sub")
    reasons = {e["agent"]: e["reason"] for e in logs if e["event"] == "agent_ended"}
    assert reasons == {"@worker": "finished", "@sub": "parent-ended"}


async def test_a_handle_a_live_agent_has_cannot_be_spawned(tmp_path: Path) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        with pytest.raises(Refusal) as live:
            board.agents.port("resident").spawn_task("@helper")
        board.directory.claim("@other", token="someone-elses-token")
        with pytest.raises(Refusal) as held:
            board.agents.port("resident").spawn_task("@other")
        with pytest.raises(Refusal) as invalid:
            board.agents.port("resident").spawn_task("@Not_A_Handle")

    assert live.value.kind is RefusalKind.ADDRESS_TAKEN
    assert held.value.kind is RefusalKind.ADDRESS_TAKEN
    assert held.value.data["name"] == "held_by_another_owner"
    assert invalid.value.kind is RefusalKind.DIRECTORY_REFUSED
    assert invalid.value.data["name"] == "invalid_name"


async def test_a_restart_is_a_new_incarnation_and_ends_the_tasks_the_last_run_left(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    clock = ManualClock()
    async with board_at(path, clock) as board:
        spawned = board.agents.port("resident").spawn_task("@worker", deadline_seconds=999)
    async with board_at(path, clock) as board:
        resident = board.roster.get("resident")
        entry = board.directory.lookup("@resident")
        leftover = listed(board, "@worker")
        mail = await mail_of(board, "resident")
        token_proves = board.roster.by_token(spawned.token)

    assert resident is not None
    assert resident.incarnation == 2
    assert entry.metadata["incarnation"] == 2
    assert not leftover
    assert token_proves is None
    (told,) = mail
    assert message_text(told).startswith("[task result] @worker ended: restart")


async def test_an_agent_ended_by_its_idle_ttl_is_back_as_a_new_incarnation_after_a_restart(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    clock = ManualClock()
    async with board_at(path, clock) as board:
        clock.now += 61
        assert ended(await board.lifetimes.tick()) == [("@helper", "idle-ttl")]
    async with board_at(path, clock) as board:
        helper = board.roster.get("helper")

    assert helper is not None
    assert helper.incarnation == 2


async def test_a_configured_address_held_by_another_token_is_taken_over_with_an_error(
    tmp_path: Path, logs: Logs
) -> None:
    path = tmp_path / "s.sqlite"
    with Directory.open(path) as directory:
        directory.claim("@resident", token="an-operators-stray-token")
    async with board_at(path, ManualClock()) as board:
        entry = board.directory.lookup("@resident")
    first = [e for e in logs if e["event"] == "agent_address_conflict"]
    async with board_at(path, ManualClock()):
        pass
    again = [e for e in logs if e["event"] == "agent_address_conflict"]

    assert entry.held
    assert entry.metadata["incarnation"] == 1
    assert [(e["log_level"], e["agent"]) for e in first] == [("error", "@resident")]
    assert again == first


async def test_the_owner_token_is_kept_in_the_store_file_and_never_in_the_directory(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "s.sqlite"
    async with board_at(path, ManualClock()) as board:
        exported = str(board.directory.export_rows())
    with sqlite3.connect(path) as conn:
        (owner,) = conn.execute(
            f"SELECT value FROM {RECORDS_TABLE} WHERE key = 'owner-token'"
        ).fetchone()

    assert len(owner) >= 40
    assert owner not in exported
