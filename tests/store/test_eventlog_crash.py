"""The decision log loses no committed event when its process is killed."""

from __future__ import annotations

import signal
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from switchboard.store.sqlite.eventlog import DecisionLog

pytestmark = pytest.mark.anyio

_CHILD = textwrap.dedent(
    """
    import sys
    import anyio
    import structlog
    from switchboard.store.sqlite.eventlog import DecisionLog

    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))

    async def main(path: str) -> None:
        decisions = await DecisionLog.open(path)
        last = 0
        for i in range(20):
            event = {"kind": "desired-state", "serverId": "s", "channelId": f"c{i}",
                     "desired": "open", "source": "agent-tool", "at": float(i)}
            last = await decisions.append([event, dict(event, desired="closed")])
        print("committed", last, flush=True)
        sys.stdin.read()  # stay alive, holding the log open, until killed

    anyio.run(main, sys.argv[1])
    """
)


async def test_a_process_killed_after_commits_loses_none_of_the_committed_events(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite"
    script = tmp_path / "child.py"
    script.write_text(_CHILD, encoding="utf-8")
    with anyio.fail_after(15):
        async with await anyio.open_process([sys.executable, str(script), str(path)]) as proc:
            assert proc.stdout is not None
            line = ""
            async for chunk in TextReceiveStream(proc.stdout):
                line += chunk
                if "\n" in line:
                    break
            proc.send_signal(signal.SIGKILL)
            assert await proc.wait() == -signal.SIGKILL

    words = line.split()
    assert words[0] == "committed"
    committed = int(words[1])
    assert committed == 40
    async with await DecisionLog.open(path) as reopened:
        loaded = await reopened.load()
    assert reopened.latest_seq == committed
    assert [e["channelId"] for e in loaded.tail[::2]] == [f"c{i}" for i in range(20)]
    assert [e["desired"] for e in loaded.tail[:4]] == ["open", "closed", "open", "closed"]
