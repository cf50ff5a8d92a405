"""The status model kept from host events (``switchboard.status.model``), without processes.

A real host (a real store file) is built with its status model; the tests emit host events on
its bus as the parts would and read the model's snapshot and readiness.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from switchboard.app.board import Switchboard
from switchboard.config import Config, ConnectorConfig, StoreConfig
from switchboard.events import (
    ConnectorExited,
    ConnectorFailed,
    ConnectorReady,
    ConnectorRefused,
    ConnectorRestartScheduled,
    ConnectorStarted,
    MessagesAccepted,
    StorageFailed,
    StorageRecovered,
)
from switchboard.status.model import RING, TEXT_CUT
from switchboard.store.sqlite import MessageStore

pytestmark = pytest.mark.anyio


def _message(i: int, text: str = "hello") -> dict[str, Any]:
    return {
        "channelId": "general",
        "messageId": f"m{i}",
        "author": {"id": "u1", "name": "Ada"},
        "timestamp": "2026-12-01T12:00:00Z",
        "content": [{"type": "text", "text": text}],
    }


def _config(tmp_path: Path) -> Config:
    return Config(
        connectors=[
            ConnectorConfig(id="a", command=["true"]),
            ConnectorConfig(id="b", command=["true"], restart=False),
        ],
        store=StoreConfig(path=str(tmp_path / "s.sqlite")),
    )


async def test_a_large_batch_is_counted_whole_but_only_its_last_messages_are_kept(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    async with await MessageStore.open(config.store.path) as store:
        board = Switchboard(config, store)
        batch = [_message(i) for i in range(RING * 30)]
        batch[-1] = _message(-1, "x" * (TEXT_CUT * 3))
        board.events.emit(MessagesAccepted("a", batch))
        snap = board.status.snapshot()
        [a, _] = snap["connectors"]
        assert a["messages_in"] == snap["traffic"]["messages_in"] == RING * 30
        assert len(snap["recent_traffic"]) == RING
        assert snap["recent_traffic"][0]["text"] == "hello"
        assert len(snap["recent_traffic"][-1]["text"]) == TEXT_CUT
        assert snap["recent_traffic"][-1]["author"] == "Ada"


async def test_readiness_waits_for_every_connector_and_accepts_one_failed_for_good(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    async with await MessageStore.open(config.store.path) as store:
        board = Switchboard(config, store)
        status = board.status
        assert status.readiness().reasons == (
            "connector 'a' is starting",
            "connector 'b' is starting",
        )
        board.events.emit(ConnectorStarted("a", 4242, "stdio:a[pid 4242]"))
        board.events.emit(ConnectorReady("a", ("channels.incoming",), legacy_policy=False))
        board.events.emit(ConnectorFailed("b", "executable 'nope' not found"))
        assert status.readiness().ready
        [a, b] = status.snapshot()["connectors"]
        assert (a["state"], a["pid"], a["dialect"]) == ("connected", 4242, "mcpl-0.5")
        assert (b["state"], b["last_error"], b["pid"]) == (
            "failed",
            "executable 'nope' not found",
            None,
        )
        # An exit after a failure keeps it failed; a restart of the other is not ready.
        board.events.emit(ConnectorExited("b", ()))
        board.events.emit(ConnectorExited("a", ()))
        board.events.emit(ConnectorRestartScheduled("a", 2.0, 1))
        readiness = status.readiness()
        assert readiness.reasons == ("connector 'a' is restarting",)
        [a, b] = status.snapshot()["connectors"]
        assert (a["state"], a["restarts"], a["pid"]) == ("restarting", 1, None)
        assert 0 < a["next_restart_in"] <= 2.0
        assert b["state"] == "failed"


async def test_refusals_are_counted_with_their_batch_size_and_the_last_one_is_kept(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    async with await MessageStore.open(config.store.path) as store:
        board = Switchboard(config, store)
        for i in range(RING + 5):
            board.events.emit(
                ConnectorRefused("a", "incoming_refused", "channels/incoming", f"r{i}", count=2)
            )
        snap = board.status.snapshot()
        a = snap["connectors"][0]
        assert a["refusals"] == snap["traffic"]["refusals"] == 2 * (RING + 5)
        assert a["last_refusal"] == f"channels/incoming: r{RING + 4}"
        assert len(snap["recent_refusals"]) == RING
        assert snap["recent_refusals"][0]["reason"] == "r5"


async def test_a_store_refusing_writes_makes_the_host_unready_until_it_recovers(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    async with await MessageStore.open(config.store.path) as store:
        board = Switchboard(config, store)
        for sid in ("a", "b"):
            board.events.emit(ConnectorReady(sid, (), legacy_policy=False))
        board.events.emit(ConnectorExited("a", (), None, "SIGKILL"))
        assert board.status.snapshot()["connectors"][0]["last_exit"] == "killed by SIGKILL"
        board.events.emit(ConnectorReady("a", (), legacy_policy=False))
        assert board.status.readiness().ready
        board.events.emit(StorageFailed("database or disk is full"))
        assert board.status.readiness().reasons == (
            "the message store refuses writes: database or disk is full",
        )
        assert board.status.snapshot()["store"]["storage_error"] == "database or disk is full"
        board.events.emit(StorageRecovered("database or disk is full", 1.5))
        assert board.status.readiness().ready


async def test_the_store_status_shows_the_retention_settings_and_its_last_pass(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path).model_copy(
        update={
            "store": StoreConfig.model_validate(
                {"path": str(tmp_path / "s.sqlite"), "retain": "30d"}
            )
        }
    )
    async with await MessageStore.open(config.store.path) as store:
        board = Switchboard(config, store)
        before = board.status.snapshot()["store"]["retention"]
        assert before["enabled"] is True
        assert before["retain_seconds"] == 30 * 86_400
        assert before["passes"] == 0
        assert before["last"] is None
        assert board.retention is not None
        await board.retention.run_pass()
        after = board.status.snapshot()["store"]["retention"]
        assert after["passes"] == 1
        assert after["last"] is not None
