"""The operator's status surface over HTTP: health, readiness, status, metrics, the live page.

:func:`status_app` serves ``/healthz``, ``/readyz``, ``/status``, ``/metrics``, the live page and
its Server-Sent Events (docs/operations.md, "Status, health and metrics"), beside the agents'
endpoint or on a listener of its own (:func:`plan_status`); every route but ``/healthz`` needs
the operator token when one is set, and the Host header is checked as the agents' endpoint
checks it.

What it deliberately does not know: how the host keeps the model, MCP, and the agents' tokens.
"""

from __future__ import annotations

import hmac
import socket
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final

import anyio
import orjson
import structlog
import uvicorn
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from switchboard.config import Config, is_loopback
from switchboard.runtime.texttable import text_table
from switchboard.status.model import HostStatus
from switchboard.status.paint import paint
from switchboard.web import (
    bare_host,
    bind_listener,
    default_hosts,
    host_allowed,
    read_token_file,
    serve_on,
)

__all__ = [
    "COOKIE",
    "PUSH_EVERY",
    "STATUS_PATHS",
    "StatusPlan",
    "StatusUnavailable",
    "beside",
    "bind_status",
    "fetch_status",
    "is_status_path",
    "metrics_registry",
    "plan_status",
    "render_tables",
    "serve_status",
    "status_app",
    "status_hosts",
    "status_url",
]

log = structlog.get_logger(__name__)

#: The paths of the status surface (everything under ``/status/`` too).
STATUS_PATHS: Final = ("/healthz", "/readyz", "/status", "/metrics")

#: The cookie the page keeps the operator token in (HttpOnly, SameSite=Strict).
COOKIE: Final = "switchboard_status"

#: Seconds between two checks of the model for the live page's event stream.
PUSH_EVERY: Final = 0.5

_CONTENT_TYPE_METRICS: Final = "text/plain; version=0.0.4; charset=utf-8"


# -- plan ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusPlan:
    """Where the status surface is served and what protects it, decided before binding.

    Attributes:
        token: The operator token (from ``[status] token`` or ``token_file``), or None.
        own: ``(host, port)`` of the own listener (``[status] port``), or None.
        beside_agents: Whether it is also served on the agents' HTTP listener.
        agents_loopback: Whether the agents' listener binds a loopback address.
        open_beside_agents: ``[status] open_beside_agents``: the operator chose to leave it
            open on the agents' loopback listener although that listener needs agent tokens.
    """

    token: str | None = field(repr=False)
    own: tuple[str, int] | None
    beside_agents: bool
    agents_loopback: bool
    open_beside_agents: bool = False

    def closed_beside(self, agents_need_tokens: bool) -> str | None:
        """Why the surface is closed on the agents' listener (every route but ``/healthz``
        answers 403 with it), or None when it is served there.

        Closed when the listener binds beyond loopback and there is no operator token, and
        when the agents' endpoint needs tokens but there is no operator token and the
        operator did not set ``open_beside_agents``: someone who set a token believes the
        port is closed, and ``/status`` carries recent messages and their authors.
        """
        if self.token is not None:
            return None
        if not self.agents_loopback:
            return (
                "the status surface is off on this listener: it binds beyond loopback and "
                '[status] has no token; set token = "${SWITCHBOARD_STATUS_TOKEN}" in [status]'
            )
        if agents_need_tokens and not self.open_beside_agents:
            return (
                "the status surface is closed on this listener because the agents' endpoint "
                'needs a token: set token = "${SWITCHBOARD_STATUS_TOKEN}" in [status] and send '
                "it as `Authorization: Bearer <token>` (switchboard status does), or set "
                "open_beside_agents = true in [status] to leave it open on this loopback "
                "listener"
            )
        return None


def plan_status(config: Config) -> StatusPlan:
    """Decide where the status surface is served (see :class:`status_app`).

    Raises:
        ConfigError: the token file is missing, unreadable, readable by others or unusable.
    """
    table = config.status
    token: str | None = None
    if table.token is not None:
        token = table.token.get_secret_value()
    elif table.token_file is not None:
        token = read_token_file(table.token_file, f"[status] token_file = {table.token_file!r}")
    return StatusPlan(
        token=token,
        own=None if table.port is None else (table.host, table.port),
        beside_agents=config.agent.transport == "http",
        agents_loopback=is_loopback(config.agent.host),
        open_beside_agents=table.open_beside_agents,
    )


def status_url(config: Config) -> str | None:
    """The base URL (no path) where ``config``'s status surface answers, or None when it has
    no listener a client can find (none configured, or only ``port = 0``)."""
    table = config.status
    if table.port:
        return f"http://{_url_host(table.host)}:{table.port}"
    if config.agent.transport == "http" and config.agent.port:
        return f"http://{_url_host(config.agent.host)}:{config.agent.port}"
    return None


def _url_host(host: str) -> str:
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if bare in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bare == "::":
        return "[::1]"
    return f"[{bare}]" if ":" in bare else bare


def status_hosts(host: str) -> tuple[str, ...]:
    """The Host header values a listener on ``host`` answers to (as the agents' endpoint)."""
    return default_hosts(bare_host(host))


# -- metrics ---------------------------------------------------------------------------------


class _StatusCollector(Collector):
    """Reads the model at scrape time: nothing is counted twice, nothing per event."""

    def __init__(self, model: HostStatus) -> None:
        self._model = model

    def collect(self) -> list[Metric]:
        snap = self._model.snapshot(channel_limit=0)
        up = GaugeMetricFamily(
            "switchboard_connector_up", "1 when the connector is connected", labels=["connector"]
        )
        state = GaugeMetricFamily(
            "switchboard_connector_state",
            "1 for the connector's current state",
            labels=["connector", "state"],
        )
        channels = GaugeMetricFamily(
            "switchboard_connector_channels", "channels registered", labels=["connector"]
        )
        restarts = CounterMetricFamily(
            "switchboard_connector_restarts", "restarts scheduled", labels=["connector"]
        )
        messages = CounterMetricFamily(
            "switchboard_messages_received",
            "messages and push events accepted into the store",
            labels=["connector"],
        )
        publishes = CounterMetricFamily(
            "switchboard_publishes", "agents' publishes by outcome", labels=["connector", "outcome"]
        )
        refusals = CounterMetricFamily(
            "switchboard_connector_refusals",
            "refusals the host gave the connector",
            labels=["connector"],
        )
        inference = CounterMetricFamily(
            "switchboard_connector_inference",
            "connectors' inference/request answered through an agent's sampling, and refused",
            labels=["connector", "outcome"],
        )
        for c in snap["connectors"]:
            cid = c["id"]
            inference.add_metric([cid, "answered"], float(c["inference"]["answered"]))
            inference.add_metric([cid, "refused"], float(c["inference"]["refused"]))
            up.add_metric([cid], 1.0 if c["state"] == "connected" else 0.0)
            state.add_metric([cid, c["state"]], 1.0)
            channels.add_metric([cid], float(c["channels"]))
            restarts.add_metric([cid], float(c["restarts"]))
            messages.add_metric([cid], float(c["messages_in"]))
            for outcome, count in sorted(c["publishes"].items()):
                publishes.add_metric([cid, outcome], float(count))
            refusals.add_metric([cid], float(c["refusals"]))
        agents = GaugeMetricFamily(
            "switchboard_agent_sessions", "sessions attached per agent", labels=["agent"]
        )
        for a in snap["agents"]:
            agents.add_metric([a["handle"]], float(a["sessions"]))
        store = snap["store"]
        store_bytes = GaugeMetricFamily(
            "switchboard_store_bytes", "bytes of the store's files", labels=["file"]
        )
        store_bytes.add_metric(["db"], float(store["file_bytes"]))
        store_bytes.add_metric(["wal"], float(store["wal_bytes"]))
        backlog = GaugeMetricFamily(
            "switchboard_store_write_backlog", "write jobs queued and not yet taken (lag)"
        )
        backlog.add_metric([], float(store["write_backlog"]))
        latest = GaugeMetricFamily("switchboard_store_latest_seq", "highest committed seq")
        latest.add_metric([], float(store["latest_seq"]))
        ready = GaugeMetricFamily("switchboard_ready", "1 when /readyz answers 200")
        ready.add_metric([], 1.0 if snap["ready"] else 0.0)
        cluster = _cluster_metrics(snap["cluster"]) if "cluster" in snap else []
        return [
            *cluster,
            up,
            state,
            channels,
            restarts,
            messages,
            publishes,
            refusals,
            inference,
            agents,
            store_bytes,
            backlog,
            latest,
            ready,
        ]


_CLUSTER_COUNTERS: Final = (
    ("leases_acquired", "leases this instance acquired"),
    ("failovers", "leases taken from an instance that did not hand them over"),
    ("handed_over", "leases this instance handed over (moved or stopping)"),
    ("self_fenced", "leases dropped because their local deadline passed"),
    ("leases_lost", "leases found taken by another instance at renewal"),
    ("stale_epoch_rejections", "batches the store refused under a superseded lease epoch"),
)


def _cluster_metrics(cluster: Mapping[str, Any]) -> list[Metric]:
    """The cluster's counters, NATS request latency and each live instance's head lag."""
    out: list[Metric] = []
    counters = cluster["counters"]
    for name, text in _CLUSTER_COUNTERS:
        family = CounterMetricFamily(f"switchboard_cluster_{name}", text)
        family.add_metric([], float(counters[name]))
        out.append(family)
    nats = cluster["nats"]
    latency = SummaryMetricFamily(
        "switchboard_cluster_nats_request_seconds",
        "requests to connectors' owners on other instances",
        count_value=int(nats["requests"]),
        sum_value=float(nats["request_seconds"]),
    )
    failures = CounterMetricFamily(
        "switchboard_cluster_nats_request_failures", "requests not answered", labels=["why"]
    )
    failures.add_metric(["no-responders"], float(nats["no_responders"]))
    failures.add_metric(["timeout"], float(nats["timeouts"]))
    failures.add_metric(["nats-down"], float(nats["refused_while_down"]))
    connected = GaugeMetricFamily("switchboard_cluster_nats_connected", "1 when NATS is up")
    connected.add_metric([], 1.0 if nats["connected"] else 0.0)
    lag = GaugeMetricFamily(
        "switchboard_cluster_head_lag",
        "how far an instance's head is behind the highest head reported",
        labels=["instance"],
    )
    owned = GaugeMetricFamily(
        "switchboard_cluster_lease_epoch", "epoch of each lease by owner", labels=["key", "owner"]
    )
    for instance in cluster["instances"]:
        if instance["live"] and instance["head_lag"] is not None:
            lag.add_metric([instance["id"]], float(instance["head_lag"]))
        for lease in instance["owns"]:
            owned.add_metric([lease["key"], instance["id"]], float(lease["epoch"]))
    return [*out, latency, failures, connected, lag, owned]


def metrics_registry(model: HostStatus) -> CollectorRegistry:
    """A registry of its own (never the global one) that reads ``model`` at each scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_StatusCollector(model))
    return registry


# -- the app ---------------------------------------------------------------------------------


def _asset(name: str) -> bytes:
    return resources.files("switchboard").joinpath("status", "page", name).read_bytes()


_PAGE_HEADERS: Final = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


def _json(body: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status_code, media_type="application/json")


class _Guard:
    """Host header first, then the operator token (``/healthz`` needs only the Host check)."""

    def __init__(
        self, app: ASGIApp, *, token: str | None, closed: str | None, hosts: Sequence[str]
    ) -> None:
        self._app = app
        self._token = token
        self._closed = closed
        self._hosts = tuple(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host_allowed(host, self._hosts):
            answer: Response = PlainTextResponse(
                f"Host {host!r} is not one this Switchboard answers to", status_code=421
            )
            await answer(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/healthz":
            await self._app(scope, receive, send)
            return
        if self._closed is not None:
            await PlainTextResponse(self._closed, status_code=403)(scope, receive, send)
            return
        if self._token is None or self._proven(scope, headers):
            await self._app(scope, receive, send)
            return
        if path == "/status/page":
            given = Request(scope).query_params.get("token")
            if given is not None and hmac.compare_digest(given.encode(), self._token.encode()):
                answer = RedirectResponse("/status/page", status_code=303)
                answer.set_cookie(COOKIE, self._token, httponly=True, samesite="strict", path="/")
                await answer(scope, receive, send)
                return
        answer = JSONResponse(
            {
                "error": "unauthorized",
                "error_description": "the status surface needs the operator token: send "
                "`Authorization: Bearer <token>` with [status] token (or open the page once as "
                "/status/page?token=<token>)",
            },
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="switchboard-status"'},
        )
        await answer(scope, receive, send)

    def _proven(self, scope: Scope, headers: Headers) -> bool:
        assert self._token is not None
        expected = self._token.encode()
        given = headers.get("authorization", "")
        if given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), expected):
            return True
        cookie = Request(scope).cookies.get(COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode(), expected)


def status_app(
    model: HostStatus,
    *,
    token: str | None,
    hosts: Sequence[str],
    closed: str | None = None,
    push_every: float = PUSH_EVERY,
    until: anyio.Event | None = None,
) -> ASGIApp:
    """The status surface's ASGI app over ``model``.

    What it knows (docs/operations.md, "Status, health and metrics"):

    - **Routes** (:func:`status_app`, Starlette): ``/healthz`` (the process answers: 200),
      ``/readyz`` (200 when :meth:`~switchboard.status.model.HostStatus.readiness` says ready, else
      503 with the reasons), ``/status`` (the model as JSON), ``/metrics`` (Prometheus text, through
      ``prometheus_client`` with a registry of its own per app, never the global one),
      ``/status/page`` with ``/status/page.js`` and ``/status/page.css`` (the live page, package
      data in ``switchboard/status/page/``) and ``/status/events`` (Server-Sent Events: a new
      snapshot whenever the model moved, checked every :data:`PUSH_EVERY` seconds).
    - **Where they are served** (:func:`plan_status`): always beside the agents' MCP endpoint when
      ``[agent] transport = "http"`` (:func:`beside` routes these paths before the agents' bearer
      check), and on a listener of their own when ``[status] port`` is set.
    - **Who may read them.** ``/healthz`` is always open. With an operator token (``[status] token``
      or ``token_file``) every other route needs it: ``Authorization: Bearer <token>``, or the
      cookie the page sets when opened once as ``/status/page?token=<token>``. Without a token they
      are open on a loopback listener, except on an agents' listener that needs agent tokens
      (unless ``[status] open_beside_agents``) or binds beyond loopback: there they answer 403
      saying to set ``[status] token`` (:meth:`StatusPlan.closed_beside`; an own listener
      beyond loopback without a token is refused when the config is loaded). The Host header
      is checked as the agents' endpoint checks it (DNS rebinding).

    Args:
        token: the operator token every route but ``/healthz`` needs, or None.
        hosts: the Host header values it answers to (``name``, ``name:port``, ``name:*``).
        closed: when given, every route but ``/healthz`` answers 403 with this text (an agents'
            listener beyond loopback without an operator token).
        push_every: seconds between two checks of the model for ``/status/events``.
        until: when set, every ``/status/events`` stream ends (the host is stopping: its
            listener then finds no stream left open).
    """
    registry = metrics_registry(model)

    async def healthz(_request: Request) -> Response:
        return _json({"alive": True})

    async def readyz(_request: Request) -> Response:
        readiness = model.readiness()
        return _json(
            {"ready": readiness.ready, "reasons": list(readiness.reasons)},
            200 if readiness.ready else 503,
        )

    async def status(_request: Request) -> Response:
        return _json(model.snapshot())

    async def metrics(_request: Request) -> Response:
        return Response(generate_latest(registry), media_type=_CONTENT_TYPE_METRICS)

    def asset(name: str, media_type: str) -> Callable[[Request], Any]:
        async def serve(_request: Request) -> Response:
            return Response(_asset(name), media_type=media_type, headers=_PAGE_HEADERS)

        return serve

    template = _asset("page.html").decode("utf-8")

    async def page(_request: Request) -> Response:
        # Painted on the server from the model, so the page shows the host before (or
        # without) its script; the script then keeps it live.
        return Response(
            paint(model.snapshot(), template),
            media_type="text/html; charset=utf-8",
            headers=_PAGE_HEADERS,
        )

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[dict[str, str]]:
            last = -1
            while not await request.is_disconnected():
                if model.version != last:
                    last = model.version
                    yield {"event": "status", "data": orjson.dumps(model.snapshot()).decode()}
                if until is None:
                    await anyio.sleep(push_every)
                    continue
                with anyio.move_on_after(push_every):
                    await until.wait()
                if until.is_set():
                    return

        return EventSourceResponse(stream(), ping=15, send_timeout=10)

    app = Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/status", status),
            Route("/metrics", metrics),
            Route("/status/events", events),
            Route("/status/page", page),
            Route("/status/page.js", asset("page.js", "text/javascript; charset=utf-8")),
            Route("/status/page.css", asset("page.css", "text/css; charset=utf-8")),
        ]
    )
    return _Guard(app, token=token, closed=closed, hosts=hosts)


def is_status_path(path: str) -> bool:
    """Whether ``path`` belongs to the status surface."""
    return path in STATUS_PATHS or path.startswith("/status/")


def beside(status: ASGIApp) -> Callable[[ASGIApp], ASGIApp]:
    """Wrap another app (the agents' endpoint) so that the status paths reach ``status``;
    everything else (and the lifespan) goes to the other app."""

    def wrap(other: ASGIApp) -> ASGIApp:
        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and is_status_path(scope["path"]):
                await status(scope, receive, send)
            else:
                await other(scope, receive, send)

        return app

    return wrap


def bind_status(host: str, port: int) -> socket.socket:
    """A listening socket for the own status listener (port 0: any free port).

    Raises:
        ConfigError: the address cannot be bound (in use, not local, unknown name).
    """
    return bind_listener(host, port, f"[status] host = {host!r}, port = {port}", backlog=64)


async def serve_status(app: ASGIApp, sock: socket.socket, *, log_level: str = "warning") -> None:
    """Serve the status app on the bound ``sock`` until cancelled, then stop uvicorn."""
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    await serve_on(config, sock)


# -- the command line's view -----------------------------------------------------------------


class StatusUnavailable(Exception):
    """``switchboard status`` found nothing to ask, or nothing answered."""


def fetch_status(config: Config, *, timeout: float = 5.0) -> dict[str, Any]:
    """GET ``/status`` of the host ``config`` describes (with the operator token if any).

    Raises:
        StatusUnavailable: no status listener is configured, or nothing answered there.
        ConfigError: the token file cannot be read.
    """
    import urllib.error
    import urllib.request

    base = status_url(config)
    if base is None:
        raise StatusUnavailable(
            "this config has no status listener a client can find: set [status] port (or run "
            '[agent] transport = "http" on a fixed port)'
        )
    plan = plan_status(config)
    request = urllib.request.Request(base + "/status")
    if plan.token is not None:
        request.add_header("Authorization", f"Bearer {plan.token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body: dict[str, Any] = orjson.loads(answer.read())
            return body
    except urllib.error.HTTPError as exc:
        raise StatusUnavailable(
            f"{base}/status answered {exc.code}: {exc.read().decode(errors='replace')[:300]}"
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StatusUnavailable(
            f"nothing answers at {base}/status ({reason}); is `switchboard run` running with "
            "this config?"
        ) from exc


def render_tables(snap: Mapping[str, Any]) -> str:
    """``/status`` as the plain-text tables ``switchboard status`` prints."""
    ready = "ready" if snap["ready"] else "NOT READY: " + "; ".join(snap["not_ready"])
    parts = [f"Switchboard: {ready} (up {snap['uptime']:.0f} s)", "", "Connectors"]
    parts.append(
        text_table(
            [
                "connector",
                "state",
                "pid",
                "dialect",
                "channels",
                "restarts",
                "in",
                "refusals",
                "last error",
                "last refusal",
            ],
            [
                [
                    c["id"],
                    c["state"],
                    c["pid"],
                    c["dialect"],
                    c["channels"],
                    c["restarts"],
                    c["messages_in"],
                    c["refusals"],
                    c["last_error"],
                    c["last_refusal"],
                ]
                for c in snap["connectors"]
            ],
        )
    )
    parts += ["", "Agents"]
    parts.append(
        text_table(["agent", "sessions"], [[a["handle"], a["sessions"]] for a in snap["agents"]])
    )
    store = snap["store"]
    parts += ["", "Store", store["path"]]
    parts.append(
        text_table(
            ["bytes", "wal bytes", "write backlog", "latest seq"],
            [
                [
                    store["total_bytes"],
                    store["wal_bytes"],
                    store["write_backlog"],
                    store["latest_seq"],
                ]
            ],
        )
    )
    traffic = snap["traffic"]
    parts += ["", "Traffic"]
    parts.append(
        text_table(
            ["messages in", "publishes out", "refusals"],
            [[traffic["messages_in"], traffic["publishes_out"], traffic["refusals"]]],
        )
    )
    cluster = snap.get("cluster")
    if cluster is not None:
        parts += ["", f"Cluster (this instance: {cluster['instance']})"]
        parts.append(
            text_table(
                ["instance", "live", "head", "head lag", "nats", "owns (epoch)"],
                [
                    [
                        i["id"],
                        "yes" if i["live"] else "no",
                        i["head"],
                        i["head_lag"],
                        i["nats"],
                        ", ".join(f"{o['key']} ({o['epoch']})" for o in i["owns"]),
                    ]
                    for i in cluster["instances"]
                ],
            )
        )
    return "\n".join(parts)
