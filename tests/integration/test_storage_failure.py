"""Storage failures said plainly (issue #13, item 7), made real with SQLite itself.

A full disk is ``SQLITE_FULL`` ("database or disk is full"); ``PRAGMA max_page_count`` set to
the file's current size on the store's own write connection (through ``MessageStore.maintain``,
on the writer thread) makes every write that needs a new page fail with exactly that error,
through exactly the code path a full disk takes. A file that became read-only is
``SQLITE_READONLY``; ``PRAGMA query_only`` on the same connection gives that error for every
write, the cursor writes of an ``inbox`` read included.

The connector is a real subprocess over stdio (tests/integration/hostile_connector.py,
``--steady``: one message at a time, each sent again until acknowledged), the agent a real MCP
client over the SDK's in-memory transport.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client

from switchboard.app import build_server
from switchboard.events import MessagesAccepted, StorageFailed, StorageRecovered
from switchboard.store import MessageStoreProtocol
from switchboard.store.sqlite import MessageStore
from tests.agents.tools.channel_support import answer
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio


def _problem(store: MessageStoreProtocol) -> str | None:
    """The store's storage problem now (read afresh: it changes while the test awaits)."""
    return store.storage_problem


def _sqlite(store: MessageStoreProtocol) -> MessageStore:
    assert isinstance(store, MessageStore)  # these tests break the SQLite file on purpose
    return store


HOSTILE = str(Path(__file__).with_name("hostile_connector.py"))


def _cap_at_current_size(conn: sqlite3.Connection) -> int:
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    (cap,) = conn.execute(f"PRAGMA max_page_count = {pages}").fetchone()
    return int(cap)


def _uncap(conn: sqlite3.Connection) -> int:
    (cap,) = conn.execute("PRAGMA max_page_count = 1073741823").fetchone()
    return int(cap)


def _read_only(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA query_only = 1")


def _writable(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA query_only = 0")


def _steps(out: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in out.read_bytes().splitlines()]


def _accepted(mid: str) -> Any:
    def match(event: Any) -> bool:
        return isinstance(event, MessagesAccepted) and any(
            m["messageId"] == mid for m in event.messages
        )

    return match


async def test_a_full_disk_is_refused_to_the_connector_with_the_reason_and_ingest_recovers(
    tmp_path: Path, logs: list[MutableMapping[str, Any]]
) -> None:
    out = tmp_path / "steady.jsonl"
    steady = connector("h", [sys.executable, HOSTILE, str(out), "1", "--steady"], restart=False)
    recorder = Recorder()
    async with running_board(tmp_path, steady, recorder=recorder) as board:
        await recorder.wait_for(_accepted("s-3"))
        await _sqlite(board.store).maintain(_cap_at_current_size)
        failed = await recorder.wait_kind(StorageFailed, within=60)
        assert board.store.storage_problem == "database or disk is full"
        # The connector keeps sending the refused message again; free the "disk".
        await _sqlite(board.store).maintain(_uncap)
        recovered = await recorder.wait_kind(StorageRecovered, within=30)
        after = len(recorder.events)
        last = await recorder.wait_for(lambda e: isinstance(e, MessagesAccepted), after=after)
        assert _problem(board.store) is None
    assert failed.cause == "database or disk is full"
    assert recovered.cause == failed.cause
    assert recovered.seconds > 0

    steps = _steps(out)
    refusals = [s["answer"]["error"] for s in steps if s["step"] == "refused"]
    # What the connector sent once the host was stopping is refused as such (issue #26).
    stopping = [e for e in refusals if e.get("data") == {"reason": "shutting-down"}]
    assert refusals[len(refusals) - len(stopping) :] == stopping
    refusals = refusals[: len(refusals) - len(stopping)]
    assert refusals, "the connector was never refused"
    for error in refusals:
        assert error["code"] == -32603
        assert error["data"] == {
            "reason": "storage-unavailable",
            "detail": "database or disk is full",
        }
        assert "send it again later" in error["message"]

    # Nothing acknowledged is lost: every acked id is stored, in order, and nothing else.
    acked = [s["answer"] for s in steps if s["step"] == "acked"]
    async with await MessageStore.open(tmp_path / "sb.sqlite") as store:
        stored = [m.message_id for m in await store.read(0, 10_000)]
    assert stored[: len(acked)] == acked
    assert stored == [f"s-{n}" for n in range(1, len(stored) + 1)]
    assert isinstance(last, MessagesAccepted)

    (down,) = [e for e in logs if e["event"] == "storage_failed"]
    assert down["log_level"] == "error"
    assert down["cause"] == "database or disk is full"
    (up,) = [e for e in logs if e["event"] == "storage_recovered"]
    assert up["log_level"] == "info"
    assert up["seconds"] > 0
    # However many writes the full disk refused, the store logged them rate-limited.
    assert len([e for e in logs if e["event"] == "store_write_failed"]) <= 2


async def test_the_agents_inbox_is_refused_as_storage_unavailable_and_loses_nothing(
    tmp_path: Path,
) -> None:
    out = tmp_path / "steady.jsonl"
    steady = connector("h", [sys.executable, HOSTILE, str(out), "1", "--steady"], restart=False)
    recorder = Recorder()
    async with (
        running_board(tmp_path, steady, recorder=recorder) as board,
        Client(build_server(board, agent="agent"), mode="legacy") as client,
    ):
        await recorder.wait_for(_accepted("s-2"))
        await _sqlite(board.store).maintain(_read_only)
        refused = await client.call_tool("inbox", {})
        await recorder.wait_kind(StorageFailed, within=30)
        await _sqlite(board.store).maintain(_writable)
        await recorder.wait_kind(StorageRecovered, within=30)
        read = await client.call_tool("inbox", {})
    assert refused.is_error
    facts = answer(refused)  # the refusal's facts, checked for the shape every client reads
    assert facts["refusal"] == "storage-unavailable"
    assert facts["cause"] == "attempt to write a readonly database"
    text = " ".join(getattr(block, "text", "") for block in refused.content)
    assert "attempt to write a readonly database" in text
    assert "no message is lost" in text
    assert not read.is_error
    got = [m["message_id"] for m in (read.structured_content or {})["messages"]]
    assert got[:2] == ["s-1", "s-2"]  # the refused read acknowledged nothing
