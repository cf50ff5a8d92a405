"""A caller's request frame leaves at the end of the event loop's turn, with the others queued
in that turn, in one write (issue #14: a write per confirmed publish was a fifth of its time).

Against a real child process: only a child's stdin is a link that writes at once.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from switchboard.transport import memory_link_pair
from switchboard.transport.outbox import Outbox
from tests.transport.childkit import python_child

pytestmark = pytest.mark.anyio

# Writes back every line it reads, as it reads it.
_ECHO = """
    import sys
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
"""


async def test_frames_taken_in_one_turn_are_written_together_as_it_ends_in_order(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(20):
        async with python_child(tmp_path, _ECHO, "echo") as link:
            outbox = Outbox(link)
            assert outbox.try_send_own(b'{"n":1}')
            assert outbox.try_send_own(b'{"n":2}')
            # Another sender's frame queues behind them, never ahead.
            await outbox.send_own(b'{"n":3}')
            assert len(outbox) == 3  # taken, not written yet
            await anyio.lowlevel.checkpoint()  # the turn ends
            assert len(outbox) == 0
            echoed = [await link.receive() for _ in range(3)]
    assert echoed == [b'{"n":1}', b'{"n":2}', b'{"n":3}']


async def test_a_link_that_cannot_write_at_once_leaves_the_frame_to_the_caller() -> None:
    near, far = memory_link_pair()
    outbox = Outbox(near)
    assert not outbox.try_send_own(b'{"n":1}')
    assert len(outbox) == 0
    await outbox.send_own(b'{"n":1}')
    with anyio.fail_after(10):
        assert await far.receive() == b'{"n":1}'
    await near.aclose()
    await far.aclose()
