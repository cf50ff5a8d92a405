"""Requests over a child's stdio: written at once, then timed out or cancelled while waiting.

Issue #14: a request whose frame the link takes at once waits for its answer without a cancel
scope; the peer's timer then ends the wait itself. These run against a real child process,
the only kind of link that writes at once.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from switchboard.transport import RequestTimeoutError
from tests.transport.childkit import python_child, serving_peer

pytestmark = pytest.mark.anyio

# Answers "echo" requests (id echoed, result = params) and ignores every other one.
_CHILD = """
    import json, sys
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "echo":
            out = {"jsonrpc": "2.0", "id": msg["id"], "result": msg.get("params")}
            sys.stdout.write(json.dumps(out) + "\\n")
            sys.stdout.flush()
"""


async def test_a_request_written_at_once_still_times_out_and_the_next_one_is_answered(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(20):
        async with python_child(tmp_path, _CHILD) as link, serving_peer(link) as peer:
            with pytest.raises(RequestTimeoutError, match="'ignored'"):
                await peer.request("ignored", {}, timeout=0.2)
            assert peer.statistics().awaiting_response == 0
            assert await peer.request("echo", {"n": 1}, timeout=10) == {"n": 1}


async def test_a_caller_cancelled_while_it_waits_leaves_nothing_behind(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        async with python_child(tmp_path, _CHILD) as link, serving_peer(link) as peer:
            with anyio.move_on_after(0.2) as waited:
                await peer.request("ignored", {}, timeout=30)
            assert waited.cancelled_caught
            assert peer.statistics().awaiting_response == 0
            assert await peer.request("echo", [2], timeout=10) == [2]
