"""The agent's streamable HTTP endpoint: its bearer token, its Host/Origin check, its socket.

:func:`plan_endpoint` turns ``[agent]`` into an :class:`EndpointPlan` before anything is bound:
it reads a ``token_file`` (refusing a missing, empty or group/other-accessible one), and derives
the Host and Origin values the endpoint accepts from the bind address when ``allowed_hosts`` is
not given. :func:`endpoint_app` wraps the MCP SDK's streamable HTTP app so that every request
passes, in order:

1. the Host/Origin check (a DNS-rebinding defence, on for every bind address): a Host header
   not in the allowed hosts is refused with 421, an Origin not in the allowed origins with 403
   (a request without Origin, which no browser sends cross-site, passes);
2. the bearer check, through the SDK's auth hooks (its ``BearerAuthBackend`` with a
   ``TokenVerifier`` that compares in constant time, and its ``AuthContextMiddleware``, so the
   SDK binds each MCP session to the credential that opened it): no token or a wrong one is
   refused with 401 and ``WWW-Authenticate: Bearer``.

:func:`serve_endpoint` listens on a socket bound by :func:`bind_endpoint` and runs the app with
uvicorn until cancelled. Refusals are logged rate-limited (first one in full, then counts).

It deliberately knows nothing of the tools or the host: it is given a built ``MCPServer``. The
stdio transport is not here and has no authentication: the parent process is the agent.
"""

from __future__ import annotations

import hmac
import os
import socket
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import structlog
import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.config import AgentConfig, ConfigError, token_problem
from switchboard.ratelog import RateLimitedLog

__all__ = [
    "MCP_PATH",
    "AgentTokenVerifier",
    "AuthMode",
    "EndpointPlan",
    "bind_endpoint",
    "endpoint_app",
    "plan_endpoint",
    "serve_endpoint",
]

log = structlog.get_logger(__name__)

#: The path of the streamable HTTP endpoint.
MCP_PATH: Final = "/mcp"

#: Seconds uvicorn waits for open requests (a long poll, an SSE stream) when it stops.
_GRACEFUL_SHUTDOWN: Final = 5

AuthMode = Literal["bearer", "none"]


@dataclass(frozen=True, slots=True)
class EndpointPlan:
    """What the HTTP endpoint will do, decided before it is bound."""

    agent: str
    host: str
    port: int
    token: str | None = field(repr=False)
    token_source: str
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @property
    def auth(self) -> AuthMode:
        return "none" if self.token is None else "bearer"

    def url(self, port: int | None = None) -> str:
        """The endpoint's URL (with :data:`MCP_PATH`), on ``port`` or the configured one."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}{MCP_PATH}"


def _read_token_file(path_text: str) -> str:
    path = Path(path_text)
    where = f"[agent] token_file = {path_text!r}"
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise ConfigError(
            f"{where}: the file does not exist (relative paths are from the directory "
            f"switchboard runs in, {Path.cwd()}); write the token into it"
        ) from exc
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


def _bare(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _default_hosts(bare: str) -> tuple[str, ...]:
    names = [f"[{bare}]" if ":" in bare else bare]
    if bare in ("127.0.0.1", "::1"):
        names.append("localhost")
    elif bare.lower() == "localhost":
        names += ["127.0.0.1", "[::1]"]
    return tuple(form for name in names for form in (name, f"{name}:*"))


def plan_endpoint(agent: AgentConfig) -> EndpointPlan:
    """Decide the endpoint of ``agent`` (``transport = "http"``) before anything is bound.

    Raises:
        ConfigError: the token file is missing, empty, unusable or readable by others.
    """
    if agent.token is not None:
        token: str | None = agent.token.get_secret_value()
        source = "[agent] token"
    elif agent.token_file is not None:
        token = _read_token_file(agent.token_file)
        source = f"[agent] token_file {agent.token_file}"
    else:
        token, source = None, "none"
    host = _bare(agent.host)
    hosts = tuple(agent.allowed_hosts) if agent.allowed_hosts else _default_hosts(host)
    origins = (
        tuple(agent.allowed_origins)
        if agent.allowed_origins is not None
        else tuple(f"{scheme}://{name}" for name in hosts for scheme in ("http", "https"))
    )
    return EndpointPlan(
        agent=agent.name,
        host=host,
        port=agent.port,
        token=token,
        token_source=source,
        allowed_hosts=hosts,
        allowed_origins=origins,
    )


class AgentTokenVerifier:
    """The SDK ``TokenVerifier`` of one agent: its one token, compared in constant time."""

    def __init__(self, token: str, agent: str) -> None:
        self._token = token.encode("utf-8")
        self._agent = agent

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode("utf-8"), self._token):
            return AccessToken(token=token, client_id=self._agent, scopes=[])
        return None


def _matches(value: str, allowed: Sequence[str]) -> bool:
    """Whether ``value`` is an entry of ``allowed``, or ``name:PORT`` for an entry ``name:*``."""
    for entry in allowed:
        if value == entry:
            return True
        if entry.endswith(":*"):
            stem = entry[:-1]
            if value.startswith(stem) and value[len(stem) :].isdigit():
                return True
    return False


class _Refusals:
    """The refusing half of the endpoint: Host/Origin first, then the bearer token."""

    def __init__(self, plan: EndpointPlan, app: ASGIApp) -> None:
        self._plan = plan
        self._app = app
        self._log = RateLimitedLog(log)
        self._auth_stack: ASGIApp | None = None
        if plan.token is not None:
            verifier = AgentTokenVerifier(plan.token, plan.agent)
            self._auth_stack = AuthenticationMiddleware(
                AuthContextMiddleware(self._require_bearer),
                backend=BearerAuthBackend(verifier),
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not _matches(host, self._plan.allowed_hosts):
            self._log.note(
                ("host", host), "agent_http_refused", reason="host_not_allowed", host=host
            )
            answer = PlainTextResponse(
                f"Host {host!r} is not one this Switchboard answers to; if it is yours, add it "
                "to [agent] allowed_hosts",
                status_code=421,
            )
            await answer(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and not _matches(origin, self._plan.allowed_origins):
            self._log.note(
                ("origin", origin), "agent_http_refused", reason="origin_not_allowed", origin=origin
            )
            answer = PlainTextResponse(
                f"Origin {origin!r} may not call this endpoint; if it is yours, add it to "
                "[agent] allowed_origins",
                status_code=403,
            )
            await answer(scope, receive, send)
            return
        if self._auth_stack is None:
            await self._app(scope, receive, send)
        else:
            await self._auth_stack(scope, receive, send)

    async def _require_bearer(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self._app(scope, receive, send)
            return
        given = Headers(scope=scope).get("authorization")
        if given is None:
            reason, challenge = "no_token", 'Bearer realm="switchboard"'
            text = (
                f"agent {self._plan.agent!r} needs a bearer token: send `Authorization: Bearer "
                f"<token>` with the token of {self._plan.token_source}"
            )
        else:
            reason = "wrong_token"
            challenge = (
                'Bearer realm="switchboard", error="invalid_token", '
                'error_description="not this agent\'s token"'
            )
            text = (
                f"the bearer token is not agent {self._plan.agent!r}'s: send the token of "
                f"{self._plan.token_source}"
            )
        self._log.note(reason, "agent_http_refused", reason=reason, agent=self._plan.agent)
        answer = JSONResponse(
            {"error": "invalid_token" if given else "unauthorized", "error_description": text},
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )
        await answer(scope, receive, send)


def endpoint_app(server: MCPServer[Any], plan: EndpointPlan) -> ASGIApp:
    """The ASGI app of the endpoint: ``server``'s streamable HTTP app behind its refusals."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(plan.allowed_hosts),
        allowed_origins=list(plan.allowed_origins),
    )
    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, host=plan.host
    )
    return _Refusals(plan, inner)


def bind_endpoint(plan: EndpointPlan) -> socket.socket:
    """A listening socket on the plan's host and port (port 0: any free port).

    Raises:
        ConfigError: the address cannot be bound (in use, not local, unknown name).
    """
    where = f"[agent] host = {plan.host!r}, port = {plan.port}"
    try:
        infos = socket.getaddrinfo(
            plan.host or None, plan.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot listen there: {exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"{where}: cannot listen there: {exc}; choose another port or address"
        ) from exc
    return sock


async def serve_endpoint(
    server: MCPServer[Any],
    plan: EndpointPlan,
    sock: socket.socket,
    *,
    log_level: str = "info",
) -> None:
    """Serve ``server`` on ``sock`` until cancelled, then stop uvicorn gracefully.

    Raises:
        RuntimeError: the app did not start (uvicorn has logged why).
    """
    config = uvicorn.Config(
        endpoint_app(server, plan),
        log_config=None,
        log_level=log_level.lower(),
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
    )
    uv = uvicorn.Server(config)

    async def run(done: Callable[[], None]) -> None:
        # Shielded: a cancelled serve would leave the SDK's session manager half torn down.
        # Cancellation sets should_exit instead, and uvicorn stops within a tick.
        with anyio.CancelScope(shield=True):
            await uv.serve(sockets=[sock])
        done()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run, group.cancel_scope.cancel)
            try:
                await anyio.sleep_forever()
            finally:
                uv.should_exit = True
    finally:
        sock.close()
    # Here only when uvicorn stopped by itself: a signal (it re-raises it) or a failed start.
    if not uv.started:
        raise RuntimeError("the agent's HTTP endpoint stopped at start-up; the log above says why")
