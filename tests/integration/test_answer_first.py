"""Work a large ``channels/register`` owes waits until its answer has left (issue #14, item 4).

The connector is a real subprocess over stdio (tests/integration/late_reader_connector.py): it
registers 40,000 channels in one request, an answer of about 1.3 MB, more than the 1 MiB pipe
to its stdin holds, and reads nothing more until the test lets it. Until then the cyclic
collector stays paused, the channels' labels are not indexed and the channels are not
admitted; once it reads, all three follow. A
connector that never reads holds them up for ``ANSWER_WAIT`` seconds at most.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from switchboard.config import ConnectorConfig
from switchboard.connections import session
from switchboard.events import ChannelsRegistered, LifecycleStep
from switchboard.lifecycle import admission
from tests.helpers import Recorder, connector, running_board

pytestmark = pytest.mark.anyio

LATE_READER = str(Path(__file__).with_name("late_reader_connector.py"))
CHANNELS = 40_000


@pytest.fixture(autouse=True)
def collector_back_on() -> Iterator[None]:
    yield
    gc.enable()  # whatever a failure left behind, the next test gets the collector


def _late_reader(go: str, out: Path) -> ConnectorConfig:
    return connector(
        "s",
        [sys.executable, LATE_READER, str(CHANNELS), go, str(out)],
        restart=False,
        max_channels=CHANNELS,
    )


async def test_the_collector_and_the_admission_wait_until_the_connector_reads_the_answer(
    tmp_path: Path,
) -> None:
    go, out = tmp_path / "go", tmp_path / "out"
    recorder = Recorder()
    async with running_board(tmp_path, _late_reader(str(go), out), recorder=recorder) as board:
        await recorder.wait_kind(ChannelsRegistered, within=30)
        await anyio.wait_all_tasks_blocked()  # the host has nothing left to do but write
        assert board.registry.server_size("s") == CHANNELS
        assert not gc.isenabled()
        assert recorder.count(LifecycleStep) == 0
        assert board.registry.labels_waiting == CHANNELS
        go.touch()
        await recorder.wait_kind(LifecycleStep, within=30)
        assert gc.isenabled()
        assert board.registry.labels_waiting == 0
        with anyio.fail_after(30):
            while not out.exists() or not out.read_text():
                await anyio.wait_all_tasks_blocked()
                await anyio.sleep(0.01)
        assert out.read_text() == str(CHANNELS)


async def test_a_connector_that_never_reads_holds_them_up_for_answer_wait_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "ANSWER_WAIT", 0.5)
    monkeypatch.setattr(admission, "ANSWER_WAIT", 0.5)
    recorder = Recorder()
    async with running_board(tmp_path, _late_reader("-", tmp_path / "out"), recorder=recorder):
        await recorder.wait_kind(ChannelsRegistered, within=30)
        await recorder.wait_kind(LifecycleStep, within=30)
        # The collector's wait began first (when the handler returned), so it ended first.
        assert gc.isenabled()
