"""The host side of stdio: spawn a connector and talk NDJSON over its stdin and stdout.

:func:`spawn_stdio` starts the child with ``anyio.open_process``, yields a :class:`StdioLink`
over its pipes, forwards what the child writes to stderr to structlog (``connector_stderr``:
a burst of lines or a traceback is one event, see ``ratelog.LineJoiner``; past a volume budget
lines are counted in ``connector_stderr_suppressed`` instead), and on exit stops the child:
close stdin, wait a grace period, terminate, wait again, kill.

This module knows processes and pipes; framing is ``NdjsonDecoder``'s (through
``NdjsonStreamLink``), and it knows nothing of JSON-RPC. The connector side of stdio (a link
over this process's own stdin and stdout) is in ``stdio_server``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import fcntl
import os
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import anyio
import structlog
from anyio.abc import ByteReceiveStream, Process

from switchboard.runtime.ratelog import LineJoiner, RateLimitedLog, VolumeBudget
from switchboard.transport.errors import TransportError
from switchboard.transport.framing import DEFAULT_MAX_FRAME, FrameTooLarge, NdjsonDecoder
from switchboard.transport.stream_link import (
    NdjsonStreamLink,
    asyncio_read_transport,
    asyncio_write_transport,
)

__all__ = ["SpawnError", "StdioLink", "spawn_stdio"]

_log = structlog.get_logger(__name__)

_STDERR_MAX_LINE = 64 * 1024

STDERR_JOIN_WINDOW = 0.05
"""Seconds within which a connector's next stderr line joins the same ``connector_stderr``."""
STDERR_MAX_LINES = 200
"""The most lines in one ``connector_stderr`` event."""
STDERR_MAX_BYTES = 16 * 1024
"""The most bytes in one ``connector_stderr`` event."""
STDERR_BURST_BYTES = 64 * 1024
"""Bytes of a connector's stderr logged in a burst; beyond it, lines are counted instead."""
STDERR_BYTES_PER_SECOND = 8 * 1024
"""Bytes of a connector's stderr logged per second after a burst."""
STDERR_TAIL_LINES = 6
"""The last lines of a connector's stderr kept for the warning when it dies (``stderr_tail``)."""
_STDERR_TAIL_LINE_CHARS = 400
PIPE_BYTES = 1 << 20
"""Bytes asked of the kernel for each of a connector's stdin and stdout pipes (Linux's default
is 64 KiB, and 1 MiB is what an unprivileged process may ask). A large answer (the results of
100,000 channels registered at once are about 4 MB) then leaves in a few writes, each one a
turn of the event loop, instead of sixty; and a connector with many requests in flight (16
batches of 50 messages are about 190 KB) writes them in one go and the host reads them in one
read, where a 64 KiB pipe took three of each."""
GROWN_PIPES_MAX = 16
"""At most this many connector pipes are grown at once (two per connector: eight connectors).
The kernel counts grown pipes against the user's pipe quota (``fs.pipe-user-pages-soft``,
64 MiB by default); a user at the quota gets one-page pipes everywhere, so Switchboard keeps
to a quarter of the default."""
_grown = [0]  # connector pipes grown and still open, in this process
# How long the stderr forwarder may keep draining after the child is gone (a grandchild
# that inherited stderr could hold it open forever).
_STDERR_DRAIN_GRACE = 0.5


class SpawnError(TransportError):
    """The child could not be started; the message names the program or folder at fault.

    ``permanent`` is true when trying again cannot help until someone changes the machine or
    the config: the program or the working folder is missing, not executable, or not a program
    (``ENOENT``, ``ENOTDIR``, ``EACCES``, ``EPERM``, ``ENOEXEC``, ``EISDIR``). A lack of
    processes or memory (``EAGAIN``, ``ENOMEM``) is transient.
    """

    _PERMANENT = frozenset(
        {errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.ENOEXEC, errno.EISDIR}
    )

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent

    @classmethod
    def of(cls, exc: OSError, argv: Sequence[str], cwd: str | None) -> SpawnError:
        """The spawn error for ``exc``, raised by starting ``argv`` in ``cwd``."""
        program = argv[0] if argv else "(no program)"
        culprit = exc.filename if exc.filename is not None else program
        if cwd is not None and str(culprit) == str(cwd):
            what = f"the working folder {cwd}"
        else:
            what = f"the program {culprit}"
        reason = exc.strerror or type(exc).__name__
        return cls(
            f"cannot start {program}: {what}: {reason}", permanent=exc.errno in cls._PERMANENT
        )


class StdioLink:
    """A link over a child process's stdin and stdout, plus control of the process.

    Built by :func:`spawn_stdio`; ``aclose`` closes the pipes, and the context manager that
    yielded the link stops the process.
    """

    def __init__(self, process: Process, *, name: str, max_frame: int) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError("the process needs piped stdin and stdout")
        self._process = process
        self._stdin = process.stdin
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stream = NdjsonStreamLink(
            process.stdout,
            process.stdin,
            description=f"stdio:{name}[pid {process.pid}]",
            max_frame=max_frame,
        )

    @property
    def description(self) -> str:
        """``stdio:<name>[pid <pid>]``."""
        return self._stream.description

    def __repr__(self) -> str:
        return f"<StdioLink {self.description}>"

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    @property
    def stderr_tail(self) -> str:
        """The last few lines the child wrote to stderr (even those the volume budget kept
        out of the log), joined by newlines: what a connector that died last said, usually
        why."""
        return "\n".join(self._stderr_tail)

    @property
    def returncode(self) -> int | None:
        """The child's exit status, or ``None`` while it runs."""
        return self._process.returncode

    async def wait(self) -> int:
        """Wait for the child to exit and return its exit status."""
        return await self._process.wait()

    def terminate(self) -> None:
        """Ask the child to stop (SIGTERM); a no-op if it already exited."""
        with contextlib.suppress(ProcessLookupError):
            self._process.terminate()

    def kill(self) -> None:
        """Stop the child now (SIGKILL); a no-op if it already exited."""
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    async def send(self, frame: bytes) -> None:
        """Write one frame to the child's stdin."""
        await self._stream.send(frame)

    async def send_many(self, frames: Sequence[bytes]) -> None:
        """Write several frames to the child's stdin in one write."""
        await self._stream.send_many(frames)

    @property
    def writes_at_once(self) -> bool:
        """Whether :meth:`try_write` can ever write (see :class:`NdjsonStreamLink`)."""
        return self._stream.writes_at_once

    def try_write(self, frames: Sequence[bytes]) -> bool:
        """Write frames to the child's stdin now if the pipe takes them without waiting
        (see :meth:`NdjsonStreamLink.try_write`)."""
        return self._stream.try_write(frames)

    async def written(self) -> None:
        """Return once what was written to the child's stdin is passed to the OS (see
        :meth:`NdjsonStreamLink.written`)."""
        await self._stream.written()

    async def receive(self) -> bytes:
        """Return the next frame from the child's stdout."""
        return await self._stream.receive()

    async def close_stdin(self) -> None:
        """Close the child's stdin: a well-behaved connector exits on this EOF."""
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self._stdin.aclose()

    async def aclose(self) -> None:
        """Close both pipes (the child sees EOF on stdin); the process is not waited for."""
        await self._stream.aclose()


async def _stop(link: StdioLink, grace: float) -> None:
    """Close stdin, then escalate to SIGTERM and SIGKILL, waiting ``grace`` between."""
    await link.close_stdin()
    for escalate in (link.terminate, link.kill):
        with anyio.move_on_after(grace):
            await link.wait()
            return
        escalate()
    await link.wait()


class _StderrLog:
    """One child's stderr as log events: lines joined into blocks, within a volume budget."""

    def __init__(self, name: str, pid: int, tail: collections.deque[str]) -> None:
        self._tail = tail
        self.joiner = LineJoiner(
            window=STDERR_JOIN_WINDOW, max_lines=STDERR_MAX_LINES, max_bytes=STDERR_MAX_BYTES
        )
        self._budget = VolumeBudget(burst=STDERR_BURST_BYTES, per_second=STDERR_BYTES_PER_SECOND)
        self._log = _log.bind(name=name, pid=pid)
        self._suppressed = RateLimitedLog(self._log)

    def lines(self, lines: list[bytes | FrameTooLarge]) -> None:
        now = anyio.current_time()
        for line in lines:
            if isinstance(line, FrameTooLarge):
                text = f"<a stderr line longer than {line.limit} bytes was dropped>"
            else:
                text = line.decode("utf-8", "replace")
            if text.strip():
                self._tail.append(text[:_STDERR_TAIL_LINE_CHARS])
            for block in self.joiner.add(text, now):
                self._emit(block)

    def due(self) -> None:
        block = self.joiner.flush()
        if block is not None:
            self._emit(block)

    def close(self) -> None:
        self.due()
        self._suppressed.flush()

    def _emit(self, block: str) -> None:
        count = block.count("\n") + 1
        if self._budget.take(len(block)):
            fields = {"lines": count} if count > 1 else {}
            self._log.info("connector_stderr", line=block, **fields)
        else:
            self._suppressed.note(
                "connector_stderr_suppressed", "connector_stderr_suppressed", count=count
            )


async def _forward_stderr(
    stream: ByteReceiveStream, name: str, pid: int, done: anyio.Event, tail: collections.deque[str]
) -> None:
    decoder = NdjsonDecoder(_STDERR_MAX_LINE)
    out = _StderrLog(name, pid, tail)
    try:
        with contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ):
            while True:
                deadline = out.joiner.deadline()
                chunk: bytes | None = None
                if deadline is None:
                    chunk = await stream.receive()
                else:
                    with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                        chunk = await stream.receive()
                if chunk is None:
                    out.due()  # nothing joined the pending block within its window
                else:
                    out.lines(decoder.feed(chunk))
        out.lines(decoder.finish())
    finally:
        out.close()
        done.set()


@asynccontextmanager
async def spawn_stdio(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    name: str = "connector",
    max_frame: int = DEFAULT_MAX_FRAME,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[StdioLink]:
    """Spawn ``argv`` and yield a link over its stdin and stdout.

    Args:
        argv: the program and its arguments.
        env: variables merged over this process's environment (``None``: inherit it).
        cwd: the child's working directory.
        name: names the connector in the link description and in stderr log lines.
        max_frame: the largest frame accepted from the child's stdout, in bytes.
        shutdown_grace: seconds to wait after closing stdin, and again after SIGTERM.

    Yields:
        The running child's :class:`StdioLink`.
    """
    merged = {**os.environ, **env} if env is not None else None
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=merged,
            cwd=cwd,
        )
    except OSError as exc:
        raise SpawnError.of(exc, argv, cwd) from exc
    grown = _grow_pipe(asyncio_write_transport(process.stdin)) + _grow_pipe(
        asyncio_read_transport(process.stdout)
    )
    link = StdioLink(process, name=name, max_frame=max_frame)
    _log.debug("process_spawned", name=name, pid=process.pid, argv=list(argv))
    stderr_done = anyio.Event()
    # The task group is entered by hand so that an exception from the body of the ``async
    # with`` reaches the caller as itself, not wrapped in an ExceptionGroup.
    forwarder = anyio.create_task_group()
    await forwarder.__aenter__()
    try:
        assert process.stderr is not None
        forwarder.start_soon(
            _forward_stderr, process.stderr, name, process.pid, stderr_done, link._stderr_tail
        )
        try:
            yield link
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(link, shutdown_grace)
                with anyio.move_on_after(_STDERR_DRAIN_GRACE):
                    await stderr_done.wait()
    finally:
        forwarder.cancel_scope.cancel()
        await forwarder.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            await link.aclose()
            await process.aclose()
        _grown[0] -= grown
        _log.debug("process_exited", name=name, pid=process.pid, code=process.returncode)


def _grow_pipe(transport: asyncio.BaseTransport | None) -> int:
    """Ask for a :data:`PIPE_BYTES` pipe under ``transport``; best effort, never an error.

    Both of a connector's pipes are grown: answers and publishes from the host can be large,
    and so can a burst of requests from the connector. The file descriptor is the asyncio
    pipe transport's public ``get_extra_info("pipe")``. Where the platform,
    :data:`GROWN_PIPES_MAX` or the user's pipe quota says no, the pipe keeps its size.
    Returns 1 if it was grown, else 0 (the caller gives the places back).
    """
    if _grown[0] >= GROWN_PIPES_MAX:
        return 0
    pipe = transport.get_extra_info("pipe") if transport is not None else None
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if pipe is None or set_size is None:
        return 0
    try:
        fcntl.fcntl(pipe.fileno(), set_size, PIPE_BYTES)
    except (OSError, ValueError):
        return 0
    _grown[0] += 1
    return 1
