"""Helpers for the crash-safety tests: Switchboard as a real process that the test can SIGKILL.

- :func:`spawn_switchboard` starts ``python -m switchboard run --config ...`` in its own
  process group (so one ``killpg`` takes its connectors with it), with piped stdio.
- :func:`mcp_over` is an MCP client transport over that process's stdin/stdout; unlike the
  SDK's stdio client it leaves the process to the test, which may kill it mid-call. When the
  process dies its stdout ends, the client's stream closes and calls in flight fail.
- :class:`StderrWatch` drains the process's stderr (it must never fill up and block the
  process) and lets the test wait for the connector's ``accepted N`` lines.
- :func:`write_config` writes a config file for one store and an optional connector.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
import mcp_types
import orjson
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

CONNECTOR = str(Path(__file__).with_name("crash_connector.py"))
_ACCEPTED = re.compile(rb"accepted (\d+)")


def write_config(path: Path, store: Path, connector_args: list[str] | None) -> Path:
    """A config with the store at ``store``, the agent on stdio, and the crash connector
    (``connector_args`` after the script) unless None. The log level is INFO because the
    connector's stderr lines reach the host's stderr as INFO log lines."""
    text = f'log_level = "INFO"\n[store]\npath = {orjson.dumps(str(store)).decode()}\n'
    text += '[agent]\ntransport = "stdio"\nname = "agent"\n'
    if connector_args is not None:
        argv = [sys.executable, CONNECTOR, *connector_args]
        text += f'[[connectors]]\nid = "crash"\ncommand = {orjson.dumps(argv).decode()}\n'
        text += "restart = false\n"
    path.write_text(text)
    return path


async def spawn_switchboard(config: Path) -> Process:
    """``switchboard run`` in a new session (process group), stdin/stdout/stderr piped."""
    return await anyio.open_process(
        [sys.executable, "-m", "switchboard", "run", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def kill_group(process: Process) -> None:
    """SIGKILL the process and everything in its group (its connectors)."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@asynccontextmanager
async def mcp_over(process: Process) -> AsyncIterator[TransportStreams]:
    """An MCP client transport over ``process``'s stdin and stdout (newline-delimited)."""
    assert process.stdin is not None
    assert process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](64)

    async def pump_out() -> None:
        buffer = b""
        async with read_send:
            try:
                async for chunk in stdout:
                    *lines, buffer = (buffer + chunk).split(b"\n")
                    for line in lines:
                        if line.strip():
                            message = mcp_types.jsonrpc_message_adapter.validate_json(line)
                            await read_send.send(SessionMessage(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                return

    async def pump_in() -> None:
        async with write_receive:
            async for session_message in write_receive:
                body = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await stdin.send(body.encode() + b"\n")
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_out)
        tg.start_soon(pump_in)
        try:
            yield read_receive, write_send
        finally:
            tg.cancel_scope.cancel()


class StderrWatch:
    """Drains a process's stderr; remembers the highest ``accepted N`` the connector printed."""

    def __init__(self, process: Process) -> None:
        assert process.stderr is not None
        self._stderr = process.stderr
        self.accepted = 0
        self.tail = b""
        self._changed = anyio.Event()

    async def run(self) -> None:
        """Read until the stream ends (run it in a task group)."""
        buffer = b""
        try:
            async for chunk in self._stderr:
                *lines, buffer = (buffer + chunk).split(b"\n")
                for line in lines:
                    found = _ACCEPTED.search(line)
                    if found:
                        self.accepted = max(self.accepted, int(found.group(1)))
                    else:
                        self.tail = (self.tail + line + b"\n")[-4000:]
                self._changed.set()
                self._changed = anyio.Event()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        self._changed.set()

    async def until_accepted(self, count: int) -> None:
        """Wait until the connector has reported ``count`` accepted messages."""
        while self.accepted < count:
            await self._changed.wait()
