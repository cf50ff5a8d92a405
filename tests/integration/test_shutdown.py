"""``switchboard run`` stops cleanly on SIGINT and SIGTERM, and keeps its store private (#13, 2),
and stops in order, at once, with agents attached and a connector streaming (#26, 3).

Switchboard runs as a real process with a real stdio connector (echo_connector.py) and a real
SQLite store; the test signals the host's pid only, as a service manager or ``kill`` does. It
is started with umask 0, so the store's modes come from Switchboard and not from the umask.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest
from anyio.abc import Process

from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.schema import create_private
from tests.integration.crash_support import (
    StderrWatch,
    kill_group,
    spawn_switchboard,
    write_config,
)
from tests.integration.loaded_host import SECRETS, attached, open_long_poll, running
from tests.integration.loaded_host import write_config as loaded_config

pytestmark = pytest.mark.anyio

ECHO = str(Path(__file__).with_name("echo_connector.py"))


def _write_config(tmp_path: Path, transport: str) -> tuple[Path, Path]:
    store = tmp_path / "made-by-switchboard" / "store.sqlite"
    argv = [sys.executable, ECHO]
    agent = '[agent]\ntransport = "stdio"\n'
    if transport == "http":
        agent = '[agent]\ntransport = "http"\nport = 0\ntoken = "t0ken-for-the-shutdown-test"\n'
    config = tmp_path / "switchboard.toml"
    config.write_text(
        'log_level = "INFO"\n'
        f"[store]\npath = {orjson.dumps(str(store)).decode()}\n"
        f"{agent}"
        f'[[connectors]]\nid = "echo"\ncommand = {orjson.dumps(argv).decode()}\n'
    )
    return config, store


async def _spawn(config: Path) -> Process:
    return await anyio.open_process(
        [sys.executable, "-m", "switchboard", "run", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        umask=0,
    )


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat_line = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces, so split after the last ")".
        if int(stat_line.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _read_until(process: Process, seen: bytearray, marker: bytes) -> None:
    assert process.stderr is not None
    while marker not in seen:
        seen.extend(await process.stderr.receive())


async def _read_to_end(process: Process, seen: bytearray) -> None:
    assert process.stderr is not None
    try:
        while True:
            seen.extend(await process.stderr.receive())
    except anyio.EndOfStream:
        return


async def _run_and_signal(tmp_path: Path, transport: str, signum: signal.Signals) -> None:
    config, store = _write_config(tmp_path, transport)
    async with await _spawn(config) as process:
        seen = bytearray()
        try:
            with anyio.fail_after(30):
                await _read_until(process, seen, b"channels_registered")
            (connector,) = _children(process.pid)
            # The store is open: its file, WAL and shared memory are the owner's only.
            assert _mode(store.parent) == 0o700
            for path in (store, Path(f"{store}-wal"), Path(f"{store}-shm")):
                assert _mode(path) == 0o600, path
            before = len(seen)
            process.send_signal(signum)
            with anyio.fail_after(30):
                await _read_to_end(process, seen)
                code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    log = seen.decode("utf-8", "replace")
    after = log[before:]
    assert code == 0, log
    assert log.count("shutdown_complete") == 1, log
    assert f"signal={signum.name}" in log.split("shutdown_complete", 1)[1].splitlines()[0]
    assert "Traceback" not in log, log
    for word in ("connector_restart_scheduled", "connector_link_ended", "connector_failed"):
        assert word not in after, after
    assert _gone(connector)
    assert _mode(store) == 0o600


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
async def test_a_signal_stops_switchboard_with_one_shutdown_line_and_its_connector_gone(
    tmp_path: Path, signum: signal.Signals
) -> None:
    await _run_and_signal(tmp_path, "stdio", signum)


async def test_sigterm_stops_switchboard_serving_agents_over_http_just_as_cleanly(
    tmp_path: Path,
) -> None:
    await _run_and_signal(tmp_path, "http", signal.SIGTERM)


def test_the_store_file_is_made_for_its_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "a" / "b" / "store.sqlite"
        create_private(path)
    finally:
        os.umask(old)
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert _mode(path.parent.parent) == 0o700


def test_an_existing_store_file_and_folder_keep_their_modes(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o750)
    path = folder / "store.sqlite"
    path.write_bytes(b"")
    path.chmod(0o640)
    create_private(path)
    assert _mode(folder) == 0o750
    assert _mode(path) == 0o640


async def test_sigterm_during_a_stream_of_messages_loses_none_the_connector_saw_acknowledged(
    tmp_path: Path,
) -> None:
    store, accepted_file = tmp_path / "stream.sqlite", tmp_path / "accepted.txt"
    config = write_config(tmp_path / "stream.toml", store, ["stream", str(accepted_file), "5000"])
    process = await spawn_switchboard(config)
    watch = StderrWatch(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch.run)
            with anyio.fail_after(60):
                await watch.until_accepted(40)
            (connector,) = _children(process.pid)
            process.send_signal(signal.SIGTERM)  # mid-stream: a request is in flight
            with anyio.fail_after(30):
                code = await process.wait()
    finally:
        kill_group(process)
        await process.aclose()
    assert code == 0, watch.tail
    assert b"shutdown_complete" in watch.tail, watch.tail
    assert b"Traceback" not in watch.tail, watch.tail
    assert _gone(connector)
    accepted = accepted_file.read_text().split()
    assert 40 <= len(accepted) < 5000  # stopped mid-stream
    async with await MessageStore.open(store) as opened:
        stored = {m.message_id for m in await opened.read(0, 10_000)}
    assert set(accepted) <= stored, "a message the connector saw acknowledged was lost"


async def test_sigterm_with_agents_attached_answers_the_poll_and_the_connector_and_exits_in_3_s(
    tmp_path: Path,
) -> None:
    """Agents attached over streamable HTTP (one long-polling an empty inbox, one with only its
    session's stream open) and a connector with requests in flight: SIGTERM ends the long poll
    with an empty answer, answers every request the connector sent (the ones not taken
    ``-32603`` with ``data.reason = "shutting-down"``, after which the connector stops
    sending), logs no ERROR and no traceback, and the process exits within 3 s."""
    config = loaded_config(tmp_path, rate=300.0, level="DEBUG")
    with anyio.fail_after(120):
        async with running(config) as (host, group):
            ready = anyio.Event()
            group.start_soon(attached, host.url, SECRETS["BUSY_TOKEN"], ready)
            await ready.wait()
            poll = await open_long_poll(group, host.url, SECRETS["IDLE_TOKEN"])
            await host.until("inbox_waiting")  # the poll waits on the host's store
            stopped_at = len(host.raw)
            code, seconds = await host.stop()
            await poll.done.wait()
    log = host.log
    after = host.raw[stopped_at:].decode("utf-8", "replace")
    assert code == 0, log[-3000:]
    assert seconds < 3.0, (seconds, after)
    assert poll.error is None, repr(poll.error)
    assert poll.answer is not None
    assert (poll.answer["is_error"], poll.answer["messages"]) == (False, [])
    assert "[error" not in after, after
    assert "Traceback" not in log, after
    assert "shutdown_complete" in after
    told = orjson.loads((tmp_path / "connector.json").read_bytes())
    assert told["accepted_batches"] > 0
    assert told["unanswered"] == 0, told
    for reason, error in told["reasons"].items():
        assert reason == "shutting-down", told
        assert error["code"] == -32603, error
