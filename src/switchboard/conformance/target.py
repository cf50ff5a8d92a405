"""What the kit talks to, and how to open a fresh connection to it.

What this module knows: the three ways to name a connector under test — a command line
(spawned over stdio, one new process per connection), ``tcp://host:port`` and
``ws://...``/``wss://...`` (one new connection each time) — and how to open each with the
transport's ``spawn_stdio``, ``dial_tcp`` and ``dial_websocket``. When the caller wants the
spawned connector's stderr lines (the report shows their tail under a failure), it spawns
the process itself around the transport's ``StdioLink`` and hands each line to the caller
(:mod:`.common.stderr`, shared with the host suite), stopping the process the same way:
close stdin, wait, SIGTERM, wait, SIGKILL.

What it deliberately does not know: JSON-RPC, MCPL, or what a check does with the link.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import anyio

from switchboard.transport import (
    DEFAULT_MAX_FRAME,
    Link,
    StdioLink,
    dial_tcp,
    dial_websocket,
    spawn_stdio,
)

from .common.stderr import StderrLine, watching_stderr

__all__ = ["ServerTarget", "StderrLine", "TargetKind", "open_link"]

TargetKind = Literal["stdio", "tcp", "ws"]

# How long a spawned connector gets to exit after its stdin closes (then SIGTERM, SIGKILL).
_SHUTDOWN_GRACE = 1.0


@dataclass(frozen=True, slots=True)
class ServerTarget:
    """A connector under test.

    Attributes:
        command: the program and its arguments (stdio targets).
        url: ``tcp://host:port``, ``ws://...`` or ``wss://...`` (network targets).
        env: variables merged over this process's environment for a spawned connector.
        cwd: the working directory of a spawned connector.
    """

    command: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] | None = field(default=None, compare=False)
    cwd: str | None = None

    def __post_init__(self) -> None:
        if bool(self.command) == (self.url is not None):
            raise ValueError("a target is either a command or a URL")
        if self.url is not None:
            scheme = urlsplit(self.url).scheme
            if scheme not in ("tcp", "ws", "wss"):
                raise ValueError(
                    f"unsupported target URL {self.url!r}: use tcp://, ws:// or wss://"
                )

    @classmethod
    def of(cls, target: ServerTarget | Sequence[str] | str) -> ServerTarget:
        """Accept a target, a command list, or a URL string.

        Raises:
            ValueError: an empty command, or a string that is not a supported URL.
        """
        if isinstance(target, ServerTarget):
            return target
        if isinstance(target, str):
            return cls(url=target)
        command = tuple(target)
        if not command:
            raise ValueError("the command of a target cannot be empty")
        return cls(command=command)

    @property
    def kind(self) -> TargetKind:
        """``stdio``, ``tcp`` or ``ws`` (``wss`` included)."""
        if self.url is None:
            return "stdio"
        return "tcp" if urlsplit(self.url).scheme == "tcp" else "ws"

    def describe(self) -> str:
        """The target as a person would write it."""
        if self.url is not None:
            return self.url
        return " ".join(self.command)


async def _stop(link: StdioLink) -> None:
    await link.close_stdin()
    for escalate in (link.terminate, link.kill):
        with anyio.move_on_after(_SHUTDOWN_GRACE):
            await link.wait()
            return
        escalate()
    await link.wait()


@asynccontextmanager
async def _spawn_watching_stderr(
    target: ServerTarget, name: str, on_stderr: StderrLine
) -> AsyncIterator[Link]:
    env = {**os.environ, **target.env} if target.env is not None else None
    process = await anyio.open_process(
        list(target.command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=target.cwd,
    )
    link = StdioLink(process, name=name, max_frame=DEFAULT_MAX_FRAME)
    try:
        assert process.stderr is not None
        # Not the transport's spawn_stdio: that one logs stderr, and wraps an exception from
        # the body in an ExceptionGroup; this one hands each line to the check's transcript.
        async with watching_stderr(process.stderr, on_stderr, stop=lambda: _stop(link)):
            yield link
    finally:
        with anyio.CancelScope(shield=True):
            await link.aclose()
            await process.aclose()


@asynccontextmanager
async def open_link(
    target: ServerTarget, *, name: str = "target", on_stderr: StderrLine | None = None
) -> AsyncIterator[Link]:
    """Open a fresh connection to ``target`` (a new process for a command).

    Args:
        target: the connector under test.
        name: names the connection in link descriptions and logs.
        on_stderr: for a command, called with each line it writes to stderr (``None``: the
            transport logs them instead).

    Raises:
        LinkClosedError: a network target could not be reached.
        OSError: a command could not be started.
    """
    if target.url is None and on_stderr is not None:
        async with _spawn_watching_stderr(target, name, on_stderr) as watched:
            yield watched
        return
    if target.url is None:
        async with spawn_stdio(
            target.command,
            env=target.env,
            cwd=target.cwd,
            name=name,
            shutdown_grace=_SHUTDOWN_GRACE,
        ) as stdio:
            yield stdio
        return
    if target.kind == "tcp":
        parts = urlsplit(target.url)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"a tcp target needs a host and a port: {target.url!r}")
        async with dial_tcp(parts.hostname, parts.port) as tcp:
            yield tcp
        return
    async with dial_websocket(target.url) as ws:
        yield ws
