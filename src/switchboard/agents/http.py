"""The agents' streamable HTTP endpoint: bearer tokens, Host/Origin checks, one server per agent.

:func:`plan_endpoint` turns ``[agent]`` and the configured agents into an
:class:`EndpointPlan` before anything is bound (token files read, allowed Host and Origin values
derived). :func:`endpoint_app` serves every agent on one path, :data:`MCP_PATH`: each request
passes the Host/Origin check (a DNS-rebinding defence), then the bearer check (401 unless the
token proves an agent), then goes to that agent's own MCP server and session manager, so one
agent's session id is unknown to every other. Sessions are counted per agent; an agent that
leaves the roster is refused and its server stopped. What a session costs is kept small
(docs/operations.md, "Many agents"). Told to stop, :func:`serve_endpoint` refuses new requests
(503), lets those in flight be answered and ends every session before uvicorn stops.

It knows nothing of the tools or the host: it is given :class:`AgentServers` or one built
``MCPServer``. The stdio transport is not here and has no authentication: the parent process is
the agent.
"""

from __future__ import annotations

import hmac
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Literal, Protocol

import anyio
import anyio.abc
import structlog
import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    AuthorizationContext,
    BearerAuthBackend,
)
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCResponse
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.config import AgentConfig, AgentEntry, Config
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.web import (
    bare_host,
    bind_listener,
    default_hosts,
    host_allowed,
    read_token_file,
    serve_on,
)

__all__ = [
    "MCP_PATH",
    "RETIRE_CHECK_EVERY",
    "RETIRE_GRACE",
    "STOP_GRACE",
    "AgentServers",
    "AgentTokenVerifier",
    "AuthMode",
    "EndpointPlan",
    "Identities",
    "ServedIdentity",
    "SessionHooks",
    "bind_endpoint",
    "endpoint_app",
    "plan_endpoint",
    "serve_endpoint",
]

log = structlog.get_logger(__name__)

#: The path of the streamable HTTP endpoint.
MCP_PATH: Final = "/mcp"

#: Seconds between two checks for agents that left the roster (their servers are stopped).
RETIRE_CHECK_EVERY: Final = 1.0

#: Seconds a leaving agent's server waits for its requests in flight before it is stopped.
RETIRE_GRACE: Final = 10.0

#: Seconds uvicorn waits for open requests (a long poll, an SSE stream) when it stops. Told to
#: stop (``serve_endpoint(stop=...)``), the endpoint first answers what it serves and ends its
#: sessions' streams (:meth:`_AgentApps.close`), so uvicorn finds nothing open.
_GRACEFUL_SHUTDOWN: Final = 5

#: Seconds a stopping endpoint waits for the requests in flight (a long poll answering now that
#: the host stops) before it ends the agents' sessions anyway.
STOP_GRACE: Final = 1.0

AuthMode = Literal["bearer", "none"]


@dataclass(frozen=True, slots=True)
class EndpointPlan:
    """What the HTTP endpoint will do, decided before it is bound.

    Attributes:
        agents: The configured agents' handles, in config order.
        tokens: Each configured agent's bearer token, by name (never shown in ``repr``).
        token_sources: Where each agent's token came from, by name (for refusals).
        anonymous: The one agent a request without a (proving) token is, or None: only the
            one-agent shorthand without a token.
    """

    agents: tuple[str, ...]
    host: str
    port: int
    tokens: Mapping[str, str] = field(repr=False)
    token_sources: Mapping[str, str]
    anonymous: str | None
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @property
    def auth(self) -> AuthMode:
        return "none" if self.anonymous is not None else "bearer"

    def url(self, port: int | None = None) -> str:
        """The endpoint's URL (with :data:`MCP_PATH`), on ``port`` or the configured one."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port if port is None else port}{MCP_PATH}"


def plan_endpoint(agent: AgentConfig, agents: Sequence[AgentEntry] | None = None) -> EndpointPlan:
    """Decide the endpoint (``[agent]``, ``transport = "http"``) of ``agents`` before binding.

    Args:
        agent: the ``[agent]`` table: the endpoint's address and allowed hosts and origins.
        agents: the ``[[agents]]`` entries; None: the one agent ``agent`` describes (the
            one-agent shorthand).

    Raises:
        ConfigError: a token file is missing, empty, unusable or readable by others.
    """
    shorthand = agents is None
    if agents is None:
        agents = Config.model_construct(agent=agent, agents=[]).roster()
    tokens: dict[str, str] = {}
    sources: dict[str, str] = {}
    for entry in agents:
        table = "[agent]" if shorthand else f"the [[agents]] table of {entry.handle}:"
        if entry.token is not None:
            tokens[entry.name] = entry.token.get_secret_value()
            sources[entry.name] = f"{table} token"
        elif entry.token_file is not None:
            tokens[entry.name] = read_token_file(
                entry.token_file, f"{table} token_file = {entry.token_file!r}"
            )
            sources[entry.name] = f"{table} token_file {entry.token_file}"
    anonymous = agents[0].name if len(agents) == 1 and not tokens else None
    host = bare_host(agent.host)
    hosts = tuple(agent.allowed_hosts) if agent.allowed_hosts else default_hosts(host)
    origins = (
        tuple(agent.allowed_origins)
        if agent.allowed_origins is not None
        else tuple(f"{scheme}://{name}" for name in hosts for scheme in ("http", "https"))
    )
    return EndpointPlan(
        agents=tuple(entry.handle for entry in agents),
        host=host,
        port=agent.port,
        tokens=tokens,
        token_sources=sources,
        anonymous=anonymous,
        allowed_hosts=hosts,
        allowed_origins=origins,
    )


class ServedIdentity(Protocol):
    """What the endpoint reads of an agent identity."""

    @property
    def name(self) -> str: ...

    @property
    def incarnation(self) -> int: ...


class Identities(Protocol):
    """Who the agents are now (the host's roster): by name and by the token that proves one."""

    def get(self, name: str) -> ServedIdentity | None: ...

    def by_token(self, token: str) -> ServedIdentity | None: ...


class SessionHooks(Protocol):
    """Told of each agent's sessions and requests (the host's attachments)."""

    def attach(self, name: str) -> None: ...

    def detach(self, name: str) -> None: ...

    def touch(self, name: str) -> None: ...


@dataclass(frozen=True, slots=True)
class AgentServers:
    """How the endpoint finds the agents and builds each one's MCP server.

    Attributes:
        identities: who the agents are (looked up on every request, so agents added or
            removed at run time are served or refused at once).
        build: the ``MCPServer`` of the agent with that name (called once per incarnation).
        sessions: told of each agent's sessions and requests, or None.
    """

    identities: Identities
    build: Callable[[str], MCPServer[Any]]
    sessions: SessionHooks | None = None

    @classmethod
    def single(cls, server: MCPServer[Any], plan: EndpointPlan) -> AgentServers:
        """One built ``server`` for the plan's one agent (its token, or none)."""
        names = [handle[1:] for handle in plan.agents]
        if len(names) != 1:
            raise ValueError(f"one server cannot serve {len(names)} agents")
        return cls(identities=_PlanIdentities(plan), build=lambda _name: server)


@dataclass(frozen=True, slots=True)
class _Fixed:
    name: str
    incarnation: int = 1


class _PlanIdentities:
    """The plan's configured agents, proven by the plan's tokens (no roster at hand)."""

    def __init__(self, plan: EndpointPlan) -> None:
        self._names = frozenset(handle[1:] for handle in plan.agents)
        self._tokens = {name: token.encode("utf-8") for name, token in plan.tokens.items()}

    def get(self, name: str) -> ServedIdentity | None:
        return _Fixed(name) if name in self._names else None

    def by_token(self, token: str) -> ServedIdentity | None:
        given = token.encode("utf-8")
        found = None
        for name, known in self._tokens.items():
            if hmac.compare_digest(given, known):
                found = name
        return _Fixed(found) if found is not None else None


class AgentTokenVerifier:
    """The SDK ``TokenVerifier`` of the endpoint: whom a token proves, by :class:`Identities`.

    The access token's ``client_id`` is the agent's name and its ``subject`` the agent's
    incarnation, so the SDK binds a session to one incarnation of one agent.
    """

    def __init__(self, identities: Identities) -> None:
        self._identities = identities

    async def verify_token(self, token: str) -> AccessToken | None:
        identity = self._identities.by_token(token)
        if identity is None:
            return None
        return AccessToken(
            token=token,
            client_id=identity.name,
            scopes=[],
            subject=str(identity.incarnation),
        )


#: What a session's message router is handed so that it drops the last message it routed: a
#: response to an id no request has (random, so no client's request id can be it; see
#: :meth:`_CountedSessions.release`).
_RELEASE: Final = SessionMessage(
    JSONRPCResponse(jsonrpc="2.0", id=f"switchboard-release-{uuid.uuid4().hex}", result={})
)


#: Seconds :meth:`_CountedSessions.release` waits for a session's router to take the release.
_RELEASE_WAIT: Final = 1.0


class _CountedSessions(StreamableHTTPSessionManager):
    """The SDK's session manager for one agent, telling :class:`SessionHooks` of its sessions.

    It hooks the manager's admission and discarding of a session (the SDK offers no public
    hook); it keeps its own set of live ids, because the SDK forgets them all at once when it
    stops, before the sessions' own clean-up runs.
    """

    def __init__(
        self,
        server: MCPServer[Any],
        *,
        agent: str,
        hooks: SessionHooks | None,
        security: TransportSecuritySettings,
    ) -> None:
        super().__init__(
            app=server._lowlevel_server, security_settings=security, json_response=True
        )
        self._agent = agent
        self._hooks = hooks
        self._live: set[str] = set()

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        session_id = None if transport is None else transport.mcp_session_id
        if session_id is not None and session_id not in self._live:
            self._live.add(session_id)
            if self._hooks is not None:
                self._hooks.attach(self._agent)
        return transport

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    async def release(self, session_id: str | None) -> None:
        """Let session ``session_id``'s message router drop the last message it routed.

        The SDK's router (``StreamableHTTPServerTransport.connect``) keeps the last message it
        routed in its loop variables until the next one arrives, so an idle session holds its
        last answer: after a client's ``tools/list``, about 200 KB of schema dicts. A response
        to an id no request has takes its place; the router finds no stream for it and drops it
        (it logs that at DEBUG; with an event store it would store it, and the endpoint has none).
        """
        transport = None if session_id is None else self._server_instances.get(session_id)
        stream = None if transport is None else transport._write_stream
        if stream is None or transport is None or transport.is_terminated:
            return
        # Bounded: a router held up (a full GET stream) keeps its message a while longer.
        with (
            anyio.move_on_after(_RELEASE_WAIT),
            suppress(anyio.BrokenResourceError, anyio.ClosedResourceError),
        ):
            await stream.send(_RELEASE)

    def forget_all(self) -> None:
        """Detach every session still counted (the manager stopped)."""
        for session_id in list(self._live):
            self._forget(session_id)

    def _forget(self, session_id: str) -> None:
        if session_id in self._live:
            self._live.discard(session_id)
            if self._hooks is not None:
                self._hooks.detach(self._agent)


@dataclass(slots=True)
class _Served:
    name: str
    incarnation: int
    manager: _CountedSessions
    stop: anyio.CancelScope
    #: Set once the manager stopped (its sessions and their streams ended).
    stopped: anyio.Event
    #: Requests in flight other than GET streams: a leaving server waits for them.
    busy: int = 0
    #: When the agent left (``anyio.current_time``), or None while it is served.
    leaving_since: float | None = None


class _AgentApps:
    """Each agent's server and session manager, built on its first request, stopped when the
    agent leaves the roster or is restarted (once its requests in flight are answered)."""

    def __init__(self, servers: AgentServers, security: TransportSecuritySettings) -> None:
        self._servers = servers
        self._security = security
        self._served: dict[str, _Served] = {}
        self._leaving: list[_Served] = []
        self._lock = anyio.Lock()
        self._group: anyio.abc.TaskGroup | None = None
        #: The endpoint is stopping: new requests are refused (503).
        self.closing = False
        #: Requests in flight other than GET streams, over every agent.
        self._in_flight = 0
        self._quiet = anyio.Event()

    @asynccontextmanager
    async def running(self, _app: object) -> AsyncIterator[None]:
        """The endpoint's lifespan: agents' managers run inside it and stop with it."""
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._retire_loop)
            try:
                yield
            finally:
                self._group = None
                self._served.clear()
                self._leaving.clear()
                group.cancel_scope.cancel()

    async def serve(self, name: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve one request as agent ``name``; False: ``name`` is not (or no longer) an agent."""
        served = await self._for(name)
        if served is None:
            return False
        if self._servers.sessions is not None:
            self._servers.sessions.touch(name)
        counted = scope.get("method") != "GET"
        served.busy += counted
        self._in_flight += counted
        try:
            await served.manager.handle_request(scope, receive, send)
        finally:
            served.busy -= counted
            self._in_flight -= counted
            if self.closing and not self._in_flight:
                self._quiet.set()
        if scope.get("method") == "POST":
            session_id = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
            await served.manager.release(session_id)
        return True

    async def close(self, grace: float = STOP_GRACE) -> None:
        """Stop serving: refuse new requests, wait (at most ``grace`` seconds) for the ones in
        flight to be answered, then stop every agent's server, which ends its sessions and
        their streams; return once they stopped (at most ``grace`` more)."""
        self.closing = True
        with anyio.move_on_after(grace):
            if self._in_flight:
                await self._quiet.wait()
        servers = [*self._served.values(), *self._leaving]
        for served in servers:
            served.stop.cancel()
        with anyio.move_on_after(grace):
            for served in servers:
                await served.stopped.wait()

    async def _for(self, name: str) -> _Served | None:
        identity = self._servers.identities.get(name)
        if identity is None:
            return None
        served = self._served.get(name)
        if served is not None and served.incarnation == identity.incarnation:
            return served
        async with self._lock:
            served = self._served.get(name)
            if served is not None and served.incarnation != identity.incarnation:
                self._leave(served)
                served = None
            if served is None:
                if self._group is None:
                    raise RuntimeError("the endpoint is not running")
                manager = _CountedSessions(
                    self._servers.build(name),
                    agent=name,
                    hooks=self._servers.sessions,
                    security=self._security,
                )
                stopped = anyio.Event()
                stop = await self._group.start(_run_manager, manager, stopped)
                served = _Served(name, identity.incarnation, manager, stop, stopped)
                self._served[name] = served
                log.debug("agent_server_started", agent=name, incarnation=identity.incarnation)
            return served

    def _leave(self, served: _Served) -> None:
        """Serve no new request on ``served``; stop it once its requests are answered."""
        if self._served.get(served.name) is served:
            del self._served[served.name]
        served.leaving_since = anyio.current_time()
        self._leaving.append(served)

    async def _retire_loop(self) -> None:
        while True:
            await anyio.sleep(RETIRE_CHECK_EVERY)
            for served in list(self._served.values()):
                identity = self._servers.identities.get(served.name)
                if identity is None or identity.incarnation != served.incarnation:
                    self._leave(served)
            now = anyio.current_time()
            for served in list(self._leaving):
                since = served.leaving_since if served.leaving_since is not None else now
                if served.busy and now - since < RETIRE_GRACE:
                    continue
                self._leaving.remove(served)
                served.stop.cancel()
                log.info(
                    "agent_server_stopped",
                    agent=served.name,
                    incarnation=served.incarnation,
                    unanswered=served.busy,
                )


async def _run_manager(
    manager: _CountedSessions,
    stopped: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[anyio.CancelScope] = anyio.TASK_STATUS_IGNORED,
) -> None:
    try:
        with anyio.CancelScope() as stop:
            async with manager.run():
                task_status.started(stop)
                await anyio.sleep_forever()
    finally:
        manager.forget_all()
        stopped.set()


class _Dispatch:
    """The endpoint's one route: the proven agent's session manager (an ASGI app)."""

    def __init__(self, apps: _AgentApps) -> None:
        self._apps = apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._apps.closing:
            stopping = JSONResponse(
                {
                    "error": "shutting_down",
                    "error_description": "Switchboard is stopping: nothing was done; send the "
                    "request again when it is back",
                },
                status_code=503,
                headers={"Retry-After": "5", "Connection": "close"},
            )
            await stopping(scope, receive, send)
            return
        user = scope.get("user")
        name = user.access_token.client_id if isinstance(user, AuthenticatedUser) else None
        if name is None:
            name = scope.get("switchboard.anonymous")
        if not isinstance(name, str) or not await self._apps.serve(name, scope, receive, send):
            answer = JSONResponse(
                {"error": "invalid_token", "error_description": "this agent is no longer served"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="switchboard", error="invalid_token"'},
            )
            await answer(scope, receive, send)


class _Refusals:
    """The refusing half of the endpoint: Host/Origin first, then the bearer token."""

    def __init__(self, plan: EndpointPlan, identities: Identities, app: ASGIApp) -> None:
        self._plan = plan
        self._app = app
        self._log = RateLimitedLog(log)
        self._auth_stack: ASGIApp = AuthenticationMiddleware(
            AuthContextMiddleware(self._require_bearer),
            backend=BearerAuthBackend(AgentTokenVerifier(identities)),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host_allowed(host, self._plan.allowed_hosts):
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
        if origin is not None and not host_allowed(origin, self._plan.allowed_origins):
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
        await self._auth_stack(scope, receive, send)

    async def _require_bearer(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self._app(scope, receive, send)
            return
        if self._plan.anonymous is not None:
            await self._app({**scope, "switchboard.anonymous": self._plan.anonymous}, receive, send)
            return
        given = Headers(scope=scope).get("authorization")
        reason = "wrong_token" if given is not None else "no_token"
        if len(self._plan.agents) == 1:
            agent = self._plan.agents[0][1:]
            source = self._plan.token_sources.get(agent, "the agent's table")
            text = (
                f"agent {agent!r} needs a bearer token: send `Authorization: Bearer <token>` "
                f"with the token of {source}"
                if given is None
                else f"the bearer token is not the token of agent @{agent}: send the token of "
                f"{source}"
            )
        else:
            where = "your agent's token (its [[agents]] table's token or token_file)"
            text = (
                "this Switchboard serves several agents and the bearer token says which one "
                f"you are: send `Authorization: Bearer <token>` with {where}"
                if given is None
                else f"the bearer token proves no agent this Switchboard serves: send {where}"
            )
        challenge = (
            'Bearer realm="switchboard"'
            if given is None
            else 'Bearer realm="switchboard", error="invalid_token", '
            'error_description="the token proves no agent"'
        )
        self._log.note(reason, "agent_http_refused", reason=reason)
        answer = JSONResponse(
            {"error": "invalid_token" if given else "unauthorized", "error_description": text},
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )
        await answer(scope, receive, send)


def endpoint_app(servers: AgentServers | MCPServer[Any], plan: EndpointPlan) -> ASGIApp:
    """The ASGI app of the endpoint: every agent's server on :data:`MCP_PATH`, behind refusals.

    :func:`plan_endpoint` turns ``[agent]`` (the endpoint: transport, host, port, allowed hosts and
    origins) and the configured agents (``[[agents]]``, or the one-agent ``[agent]`` shorthand) into
    an :class:`EndpointPlan` before anything is bound: it reads each ``token_file`` (refusing a
    missing, empty or group/other-accessible one), and derives the Host and Origin values the
    endpoint accepts from the bind address when ``allowed_hosts`` is not given. :func:`endpoint_app`
    serves every agent on one path, :data:`MCP_PATH`; each request passes, in order:

    1. the Host/Origin check (a DNS-rebinding defence, on for every bind address): a Host header not
       in the allowed hosts is refused with 421, an Origin not in the allowed origins with 403 (a
       request without Origin, which no browser sends cross-site, passes);
    2. the bearer check, through the SDK's auth hooks (its ``BearerAuthBackend`` with
       :class:`AgentTokenVerifier`, which asks :class:`Identities` whom the token proves, and its
       ``AuthContextMiddleware``): no token or one that proves nobody is refused with 401 and
       ``WWW-Authenticate: Bearer``. The one exception is the one-agent shorthand without a token
       (loopback only, see ``config``): a request that proves nobody is that agent;
    3. dispatch to the proven agent's own MCP server and streamable HTTP session manager, built by
       :class:`AgentServers` on the agent's first request. A session id belongs to the manager that
       minted it, so one agent's session id is unknown (404) to every other agent; within a manager
       the SDK also binds each session to the credential that opened it.

    Sessions are counted per agent (:class:`SessionHooks`: attach when the manager admits a session,
    detach when it discards one or stops), and every request touches its agent. An agent that leaves
    the roster (or is restarted as a new incarnation) is refused (401) on its next request, and its
    server is stopped once its requests in flight are answered (checked every
    :data:`RETIRE_CHECK_EVERY` seconds, waiting at most :data:`RETIRE_GRACE`), which ends its open
    sessions and their streams (their ids then answer 404). A 2026-era client that speaks without
    sessions is served per request and touches its agent, but never attaches.

    What a session costs is kept small (docs/operations.md, "Many agents"): a POST is answered with
    one JSON body, not a one-event SSE stream (the SDK's ``json_response``; server messages that are
    not answers go on the session's GET stream), and after each POST the session's message router is
    handed a response to an id no request has, so that it lets go of the last answer it routed
    (:meth:`_CountedSessions.release`). uvicorn parses HTTP with ``httptools``.

    :func:`serve_endpoint` listens on a socket bound by :func:`bind_endpoint` and runs the app with
    uvicorn until cancelled. Refusals are logged rate-limited (first one in full, then counts).

    ``servers`` may be one built ``MCPServer`` for the plan's one agent.
    """
    return _endpoint(servers, plan)[0]


def _endpoint(
    servers: AgentServers | MCPServer[Any], plan: EndpointPlan
) -> tuple[ASGIApp, _AgentApps]:
    """The endpoint's app and the agents' servers behind it (what a stop drains)."""
    if isinstance(servers, MCPServer):
        servers = AgentServers.single(servers, plan)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(plan.allowed_hosts),
        allowed_origins=list(plan.allowed_origins),
    )
    apps = _AgentApps(servers, security)
    inner = Starlette(routes=[Route(MCP_PATH, endpoint=_Dispatch(apps))], lifespan=apps.running)
    return _Refusals(plan, servers.identities, inner), apps


def bind_endpoint(plan: EndpointPlan) -> socket.socket:
    """A listening socket on the plan's host and port (port 0: any free port).

    Raises:
        ConfigError: the address cannot be bound (in use, not local, unknown name).
    """
    return bind_listener(plan.host, plan.port, f"[agent] host = {plan.host!r}, port = {plan.port}")


async def serve_endpoint(
    servers: AgentServers | MCPServer[Any],
    plan: EndpointPlan,
    sock: socket.socket,
    *,
    log_level: str = "info",
    wrap: Callable[[ASGIApp], ASGIApp] | None = None,
    stop: anyio.Event | None = None,
    stop_grace: float = STOP_GRACE,
) -> None:
    """Serve ``servers`` on ``sock`` until cancelled, or until ``stop`` is set, then stop
    uvicorn gracefully.

    ``wrap``, when given, wraps the endpoint's app (``serve`` mounts the status surface so).
    Once ``stop`` is set, new requests are refused (503), the ones in flight are answered
    (``stop_grace`` seconds at most: a long poll the host ended answers at once), every
    agent's sessions end with their streams, and uvicorn then stops with nothing left open.

    Raises:
        RuntimeError: the app did not start (uvicorn has logged why).
    """
    app, apps = _endpoint(servers, plan)
    config = uvicorn.Config(
        app if wrap is None else wrap(app),
        log_config=None,
        log_level=log_level.lower(),
        # The C parser (httptools): Switchboard's CPU per inbox call is about a third lower
        # than with the pure-Python h11 (2.5 against 3.8 ms, bench/bench_agents.py's clients).
        http="httptools",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN,
    )
    try:
        started = await serve_on(config, sock, stop=stop, drain=partial(apps.close, stop_grace))
    finally:
        sock.close()
    # Here after a stop, or when uvicorn stopped by itself: a failed start.
    if not started:
        raise RuntimeError("the agent's HTTP endpoint stopped at start-up; the log above says why")
