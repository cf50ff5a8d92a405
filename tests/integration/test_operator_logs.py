"""What an operator reads on the stderr of ``switchboard run`` (issue #13, item 3).

Switchboard runs as a real process with real stdio connectors: the echo connector, a connector
that prints a traceback and exits 3 (written to the test's folder), and a connector that floods
its stdout with junk and its stderr with lines. The test reads the host's stderr as it comes,
kills a connector by its pid, and stops the host with SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
import pytest
from anyio.abc import Process

pytestmark = pytest.mark.anyio

ECHO = str(Path(__file__).with_name("echo_connector.py"))

CRASHER = """
import os, sys, traceback
from switchboard.connector import Connector

class Crasher(Connector):
    async def on_ready(self) -> None:
        await self.register(
            [{"id": "c:room", "type": "room", "label": "#room", "direction": "bidirectional"}]
        )
        try:
            {}["missing"]
        except KeyError:
            traceback.print_exc()
        sys.stderr.flush()
        os._exit(3)

Crasher("crasher").main()
"""

JUNK = """
import sys
sys.stdout.write("not json-rpc, just a banner\\n" * 50_000)
sys.stdout.flush()
"""

CHATTER = """
import sys
for i in range(50_000):
    sys.stderr.write(f"debug: polling the platform, round {i}\\n")
sys.stderr.flush()
"""

Entry = dict[str, Any]


class _Stderr:
    """The host's stderr, read as it comes and split into lines."""

    def __init__(self, process: Process) -> None:
        assert process.stderr is not None
        self._stream = process.stderr
        self.raw = bytearray()
        self.lines: list[bytes] = []

    async def until(self, found: Callable[[list[Entry]], bool]) -> None:
        while not found(self.entries()):
            self._take(await self._stream.receive())

    async def to_end(self) -> None:
        try:
            while True:
                self._take(await self._stream.receive())
        except anyio.EndOfStream:
            return

    def _take(self, chunk: bytes) -> None:
        self.raw.extend(chunk)
        whole = bytes(self.raw).split(b"\n")[:-1]  # the last piece is not a whole line yet
        self.lines = [line for line in whole if line]

    def entries(self) -> list[Entry]:
        return [json.loads(line) for line in self.lines]


def _events(entries: list[Entry], event: str, **fields: Any) -> list[Entry]:
    return [
        e for e in entries if e["event"] == event and all(e.get(k) == v for k, v in fields.items())
    ]


def _config(tmp_path: Path, connectors: str, *, http: bool) -> Path:
    agent = '[agent]\ntransport = "none"\n'
    if http:
        agent = '[agent]\ntransport = "http"\nport = 0\ntoken = "t0ken-for-the-operator-logs"\n'
    config = tmp_path / "switchboard.toml"
    store = tmp_path / "store.sqlite"
    config.write_text(
        f'log_level = "INFO"\n[store]\npath = {orjson.dumps(str(store)).decode()}\n'
        f"{agent}{connectors}"
    )
    return config


def _connector(name: str, argv: list[str], extra: str = "restart = false\n") -> str:
    return f'[[connectors]]\nid = "{name}"\ncommand = {orjson.dumps(argv).decode()}\n{extra}'


def _script(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return [sys.executable, str(path)]


async def _spawn(config: Path, *options: str) -> Process:
    return await anyio.open_process(
        [sys.executable, "-m", "switchboard", *options, "run", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _stop(process: Process, stderr: _Stderr) -> None:
    process.send_signal(signal.SIGTERM)
    await stderr.to_end()
    assert await process.wait() == 0


async def test_with_log_json_every_line_is_json_and_the_connectors_life_is_told_at_info(
    tmp_path: Path,
) -> None:
    config = _config(
        tmp_path,
        _connector("crasher", _script(tmp_path, "crasher", CRASHER))
        + _connector(
            "steady",
            [sys.executable, ECHO],
            "restart = true\nbackoff_initial = 0.1\nbackoff_max = 0.2\n",
        ),
        http=True,
    )
    with anyio.fail_after(120):
        async with await _spawn(config, "--log-json") as process:
            stderr = _Stderr(process)
            await stderr.until(
                lambda es: (
                    bool(_events(es, "connector_exited", server_id="crasher"))
                    and bool(_events(es, "connector_connected", server_id="steady"))
                )
            )
            steady = _events(stderr.entries(), "connector_started", server_id="steady")[0]
            os.kill(steady["pid"], signal.SIGKILL)
            await stderr.until(
                lambda es: len(_events(es, "connector_started", server_id="steady")) == 2
            )
            await _stop(process, stderr)

    entries = stderr.entries()  # every line parsed as JSON, or this raises
    assert len(entries) == len(stderr.raw.strip().split(b"\n"))
    assert all({"event", "level", "timestamp"} <= e.keys() for e in entries)
    # The stdlib's records (uvicorn's here) are JSON lines of the same shape.
    assert _events(entries, "Application startup complete.", logger="uvicorn")

    [started] = _events(entries, "connector_started", server_id="crasher")
    assert started["command"] == [sys.executable, str(tmp_path / "crasher.py")]
    assert isinstance(started["pid"], int)
    [connected] = _events(entries, "connector_connected", server_id="crasher")
    assert connected["dialect"] == "mcpl-0.5"
    assert "channels.register" in connected["grant"]
    assert {"enabled", "disabled"} <= connected.keys()
    [registered] = _events(entries, "channels_registered", server_id="crasher")
    assert registered["channels"] == 1
    [crashed] = _events(entries, "connector_exited", server_id="crasher")
    assert (crashed["exit_code"], crashed["channels_dropped"]) == (3, 1)
    assert not _events(entries, "connector_restart_scheduled", server_id="crasher")

    # The traceback the crasher printed is one event, whole.
    with_traceback = [
        e
        for e in _events(entries, "connector_stderr", name="crasher")
        if "Traceback" in e["line"] or "KeyError" in e["line"]
    ]
    assert len(with_traceback) == 1
    block = with_traceback[0]["line"]
    assert block.startswith("Traceback (most recent call last):\n")
    assert block.endswith("\nKeyError: 'missing'")
    assert with_traceback[0]["lines"] == block.count("\n") + 1

    killed = _events(entries, "connector_exited", server_id="steady")[0]
    assert killed["signal"] == "SIGKILL"
    assert "exit_code" not in killed
    [restart] = _events(entries, "connector_restart_scheduled", server_id="steady")[:1]
    assert 0.05 <= restart["delay"] <= 0.2
    assert _events(entries, "shutdown_complete", signal="SIGTERM")


async def test_a_connector_flooding_stdout_and_stderr_leaves_a_bounded_log_with_counts(
    tmp_path: Path,
) -> None:
    config = _config(
        tmp_path,
        _connector("junk", _script(tmp_path, "junk", JUNK))
        + _connector("chatter", _script(tmp_path, "chatter", CHATTER)),
        http=False,
    )
    with anyio.fail_after(120):
        async with await _spawn(config, "--log-json") as process:
            stderr = _Stderr(process)
            await stderr.until(
                lambda es: (
                    bool(_events(es, "connector_exited", server_id="junk"))
                    and bool(_events(es, "connector_exited", server_id="chatter"))
                )
            )
            await _stop(process, stderr)

    entries = stderr.entries()
    junk = [e for e in entries if e["event"] == "junk_line_skipped"]
    assert junk[-1]["total"] == 50_000  # every junk line counted
    assert len(junk) <= 3  # the first one, and summaries
    assert sum(e["count"] for e in junk) == 50_000

    told = _events(entries, "connector_stderr", name="chatter")
    suppressed = _events(entries, "connector_stderr_suppressed", name="chatter")
    shown = sum(e.get("lines", 1) for e in told)
    assert suppressed, "the flood went past the budget and was counted"
    assert shown + suppressed[-1]["total"] == 50_000  # every stderr line logged or counted
    assert len(suppressed) <= 3

    chatter_bytes = sum(len(line) for line in stderr.lines if b'"chatter"' in line)
    other_bytes = len(stderr.raw) - chatter_bytes
    # Unthrottled, the junk alone would be 50,000 lines (several MB).
    assert other_bytes < 8_000, other_bytes
    # The stderr budget: a 64 KiB burst and 8 KiB/s (the flood lasts a few seconds at most).
    assert chatter_bytes < 200_000, chatter_bytes


HOSTILE = str(Path(__file__).with_name("hostile_connector.py"))


async def test_a_flood_of_100000_channel_changes_leaves_under_1_mb_of_log_with_every_one_counted(
    tmp_path: Path,
) -> None:
    """Issue #26, item 4: a connector sends 100,000 ``channels/changed`` (each adds a channel
    and removes the one before; its registration rate is lifted, so every one is taken), then
    a thousand each of an error with ``id: null``, a malformed ``mcpl/manifestChanged`` and a
    ``notifications/message``. Each kind of line is written once in full, then counted into
    summaries: the whole log stays under 1 MB, the summaries' totals add up to every event,
    and ``/status`` counts them for the connector."""
    argv = [sys.executable, HOSTILE, str(tmp_path / "out.jsonl"), "1", "--flood", "100000"]
    config = _config(
        tmp_path,
        _connector(
            "h",
            argv,
            "restart = false\nrequest_timeout = 120\nmax_registrations_per_second = 1000000000\n",
        )
        + "[status]\nport = 0\n",
        http=False,
    )
    with anyio.fail_after(300):
        async with await _spawn(config, "--log-json") as process:
            assert process.stderr is not None
            raw, marker, searched = bytearray(), b'"line": "flooded"', 0
            while raw.find(marker, searched) < 0:
                searched = max(0, len(raw) - len(marker))
                raw.extend(await process.stderr.receive())
            url = json.loads(
                next(line for line in raw.split(b"\n") if b'"status_endpoint"' in line)
            )["url"]
            async with httpx2.AsyncClient(timeout=30) as http:
                status = (await http.get(url)).json()
            stderr = _Stderr(process)
            stderr.raw.extend(raw)
            await _stop(process, stderr)

    entries = stderr.entries()  # every line parsed as JSON
    assert len(stderr.raw) < 1_000_000, len(stderr.raw)

    def counted(event: str, **fields: Any) -> int:
        found = _events(entries, event, **fields)
        assert len(found) <= 3, found  # the first in full, then summaries
        assert sum(e["count"] for e in found) == found[-1]["total"]
        return int(found[-1]["total"])

    assert counted("channels_changed", server_id="h") == 100_000
    changed = _events(entries, "channels_changed", server_id="h")
    assert sum(e["added"] for e in changed) == 100_000  # summaries sum what they cover
    assert counted("remote_reported_error") == 1000
    assert counted("manifest_changed_malformed", server_id="h") == 1000
    assert counted("connector_log", server_id="h") == 1000
    assert counted("channel_lifecycle", server_id="h", lifecycle="reconciled") >= 100_000
    (row,) = [c for c in status["connectors"] if c["id"] == "h"]
    assert row["log_events"] > 100_000
    assert row["log_lines"] < 30


async def test_a_connector_that_dies_before_its_handshake_is_warned_with_its_own_words(
    tmp_path: Path,
) -> None:
    """A Python connector whose module its interpreter cannot import exits at once. The
    warning says the process exited and with what status, carries the last lines of its
    stderr (``No module named ...``), says what to do, and the next try waits longer."""
    config = _config(
        tmp_path,
        _connector(
            "broken",
            [sys.executable, "-m", "no_such_connector_module"],
            "restart = true\nbackoff_initial = 0.05\nbackoff_max = 10\n",
        ),
        http=False,
    )
    with anyio.fail_after(120):
        async with await _spawn(config, "--log-json") as process:
            stderr = _Stderr(process)
            await stderr.until(
                lambda es: len(_events(es, "connector_failed", server_id="broken")) >= 3
            )
            await _stop(process, stderr)
    failed = _events(stderr.entries(), "connector_failed", server_id="broken")
    for entry in failed:
        assert entry["level"] == "warning"
        assert entry["error"] == "the connector's process exited with status 1"
        assert "No module named no_such_connector_module" in entry["stderr"]
        assert "switchboard check" in entry["next"]
    delays = [e["delay"] for e in _events(stderr.entries(), "connector_restart_scheduled")]
    assert delays[2] > delays[0]  # 50-100 % jitter of 0.05 then 0.2: it backs off


async def test_in_the_console_format_a_connectors_traceback_is_printed_below_its_line(
    tmp_path: Path,
) -> None:
    """What the connector wrote is shown as it wrote it, one indented ``|`` line each, not
    escaped into one ``line="...\\n..."``; and uvicorn's INFO lines are not tagged as errors."""
    config = _config(
        tmp_path, _connector("crasher", _script(tmp_path, "crasher", CRASHER)), http=True
    )
    with anyio.fail_after(120):
        async with await _spawn(config) as process:
            stderr = _Stderr(process)
            while not (
                b"connector_exited" in stderr.raw and b"Application startup complete." in stderr.raw
            ):
                stderr._take(await stderr._stream.receive())
            process.send_signal(signal.SIGTERM)
            await stderr.to_end()
            assert await process.wait() == 0
    text = stderr.raw.decode()
    lines = text.splitlines()
    [at] = [
        n
        for n, line in enumerate(lines)
        if line == "    | Traceback (most recent call last):" and lines[n - 1] == "    line:"
    ]
    assert " connector_stderr " in lines[at - 2]
    assert "name=crasher" in lines[at - 2]
    assert lines[at - 1] == "    line:"
    assert "    | KeyError: 'missing'" in lines
    assert not [line for line in lines if "connector_stderr" in line and "\\n" in line]
    startup = next(line for line in lines if "Application startup complete." in line)
    assert startup.endswith("[uvicorn]")
    assert "[uvicorn.error]" not in text
