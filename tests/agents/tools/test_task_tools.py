"""The task tools (agent_spawn, task_finish, agent_end), driven by real MCP client sessions:
one per agent identity, each served by ``build_server(board, agent=name)``."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from switchboard.agents.port.protocol import message_text
from switchboard.app import build_server
from switchboard.store.mailmark import is_mail
from tests.agents.roster.test_lifetimes import board_at
from tests.agents.tools.channel_support import call
from tests.fake import ManualClock

pytestmark = pytest.mark.anyio


async def test_agent_spawn_returns_a_token_that_proves_the_new_task_agent_once(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    async with (
        board_at(tmp_path / "s.sqlite", clock) as board,
        Client(build_server(board, agent="resident"), mode="legacy") as resident,
    ):
        spawned = await call(
            resident,
            "agent_spawn",
            {"handle": "@worker", "description": "counts widgets", "deadline_seconds": 60},
        )
        task = board.roster.by_token(spawned["token"])
        entry = board.directory.lookup("@worker")

    assert not spawned["is_error"]
    assert spawned["handle"] == "@worker"
    assert spawned["parent"] == "@resident"
    assert spawned["deadline"] == clock.now + 60
    assert "Authorization: Bearer <token>" in spawned["connect"]
    assert task is not None
    assert (task.kind, task.parent) == ("task", "resident")
    assert entry.held
    assert entry.description == "counts widgets"
    assert "task" in entry.tags
    assert spawned["token"] not in str(entry.to_public())


async def test_task_finish_ends_the_task_and_its_result_reaches_the_parent_as_its_mail(
    tmp_path: Path,
) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        async with Client(build_server(board, agent="resident"), mode="legacy") as resident:
            await call(resident, "agent_spawn", {"handle": "worker"})
        async with Client(build_server(board, agent="worker"), mode="legacy") as worker:
            finished = await call(worker, "task_finish", {"result": "42 widgets"})
            again = await call(worker, "task_finish", {"result": "twice?"})
        read = await board.delivery.read("resident")
        gone = board.roster.get("worker")

    assert finished == {
        "handle": "@worker",
        "reason": "finished",
        "told": "@resident",
        "is_error": False,
    }
    assert again["is_error"]
    assert again["refusal"] == "not-a-task"
    assert gone is None
    (mail,) = [m for m in read.messages if is_mail(m)]
    assert mail.author_id == "@worker"
    assert message_text(mail) == "[task result] @worker ended: finished\n42 widgets"


async def test_agent_end_by_an_agent_that_did_not_start_the_task_is_refused(
    tmp_path: Path,
) -> None:
    async with (
        board_at(tmp_path / "s.sqlite", ManualClock()) as board,
        Client(build_server(board, agent="resident"), mode="legacy") as resident,
        Client(build_server(board, agent="helper"), mode="legacy") as helper,
    ):
        await call(resident, "agent_spawn", {"handle": "@worker"})
        stranger = await call(helper, "agent_end", {"handle": "@worker"})
        alive = board.roster.get("worker") is not None
        parent = await call(resident, "agent_end", {"handle": "@worker"})

    assert stranger["is_error"]
    assert stranger["refusal"] == "not-your-task"
    assert stranger["handle"] == "@worker"
    assert alive
    assert (parent["reason"], parent["told"]) == ("ended-by-parent", "@resident")


async def test_a_taken_handle_is_refused_with_the_directorys_reason(tmp_path: Path) -> None:
    async with board_at(tmp_path / "s.sqlite", ManualClock()) as board:
        board.directory.claim("@held", token="someone-elses-token")
        async with Client(build_server(board, agent="resident"), mode="legacy") as resident:
            live = await call(resident, "agent_spawn", {"handle": "@helper"})
            held = await call(resident, "agent_spawn", {"handle": "@held"})
            bad = await call(resident, "agent_spawn", {"handle": "@No_Way"})

    assert live["refusal"] == "address-taken"
    assert live["address"] == "@helper"
    assert (held["refusal"], held["name"], held["code"]) == (
        "address-taken",
        "held_by_another_owner",
        3,
    )
    assert (bad["refusal"], bad["name"]) == ("directory-refused", "invalid_name")


async def test_task_finish_from_an_agent_that_is_not_a_task_is_refused_as_not_offered(
    tmp_path: Path,
) -> None:
    async with (
        board_at(tmp_path / "s.sqlite", ManualClock()) as board,
        Client(build_server(board, agent="resident"), mode="legacy") as resident,
    ):
        refused = await call(resident, "task_finish", {"result": "nope"})
        still = board.roster.get("resident") is not None

    assert refused["is_error"]
    assert refused["refusal"] == "unknown-tool", "task_finish is not offered to a configured agent"
    assert "task agent" in refused["message"]
    assert still
