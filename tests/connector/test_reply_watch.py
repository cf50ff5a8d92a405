"""ReplyWatch: callbacks fire once the matching answer has been written, not before."""

from __future__ import annotations

import json

import anyio
import pytest

from switchboard.connector.replies import ReplyWatch
from switchboard.transport import memory_link_pair

pytestmark = pytest.mark.anyio


async def test_a_callback_fires_after_the_frame_with_its_result_is_sent() -> None:
    a, b = memory_link_pair()
    watch = ReplyWatch(a)
    fired: list[int] = []
    watch.expect({"accepted": True}, lambda: fired.append(len(received)))
    received: list[bytes] = []
    await watch.send(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"other": 1}}).encode())
    assert fired == []
    await watch.send(json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"accepted": True}}).encode())
    with anyio.fail_after(5):
        received.append(await b.receive())
        received.append(await b.receive())
    assert fired == [0]  # fired when written, before the reader even looked


async def test_responses_inside_a_batch_and_junk_lines_are_handled() -> None:
    a, b = memory_link_pair()
    watch = ReplyWatch(a)
    fired: list[str] = []
    watch.expect({"n": 2}, lambda: fired.append("two"))
    watch.expect({"n": 2}, lambda: fired.append("second two"))
    batch = [
        {"jsonrpc": "2.0", "id": 1, "result": {"n": 1}},
        {"jsonrpc": "2.0", "id": 2, "result": {"n": 2}},
    ]
    await watch.send_many([b"not json", json.dumps(batch).encode()])
    assert fired == ["two"]
    await watch.send(json.dumps({"jsonrpc": "2.0", "method": "x", "result": {"n": 2}}).encode())
    assert fired == ["two"]  # a request that happens to carry "result" is not an answer
    await b.aclose()


async def test_a_failing_callback_does_not_break_the_link() -> None:
    a, b = memory_link_pair()
    watch = ReplyWatch(a)

    def boom() -> None:
        raise RuntimeError("boom")

    watch.expect({}, boom)
    await watch.send(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    await watch.send(b'{"jsonrpc":"2.0","id":2,"result":{}}')
    with anyio.fail_after(5):
        assert await b.receive()
        assert await b.receive()
