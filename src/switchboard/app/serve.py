"""``switchboard run``: the host with its agent-facing MCP servers on the configured transport.

Over HTTP it plans the endpoint and binds its socket before any connector starts (a refused
token file or a port in use stops it at once), then serves every agent of the roster, each
with its own MCP server; over stdio the parent process is the one agent. The status surface is
served beside them or on its own listener. :func:`serve_until_signalled` runs it under SIGINT
and SIGTERM handlers that stop it in order: no more work taken, the agents' requests in flight
answered and their streams ended, the connectors' requests taken answered, the store's queue
committed, every connector stopped (see :func:`serve`). Why: a signal must lose nothing that
was already taken, and leave uvicorn nothing to cancel.

It knows nothing of what the tools do.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import structlog
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from switchboard.agents.http import (
    AgentServers,
    EndpointPlan,
    bind_endpoint,
    plan_endpoint,
    serve_endpoint,
)
from switchboard.agents.roster.roster import token_digest
from switchboard.app.board import Switchboard, build_server
from switchboard.config import Config, ConfigError
from switchboard.runtime.gcpolicy import apply_server_policy
from switchboard.status.http import (
    StatusPlan,
    beside,
    bind_status,
    plan_status,
    serve_status,
    status_app,
    status_hosts,
)

__all__ = ["agent_servers", "pick_stdio_agent", "serve", "serve_until_signalled"]

log = structlog.get_logger(__name__)

_UVICORN_LEVELS = frozenset({"critical", "error", "warning", "info", "debug"})

STOP_DEADLINE = 10.0
"""Seconds after a signal by which whatever has not stopped in order is cancelled."""


def agent_servers(board: Switchboard) -> AgentServers:
    """Every agent of ``board``'s roster for the HTTP endpoint: proven by its token, with its
    own MCP server, its sessions counted in ``board.attachments``."""
    return AgentServers(
        identities=board.roster,
        build=lambda name: build_server(board, agent=name),
        sessions=board.attachments,
    )


def pick_stdio_agent(config: Config, agent: str | None) -> str:
    """The name of the agent a stdio session is: ``agent`` (``@name`` or ``name``), else the
    agent that owns default delivery.

    Raises:
        ConfigError: ``agent`` is no configured agent, or the transport is not stdio.
    """
    entries = config.roster()
    if agent is None:
        defaults = [e for e in entries if "default_delivery" in e.roles]
        return (defaults or list(entries))[0].name
    if config.agent.transport != "stdio":
        raise ConfigError(
            f"--agent {agent} picks the agent of a stdio session, but [agent] transport is "
            f"{config.agent.transport!r}: over HTTP each request's bearer token says which "
            "agent it is"
        )
    name = agent[1:] if agent.startswith("@") else agent
    for entry in entries:
        if entry.name == name:
            return name
    handles = ", ".join(e.handle for e in entries)
    raise ConfigError(
        f"--agent {agent}: no such agent; the configured agents are {handles} "
        "(pass one of them, or leave --agent out for the default-delivery agent)"
    )


def _prove_tokens(board: Switchboard, tokens: Mapping[str, str]) -> None:
    """Give the roster the digests of tokens it could not read itself (``token_file``)."""
    for name, token in tokens.items():
        identity = board.roster.get(name)
        if identity is not None and identity.token_digest is None:
            # In place (other parts may hold the identity), then re-added to index the digest.
            identity.token_digest = token_digest(token)
            board.roster.add(identity)


def _touching(board: Switchboard, name: str) -> ServerMiddleware[Any]:
    async def touch(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        board.attachments.touch(name)
        return await call_next(ctx)

    return touch


class _StdinLines:
    """The lines of stdin (a pipe, socket or terminal), read on the event loop.

    The SDK reads stdin in a worker thread, and a cancelled read waits for that thread, so a
    signal could not stop the host until the agent wrote or closed stdin. Here a read waits
    for readiness and returns at once when cancelled.
    """

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._eof = False

    @staticmethod
    def pollable(fd: int = 0) -> bool:
        """Whether ``fd`` can be waited on (regular files and ``/dev/null`` cannot)."""
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return False
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        while (end := self._buffer.find(b"\n")) < 0 and not self._eof:
            await anyio.wait_readable(self._fd)
            chunk = os.read(self._fd, 1 << 16)
            self._eof = not chunk
            self._buffer += chunk
        if not self._buffer:
            raise StopAsyncIteration
        end = len(self._buffer) if end < 0 else end + 1
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        return line.decode("utf-8", "replace")


async def _run_stdio(server: MCPServer[Any]) -> None:
    if not _StdinLines.pollable():
        await server.run_stdio_async()
        return
    lowlevel = server._lowlevel_server
    stdin = cast("anyio.AsyncFile[str]", _StdinLines())
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def _serve_stdio(board: Switchboard, server: MCPServer[Any], name: str) -> None:
    server.middleware.append(_touching(board, name))
    board.attachments.attach(name)
    try:
        await _run_stdio(server)
    finally:
        board.attachments.detach(name)


async def serve(
    config: Config,
    *,
    on_listening: Callable[[str], object] | None = None,
    agent: str | None = None,
    stopping: anyio.Event | None = None,
) -> None:
    """Run connectors and the MCP servers until the agent leaves (stdio), ``stopping`` is set
    (then the host stops in order, see below), or we are cancelled.

    For ``transport = "http"`` it plans the endpoint (reading every agent's token) and binds its
    socket before any connector starts (so a refused token file or a port in use stops it at once),
    logs the endpoint's URL, auth mode and the agents' handles (``agent_endpoint``), then serves
    every agent of the roster through :mod:`switchboard.agents.http`: the bearer token says which
    agent a request is, and each agent gets its own MCP server (:func:`agent_servers`). Tokens read
    from a ``token_file`` are handed to the roster (as digests) once the host is built.

    For ``stdio`` it serves MCP on stdin/stdout without authentication: the parent process is the
    agent, the one ``--agent @name`` picks (by default the agent that owns default delivery). That
    session is attached for as long as stdin is open. Stdin (a pipe, socket or terminal) is read on
    the event loop, so a signal stops the session at once. It knows nothing of what the tools do.

    :func:`serve_until_signalled` is what the command line runs: :func:`serve` under SIGINT and
    SIGTERM handlers that stop it. A signal sets ``stopping``, and the host stops in order:

    1. it takes no more work (:meth:`Switchboard.begin_stopping
       <switchboard.app.board.Switchboard.begin_stopping>`): every inbox long poll answers at
       once (empty), no connector is restarted, and a connector's new requests are refused
       ``-32603`` with ``data.reason = "shutting-down"``;
    2. the agents' endpoint refuses new requests (503), lets the ones in flight be answered, and
       ends every agent's MCP sessions with their streams (as do the status surface's event
       streams), so uvicorn stops with nothing left to cancel;
    3. the connectors' requests already taken are answered (a batch waiting for its commit), the
       store commits what it queued, and every connector stops (a stdio child's stdin is closed,
       then SIGTERM, then SIGKILL); then one ``shutdown_complete`` line is logged.

    Should that take longer than :data:`STOP_DEADLINE`, what still runs is cancelled.

    Args:
        config: the whole configuration; ``config.agent`` says which transport.
        on_listening: called with the endpoint's URL once the HTTP socket listens (with the
            port actually bound, when ``port = 0``).
        agent: which agent a stdio session is (``--agent @name``); None: the default-delivery
            agent.
        stopping: set to stop; None: only cancellation stops the host.

    Raises:
        ConfigError: the HTTP endpoint cannot be set up (a token file, its address), or
            ``agent`` names no configured agent.
    """
    handles = [entry.handle for entry in config.roster()]
    status_plan = plan_status(config)
    status_sock = None if status_plan.own is None else bind_status(*status_plan.own)
    try:
        await _serve(config, status_plan, status_sock, on_listening, agent, handles, stopping)
    finally:
        if status_sock is not None:
            status_sock.close()


@asynccontextmanager
async def _stopping_in_order(
    board: Switchboard, stopping: anyio.Event | None
) -> AsyncIterator[anyio.Event]:
    """While inside: once ``stopping`` is set, the board takes no more work; then the event
    yielded is set, for the listeners to drain (never set when ``stopping`` is None)."""
    drained = anyio.Event()
    if stopping is None:
        yield drained
        return

    async def stop_when_asked() -> None:
        await stopping.wait()
        board.begin_stopping()
        drained.set()

    async with anyio.create_task_group() as group:
        group.start_soon(stop_when_asked)
        try:
            yield drained
        finally:
            group.cancel_scope.cancel()


def _status_beside(
    board: Switchboard, status: StatusPlan, plan: EndpointPlan, until: anyio.Event
) -> Any:
    """The wrap that mounts the status surface on the agents' listener."""
    closed = status.closed_beside(agents_need_tokens=plan.auth == "bearer")
    if closed is not None:
        log.info("status_endpoint_closed", why=closed)
    app = status_app(
        board.status, token=status.token, hosts=plan.allowed_hosts, closed=closed, until=until
    )
    return beside(app)


@asynccontextmanager
async def _own_status(
    board: Switchboard, status: StatusPlan, sock: socket.socket | None, until: anyio.Event
) -> AsyncIterator[None]:
    """Serve the status surface on its own listener (``[status] port``) while inside; its
    event streams end once ``until`` is set."""
    if sock is None or status.own is None:
        yield
        return
    host = status.own[0]
    app = status_app(board.status, token=status.token, hosts=status_hosts(host), until=until)
    bare = host[1:-1] if host.startswith("[") else host
    shown = f"[{bare}]" if ":" in bare else bare
    log.info(
        "status_endpoint",
        url=f"http://{shown}:{sock.getsockname()[1]}/status",
        auth="bearer" if status.token else "none",
    )
    async with anyio.create_task_group() as group:
        group.start_soon(serve_status, app, sock)
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def _serve(
    config: Config,
    status_plan: StatusPlan,
    status_sock: socket.socket | None,
    on_listening: Callable[[str], object] | None,
    agent: str | None,
    handles: list[str],
    stopping: anyio.Event | None,
) -> None:
    endpoint = config.agent
    if endpoint.transport == "http":
        if agent is not None:
            pick_stdio_agent(config, agent)  # refuses --agent over HTTP
        plan = plan_endpoint(endpoint, config.agents or None)
        sock = bind_endpoint(plan)
        try:
            url = plan.url(sock.getsockname()[1])
            log.info("agent_endpoint", url=url, auth=plan.auth, agents=handles)
            if plan.auth == "none":
                log.warning(
                    "agent_endpoint_unauthenticated",
                    url=url,
                    why="no [agent] token or token_file: any local process can act as the agent",
                    next='set token = "${SWITCHBOARD_AGENT_TOKEN}" in [agent]',
                )
            if on_listening is not None:
                on_listening(url)
            level = config.log_level.lower()
            async with (
                Switchboard.started(config) as board,
                _stopping_in_order(board, stopping) as drained,
                _own_status(board, status_plan, status_sock, drained),
            ):
                _prove_tokens(board, plan.tokens)
                log.info("status_endpoint", url=url.rsplit("/", 1)[0] + "/status")
                await serve_endpoint(
                    agent_servers(board),
                    plan,
                    sock,
                    log_level=level if level in _UVICORN_LEVELS else "info",
                    wrap=_status_beside(board, status_plan, plan, drained),
                    stop=drained,
                )
        finally:
            sock.close()
        return
    name = pick_stdio_agent(config, agent)
    async with (
        Switchboard.started(config) as board,
        _stopping_in_order(board, stopping) as drained,
        _own_status(board, status_plan, status_sock, drained),
        anyio.create_task_group() as group,
    ):
        server = build_server(board, agent=name)
        if endpoint.transport == "stdio":
            log.info("agent_endpoint", transport="stdio", auth="none", agent=f"@{name}")
            # Stopping ends the stdio session: the agent's stream ends cleanly.
            group.start_soon(_cancel_when_set, drained, group.cancel_scope)
            await _serve_stdio(board, server, name)
        else:
            await drained.wait()
        group.cancel_scope.cancel()


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def serve_until_signalled(config: Config, *, agent: str | None = None) -> str | None:
    """Run :func:`serve` until it ends or SIGINT or SIGTERM arrives, then stop it in order
    (see :func:`serve`; what has not stopped after :data:`STOP_DEADLINE` seconds is
    cancelled). A second signal is ignored.

    Applies the collector's server policy first (:mod:`switchboard.runtime.gcpolicy`).

    Logs one ``shutdown_complete`` line (with the signal's name, or the reason the host ended
    by itself).

    Returns:
        The name of the signal that stopped the host (``"SIGTERM"``), or None if it ended by
        itself (the stdio agent left).

    Raises:
        ConfigError: as :func:`serve`.
    """
    received: list[str] = []
    stopping = anyio.Event()
    apply_server_policy()  # a long-running server's collector: freeze start-up, fewer runs
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        try:
            async with anyio.create_task_group() as group:

                async def overdue() -> None:
                    await anyio.sleep(STOP_DEADLINE)
                    log.warning(
                        "shutdown_overdue",
                        seconds=STOP_DEADLINE,
                        action="what has not stopped is cancelled",
                    )
                    group.cancel_scope.cancel()

                async def watch() -> None:
                    async for signum in signals:
                        if received:
                            continue  # a second signal is ignored; SIGKILL still works
                        received.append(signal.Signals(signum).name)
                        log.info("shutdown_started", signal=received[0])
                        stopping.set()
                        group.start_soon(overdue)

                group.start_soon(watch)
                await serve(config, agent=agent, stopping=stopping)
                group.cancel_scope.cancel()
        except BaseExceptionGroup as failed:
            # The host's own error (a ConfigError, say) reaches the caller as itself.
            if len(failed.exceptions) == 1:
                raise failed.exceptions[0] from None
            raise
    if received:
        log.info("shutdown_complete", signal=received[0])
        return received[0]
    log.info("shutdown_complete", signal=None, reason="agent_left")
    return None
