"""A host that stops takes no more work and leaves nothing waiting (issue #26, item 3).

A real board (``Switchboard`` over a real SQLite store) serves a fake connector over an
in-memory link; the whole of ``switchboard run``'s shutdown, with a real process, agents over
HTTP and a stdio connector, is tests/integration/test_shutdown.py.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from switchboard.agents.inbox.delivery import InboxRead
from switchboard.transport import RpcError
from tests.fake import FakeConnector, board_with, descriptor, message

pytestmark = pytest.mark.anyio


async def test_a_stopping_host_answers_a_waiting_inbox_read_at_once_and_waits_no_more(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        reads: list[InboxRead] = []

        async def read() -> None:
            reads.append(await board.delivery.read("a", wait_seconds=60))

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(read)
                while not board.store.waiting:
                    await anyio.lowlevel.checkpoint()
                board.begin_stopping()
            later = await board.delivery.read("a", wait_seconds=60)
    (first,) = reads
    assert first.messages == []
    assert later.messages == []
    assert not board.store.waiting


async def test_a_stopping_host_refuses_a_connectors_new_requests_as_shutting_down(
    tmp_path: Path,
) -> None:
    fake = FakeConnector()
    async with board_with(tmp_path, fake) as board:
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        taken = await fake.call("channels/incoming", {"messages": [message("room", "m1")]})
        board.begin_stopping()
        with pytest.raises(RpcError) as refused:
            await fake.call("channels/incoming", {"messages": [message("room", "m2")]})
        stats = board.sessions["s1"].statistics()
        stored = [m.message_id for m in await board.store.read(0, 10)]
    assert taken["results"][0]["accepted"]
    assert refused.value.code == -32603
    assert refused.value.data == {"reason": "shutting-down"}
    assert stats.incoming_refused == 1
    assert stored == ["m1"]  # nothing of the refused batch was taken
