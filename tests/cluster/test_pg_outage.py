"""PostgreSQL going away under load: the connector is refused with ``storage-unavailable``,
nothing is acknowledged while the database is away, and nothing acknowledged is lost or stored
twice once it is back.

The database is a private server (tests/pg.py: initdb under the ``postgres`` user) stopped
the way a crash stops it (``pg_ctl -m immediate``) and started again; the connector is a real
subprocess over stdio (tests/integration/hostile_connector.py ``--steady``: one message at a
time, each sent again until acknowledged, every answer written down).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import anyio
import orjson
import psycopg
import pytest

from switchboard.config import StoreConfig
from switchboard.events import MessagesAccepted, StorageFailed, StorageRecovered
from tests.helpers import Recorder, connector, running_board
from tests.pg import private_server

pytestmark = pytest.mark.anyio

HOSTILE = str(Path(__file__).parents[1] / "integration" / "hostile_connector.py")
#: How many refusals of the connector the outage lasts (one every 20 ms or so: seconds).
REFUSALS_WHILE_DOWN = 150


def _accepted(mid: str) -> Any:
    def match(event: Any) -> bool:
        return isinstance(event, MessagesAccepted) and any(
            m.get("messageId") == mid for m in event.messages
        )

    return match


async def test_a_database_outage_refuses_the_connector_and_loses_nothing_acknowledged(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    out = tmp_path / "steady.jsonl"
    steady = connector("h", [sys.executable, HOSTILE, str(out), "1", "--steady"], restart=False)
    recorder = Recorder()
    with private_server() as server:
        store = StoreConfig(backend="postgres", url=server.url)
        async with running_board(tmp_path, steady, recorder=recorder, store=store) as board:
            await recorder.wait_for(_accepted("s-3"))
            server.stop()
            failed = await recorder.wait_kind(StorageFailed, within=30)
            acked_when_down = _acked(out)
            # the database stays away until the connector was refused many times over
            await _until(lambda: len(_refusals(out)) >= REFUSALS_WHILE_DOWN)
            acked_before_restart = _acked(out)
            server.start()
            recovered = await recorder.wait_kind(StorageRecovered, within=60)
            after = len(recorder.events)
            await recorder.wait_for(lambda e: isinstance(e, MessagesAccepted), after=after)
            assert board.store.storage_problem is None
        with psycopg.connect(server.url) as conn:
            stored = [
                m["messageId"]
                for (body,) in conn.execute("SELECT body FROM batches ORDER BY first_seq")
                for m in orjson.loads(bytes(body))
            ]

    refusals = [e for e in _refusals(out) if e.get("data") != {"reason": "shutting-down"}]
    assert refusals, "the connector was never refused"
    for error in refusals:
        assert error["code"] == -32603
        assert error["data"]["reason"] == "storage-unavailable"
        assert "send it again later" in error["message"]
    # Nothing was acknowledged while the database was away (at most the one in flight when it
    # stopped had committed before), and every acknowledged message is stored exactly once.
    assert len(acked_before_restart) <= len(acked_when_down) + 1
    acked = _acked(out)
    assert stored[: len(acked)] == acked
    assert stored == [f"s-{n}" for n in range(1, len(stored) + 1)]
    assert failed.cause
    assert recovered.seconds > 0
    print(  # noqa: T201
        f"outage: {recovered.seconds:.1f}s; refusals {len(refusals)}; acked {len(acked)}; "
        f"stored {len(stored)}"
    )
    assert any(e["event"] == "storage_failed" for e in logs)


def _acked(out: Path) -> list[str]:
    steps = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return [s["answer"] for s in steps if s["step"] == "acked"]


def _refusals(out: Path) -> list[dict[str, Any]]:
    steps = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    return [s["answer"]["error"] for s in steps if s["step"] == "refused"]


async def _until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds (the connector writes its file from another process)."""
    with anyio.fail_after(60):
        while not condition():  # noqa: ASYNC110 - a file another process writes
            await anyio.sleep(0.05)
