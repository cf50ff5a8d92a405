"""A connector's stdin and stdout pipes are grown to 1 MiB where the kernel allows it, and only
so many.

Large answers (the results of registering 100,000 channels are about 4 MB) then leave in a few
writes rather than sixty, and a connector's burst of requests in one write (issue #14). The
child here asks the kernel for the size of its own stdin and stdout, which are the same pipes
the host holds the other ends of.
"""

from __future__ import annotations

import fcntl
import os
import sys
import textwrap
from pathlib import Path

import anyio
import orjson
import pytest

from switchboard.transport import Peer, spawn_stdio, stdio
from switchboard.transport.stdio import PIPE_BYTES

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are a Linux feature"),
]

_CHILD = textwrap.dedent(
    """
    import fcntl, json, sys
    sizes = {
        "stdin": fcntl.fcntl(0, fcntl.F_GETPIPE_SZ),
        "stdout": fcntl.fcntl(1, fcntl.F_GETPIPE_SZ),
    }
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "sizes", "params": sizes}) + "\\n")
    sys.stdout.flush()
    sys.stdin.read()
    """
)


def _default() -> int:
    """The size of a new pipe on this machine (64 KiB with 4 KiB pages)."""
    read, write = os.pipe()
    try:
        return int(fcntl.fcntl(write, fcntl.F_GETPIPE_SZ))
    finally:
        os.close(read)
        os.close(write)


def _allowed() -> int:
    """What an unprivileged process may ask for (``/proc/sys/fs/pipe-max-size``)."""
    try:
        return int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except OSError:
        return PIPE_BYTES


async def test_a_spawned_connectors_pipes_hold_a_mebibyte(tmp_path: Path) -> None:
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    with anyio.fail_after(10):
        async with spawn_stdio([sys.executable, str(child)], name="sizes") as link:
            frame = await link.receive()
    sizes = orjson.loads(frame)["params"]
    expected = min(PIPE_BYTES, _allowed())
    assert sizes == {"stdin": expected, "stdout": expected}


async def test_no_more_pipes_are_grown_than_the_cap_and_a_place_comes_back_on_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child = tmp_path / "child.py"
    child.write_text(_CHILD)
    monkeypatch.setattr(stdio, "GROWN_PIPES_MAX", 3)
    with anyio.fail_after(10):
        async with (
            spawn_stdio([sys.executable, str(child)], name="first") as first,
            spawn_stdio([sys.executable, str(child)], name="second") as second,
        ):
            one = orjson.loads(await first.receive())["params"]
            two = orjson.loads(await second.receive())["params"]
        async with spawn_stdio([sys.executable, str(child)], name="third") as third:
            three = orjson.loads(await third.receive())["params"]
    grown, default = min(PIPE_BYTES, _allowed()), _default()
    assert one == {"stdin": grown, "stdout": grown}
    assert two == {"stdin": grown, "stdout": default}  # the third place; then none is left
    assert three == {"stdin": grown, "stdout": grown}  # the first two came back on exit


_DEAF_CHILD = "import time\ntime.sleep(60)\n"


async def test_a_connector_that_reads_nothing_holds_the_peer_back_after_one_frame(
    tmp_path: Path,
) -> None:
    # A frame is written at once only while nothing is buffered: once the pipe is full one
    # frame waits in the transport and the next sender waits for the drain, as without it.
    child = tmp_path / "deaf.py"
    child.write_text(_DEAF_CHILD)
    text = "x" * (256 * 1024)
    sent: list[int] = []
    with anyio.fail_after(20):
        async with spawn_stdio([sys.executable, str(child)], name="deaf") as link:
            peer = Peer(link, name="host")
            async with anyio.create_task_group() as tg:
                tg.start_soon(peer.run)

                async def flood() -> None:
                    for n in range(64):  # 16 MiB: far more than the pipe holds
                        await peer.notify("note", {"text": text})
                        sent.append(n)

                tg.start_soon(flood)
                await anyio.wait_all_tasks_blocked()
                writer = link._stream._tx._stream  # type: ignore[attr-defined]
                buffered = writer.transport.get_write_buffer_size()
                tg.cancel_scope.cancel()
    frame = len(text) + 64
    assert 0 < len(sent) < 64
    assert len(sent) * frame <= min(PIPE_BYTES, _allowed()) + 2 * frame
    assert buffered <= 2 * frame
