"""Sockets and uvicorn for Switchboard's listeners.

:func:`bind_listener` binds before serving, so a port in use is a ``ConfigError`` at start and
not a traceback from inside uvicorn; :func:`serve_on` runs a uvicorn server on a bound socket
until cancelled (or until told to stop, after the app drained what it serves), without
uvicorn's own signal handlers (``switchboard run`` owns SIGINT and SIGTERM).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager

import anyio
import uvicorn

from switchboard.config import ConfigError
from switchboard.web.hosts import bare_host

__all__ = ["QuietServer", "bind_listener", "serve_on"]


def bind_listener(host: str, port: int, where: str, *, backlog: int = 128) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: any free port).

    Raises:
        ConfigError: naming ``where`` (the config keys), when the address cannot be bound (in
            use, not local, unknown name).
    """
    try:
        infos = socket.getaddrinfo(
            bare_host(host) or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot listen there: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"{where}: cannot listen there: {exc}; choose another port or address"
        ) from exc
    return sock


class QuietServer(uvicorn.Server):
    """uvicorn without its own SIGINT/SIGTERM handlers: the caller owns signals (``switchboard
    run`` cancels the host on them), and uvicorn would otherwise re-raise them as it stops."""

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def serve_on(
    config: uvicorn.Config,
    sock: socket.socket,
    *,
    stop: anyio.Event | None = None,
    drain: Callable[[], Awaitable[None]] | None = None,
) -> bool:
    """Serve ``config``'s app on the bound ``sock`` until cancelled, or until ``stop`` is set,
    then stop uvicorn gracefully (within ``config.timeout_graceful_shutdown``).

    When ``stop`` is set, ``drain`` runs first (the app answers what it is serving and ends its
    streams), so that uvicorn then finds nothing open and stops at once: its grace runs out
    only for a request still open, which it then cancels (an ERROR line and a traceback).

    Returns (when uvicorn stopped by itself or after ``stop``, not cancelled): whether it had
    started; a server that stops without starting failed at start-up, and uvicorn has logged
    why.

    uvicorn runs shielded: a cancelled ``serve`` would leave an app's lifespan (the MCP SDK's
    session managers) half torn down, so cancellation sets ``should_exit`` instead and uvicorn
    stops within a tick.
    """
    server = QuietServer(config)

    async def run(done: Callable[[], None]) -> None:
        with anyio.CancelScope(shield=True):
            await server.serve(sockets=[sock])
        done()

    async with anyio.create_task_group() as group:
        group.start_soon(run, group.cancel_scope.cancel)
        try:
            if stop is not None:
                await stop.wait()
                if drain is not None:
                    await drain()
                server.should_exit = True
            await anyio.sleep_forever()  # until uvicorn stops (run cancels the group)
        finally:
            server.should_exit = True
    return bool(server.started)
