"""What Switchboard's two HTTP listeners share: the agents' endpoint and the status surface.

- **Token files.** :func:`read_token_file` reads a bearer or operator token from a file that
  must be a regular file no other user can read, holding a usable token
  (:func:`switchboard.config.token_problem`).
- **Host headers.** :func:`bare_host`, :func:`default_hosts` (the names a listener on an address
  answers to when ``allowed_hosts`` is not set) and :func:`host_allowed` (an entry, or
  ``name:PORT`` for an entry ``name:*``).
- **Sockets and uvicorn.** :func:`bind_listener` binds before serving, so a port in use is a
  :class:`~switchboard.config.ConfigError` at start and not a traceback from inside uvicorn;
  :func:`serve_on` runs a uvicorn server on a bound socket until cancelled (or until told to
  stop, after the app drained what it serves), without uvicorn's own signal handlers
  (``switchboard run`` owns SIGINT and SIGTERM).

It knows nothing of MCP, agents or the status model: :mod:`switchboard.agent_http` and
:mod:`switchboard.status_http` build their apps and call in here.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio
import uvicorn

from switchboard.config import ConfigError, token_problem

__all__ = [
    "QuietServer",
    "bare_host",
    "bind_listener",
    "default_hosts",
    "host_allowed",
    "read_token_file",
    "serve_on",
]


def read_token_file(path_text: str, where: str) -> str:
    """The token in the file ``path_text``, named ``where`` in every refusal.

    Raises:
        ConfigError: the file is missing, not a regular file, readable by other users,
            unreadable, or does not hold a usable token.
    """
    path = Path(path_text)
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise ConfigError(f"{where}: the file does not exist; write the token into it") from exc
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read it: {exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{where}: it is not a regular file")
    if os.name == "posix" and info.st_mode & 0o077:
        raise ConfigError(
            f"{where}: its mode is {stat.S_IMODE(info.st_mode):o}, so other users may read or "
            f"replace the token; run `chmod 600 {path_text}`"
        )
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it: {exc}") from exc
    problem = token_problem(token)
    if problem:
        raise ConfigError(f"{where}: the file does not hold a usable bearer token: {problem}")
    return token


def bare_host(host: str) -> str:
    """``host`` without the brackets of an IPv6 literal (``[::1]`` -> ``::1``)."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def default_hosts(bare: str) -> tuple[str, ...]:
    """The Host header values a listener bound to ``bare`` answers to without
    ``allowed_hosts``: its own name (and ``localhost`` for a loopback address, or the loopback
    addresses for ``localhost``), each with any port."""
    names = [f"[{bare}]" if ":" in bare else bare]
    if bare in ("127.0.0.1", "::1"):
        names.append("localhost")
    elif bare.lower() == "localhost":
        names += ["127.0.0.1", "[::1]"]
    return tuple(form for name in names for form in (name, f"{name}:*"))


def host_allowed(value: str, allowed: Sequence[str]) -> bool:
    """Whether ``value`` is an entry of ``allowed``, or ``name:PORT`` for an entry ``name:*``."""
    for entry in allowed:
        if value == entry:
            return True
        if entry.endswith(":*"):
            stem = entry[:-1]
            if value.startswith(stem) and value[len(stem) :].isdigit():
                return True
    return False


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
