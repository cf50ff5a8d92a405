"""Requests to a connector's owner on another instance, by NATS request/reply.

Only the lease owner of a connector serves ``<prefix>.rpc.<server>.<op>`` (:class:`OwnerService`,
subscribed after the lease is acquired and before the connector starts; unsubscribed before
it is released or as soon as the instance fences itself). Elsewhere the connector's owner is a
:class:`RemoteOwner`: the same :class:`~switchboard.connections.owner.ConnectorOwner` the agent
side and the lifecycle already talk to, carrying each request there. What can be said for
certain is said: NATS down or "no responders" means nothing was sent (a publish and a
connector tool's call are ``server-gone``, anything else :class:`NothingSentError`, a
``LinkClosedError``); a timeout means it may have been handled
(``unknown``, ``RequestTimeoutError``). A publish is never retried. A request carries its
deadline, and an owner drops one that arrives after it (it was already answered ``unknown``).
How a remote connector stands (state, grant, tools) comes with each owner's heartbeat; its
channels come from the PostgreSQL mirror (:mod:`switchboard.cluster.replica`), not from here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import orjson
import structlog
from nats.aio.msg import Msg
from structlog.typing import FilteringBoundLogger

from switchboard.cluster.bus import BusDown, ClusterBus, NoResponders, RequestTimedOut
from switchboard.cluster.bus import subject_token as token
from switchboard.config import ConnectorConfig
from switchboard.connections.connector_tools import ConnectorTool, read_tool
from switchboard.connections.diagnostics import DisabledFeatureSet
from switchboard.connections.owner import ConnectorOwner, SessionState
from switchboard.protocol import Grant
from switchboard.refusals import Refusal, RefusalKind
from switchboard.refusals.outcome import PublishOutcome, PublishStatus
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.transport.errors import LinkClosedError, RequestTimeoutError, RpcError

__all__ = ["NothingSentError", "OwnerService", "RemoteOwner", "describe"]

log = structlog.get_logger(__name__)

#: Seconds added to a request's own wait for the trip to the owner and back.
SLACK = 2.0
#: Seconds a notice to the owner (typing, an inference phase) waits for its answer, all told.
#: Locally each is a notification, written and never waited for; an agent's inbox read sends
#: them as its turn begins, so an owner that got the request but never answers (it died just
#: then, or is paused) must not hold that read for a whole ``request_timeout``.
NOTICE_WAIT = 1.0


def describe(owner: ConnectorOwner) -> dict[str, Any]:
    """How ``owner`` stands, as the other instances' :class:`RemoteOwner` shows it."""
    tools = owner.tools
    return {
        "state": owner.state.value,
        "connected": owner.connected,
        "grant": list(owner.grant.patterns),
        "tools": [_tool_dict(t) for t in tools.tools] if tools.granted else None,
    }


def _tool_dict(tool: ConnectorTool) -> dict[str, Any]:
    raw: dict[str, Any] = {"name": tool.name, "inputSchema": dict(tool.input_schema)}
    if tool.description is not None:
        raw["description"] = tool.description
    if tool.title is not None:
        raw["title"] = tool.title
    if tool.output_schema is not None:
        raw["outputSchema"] = dict(tool.output_schema)
    if tool.annotations is not None:
        raw["annotations"] = dict(tool.annotations)
    return raw


def _outcome_dict(outcome: PublishOutcome) -> dict[str, Any]:
    refusal = outcome.refusal
    return {
        "status": outcome.status.value,
        "channel_id": outcome.channel_id,
        "message_id": outcome.message_id,
        "reason": outcome.reason,
        "refusal": None
        if refusal is None
        else {"kind": refusal.kind.value, "message": refusal.message, "data": dict(refusal.data)},
    }


def _outcome(server_id: str, raw: Mapping[str, Any]) -> PublishOutcome:
    refusal_raw = raw.get("refusal")
    refusal = None
    if isinstance(refusal_raw, Mapping):
        refusal = Refusal(
            RefusalKind(refusal_raw["kind"]), str(refusal_raw["message"]), **refusal_raw["data"]
        )
    return PublishOutcome(
        PublishStatus(raw["status"]),
        server_id,
        raw.get("channel_id"),
        message_id=raw.get("message_id"),
        reason=raw.get("reason"),
        refusal=refusal,
    )


def _error_dict(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RpcError):
        return {"kind": "rpc", "code": exc.code, "message": exc.message, "data": exc.data}
    if isinstance(exc, LinkClosedError):
        return {"kind": "closed", "message": str(exc)}
    if isinstance(exc, RequestTimeoutError):
        return {"kind": "timeout", "message": str(exc)}
    return {"kind": "error", "message": str(exc) or type(exc).__name__}


def _raise(error: Mapping[str, Any]) -> None:
    kind = error.get("kind")
    message = str(error.get("message", ""))
    if kind == "rpc":
        raise RpcError.from_wire(
            {"code": error["code"], "message": message, "data": error.get("data")}
        )
    if kind == "closed":
        raise LinkClosedError(message)
    if kind == "timeout":
        raise RequestTimeoutError(message)
    raise RpcError(-32603, message)


class NothingSentError(LinkClosedError):
    """No owner could be asked (NATS down, or no responders): the request was not sent."""


class OwnerService:
    """Serves the requests other instances make of the connectors this instance owns."""

    def __init__(
        self,
        bus: ClusterBus,
        owners: Callable[[str], ConnectorOwner | None],
    ) -> None:
        self.bus = bus
        self._owners = owners
        self._handles: dict[str, int] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self.served = 0
        self.dropped_late = 0

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the task group requests are handled in, until cancelled."""
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._group = None

    def serving(self, server_id: str) -> bool:
        return server_id in self._handles

    async def serve(self, server_id: str) -> None:
        """Answer requests for ``server_id`` from now on (this instance holds its lease)."""
        if server_id in self._handles:
            return

        async def heard(msg: Msg) -> None:
            group = self._group
            if group is not None:
                group.start_soon(self._handle, server_id, msg)

        subject = self.bus.subject("rpc", token(server_id), "*")
        self._handles[server_id] = await self.bus.subscribe(subject, heard)

    async def stop(self, server_id: str) -> None:
        """Answer no more requests for ``server_id`` (its lease is going or gone)."""
        handle = self._handles.pop(server_id, None)
        if handle is not None:
            await self.bus.unsubscribe(handle)

    async def _handle(self, server_id: str, msg: Msg) -> None:
        op = msg.subject.rsplit(".", 1)[1]
        try:
            request = orjson.loads(msg.data)
            if time.time() > float(request["deadline"]):
                # The caller has answered its agent already; doing it now would surprise both.
                self.dropped_late += 1
                return
            owner = self._owners(server_id)
            if owner is None or server_id not in self._handles:
                raise LinkClosedError(f"connector {server_id!r} is not served here any more")
            answer: dict[str, Any] = {"ok": await self._call(owner, op, request)}
        except Exception as exc:
            answer = {"error": _error_dict(exc)}
        self.served += 1
        try:
            await msg.respond(orjson.dumps(answer, default=str))
        except Exception as exc:  # the requester gave up or NATS went away
            log.debug("cluster.rpc_answer_lost", server_id=server_id, op=op, error=str(exc))

    async def _call(self, owner: ConnectorOwner, op: str, request: Mapping[str, Any]) -> Any:
        args = request.get("args", {})
        if op == "publish":
            outcome = await owner.publish(
                args["channel_id"], args["content"], args.get("conversation_id", "")
            )
            return _outcome_dict(outcome)
        if op == "open":
            return await owner.open_channel(args)
        if op == "close":
            return await owner.close_channel(args["channel_id"])
        if op == "acknowledge":
            return await owner.acknowledge(args)
        if op == "typing":
            await owner.typing(args)
            return None
        if op == "stream":
            await owner.stream(args["method"], args["params"])
            return None
        if op == "inference_phase":
            await owner.inference_phase(args)
            return None
        if op == "context":
            return await owner.before_inference(args["params"], float(args["within"]))
        if op == "tool":
            return await owner.tools.call(args["name"], args["arguments"])
        raise RpcError(-32601, f"no such cluster request {op!r}")


class _RemoteTools:
    def __init__(self, owner: RemoteOwner) -> None:
        self._owner = owner
        self._tools: tuple[ConnectorTool, ...] = ()
        self._by_name: dict[str, ConnectorTool] = {}

    def update(self, raw: Any) -> None:
        tools = [read_tool(self._owner.server_id, t) for t in raw] if isinstance(raw, list) else []
        self._tools = tuple(t for t in tools if isinstance(t, ConnectorTool))
        self._by_name = {t.name: t for t in self._tools}

    @property
    def granted(self) -> bool:
        return bool(self._tools) and self._owner.state is SessionState.READY

    @property
    def tools(self) -> tuple[ConnectorTool, ...]:
        return self._tools if self.granted else ()

    def find(self, name: str) -> ConnectorTool | None:
        return self._by_name.get(name) if self.granted else None

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """The owner's answer to the call of its connector's tool ``name``.

        Raises:
            Refusal: ``server-gone`` when no owner could be asked (NATS down, or no
                responders): the call was not sent, so the tool did not run. A link error
                would tell the agent it may have.
            RequestTimeoutError: no answer in time (the tool may have run).
        """
        sid = self._owner.server_id
        try:
            return await self._owner.ask(
                "tool",
                {"name": name, "arguments": dict(arguments)},
                self._owner.config.request_timeout,
            )
        except NothingSentError as exc:
            raise Refusal(
                RefusalKind.SERVER_GONE,
                f"connector {sid!r} has no owner reachable now, so its tool {name!r} was not "
                "called (nothing was sent); try again later",
                server_id=sid,
                tool=name,
            ) from exc


class RemoteOwner:
    """A connector owned by another instance, as a
    :class:`~switchboard.connections.owner.ConnectorOwner` (see the module docstring)."""

    def __init__(self, config: ConnectorConfig, bus: ClusterBus) -> None:
        self._config = config
        self._bus = bus
        self.owner_instance: str | None = None
        self._beat = 0
        self._state = SessionState.CLOSED
        self._connected = False
        self._grant = Grant([])
        self._tools = _RemoteTools(self)
        self._log: FilteringBoundLogger = structlog.get_logger("switchboard.cluster.remote").bind(
            server_id=config.id
        )
        self._noted = RateLimitedLog(self._log)
        self._prefix = bus.subject("rpc", token(config.id))

    def update(
        self, instance: str | None, described: Mapping[str, Any] | None, beat: int = 0
    ) -> None:
        """How the connector stands at ``instance``, its owner now (None: nobody owns it), as
        of that instance's heartbeat ``beat`` (an older word than the one held is ignored)."""
        if instance is not None and instance == self.owner_instance and beat < self._beat:
            return
        self._beat = beat if instance is not None else 0
        self.owner_instance = instance
        if instance is None or described is None:
            self._state, self._connected = SessionState.CLOSED, False
            return
        try:
            self._state = SessionState(described.get("state", "closed"))
        except ValueError:
            self._state = SessionState.CLOSED
        self._connected = bool(described.get("connected"))
        patterns = described.get("grant") or []
        if tuple(patterns) != self._grant.patterns:
            self._grant = Grant([str(p) for p in patterns])
        self._tools.update(described.get("tools"))

    # -- how it stands

    @property
    def server_id(self) -> str:
        return self._config.id

    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def config(self) -> ConnectorConfig:
        return self._config

    @property
    def grant(self) -> Grant:
        return self._grant

    @property
    def disabled_feature_sets(self) -> tuple[DisabledFeatureSet, ...]:
        return ()

    @property
    def connected(self) -> bool:
        return self._connected and self._bus.connected

    @property
    def log(self) -> FilteringBoundLogger:
        return self._log

    @property
    def noted(self) -> RateLimitedLog:
        return self._noted

    @property
    def tools(self) -> _RemoteTools:
        return self._tools

    # -- requests

    async def ask(
        self, op: str, args: Mapping[str, Any], wait: float, *, slack: float = SLACK
    ) -> Any:
        """Send ``op`` to the owner and return its result (raises what the owner raised;
        ``LinkClosedError`` when nothing was sent, ``RequestTimeoutError`` when no answer
        within ``wait`` plus ``slack`` for the trip)."""
        timeout = wait + slack
        payload = orjson.dumps({"args": args, "deadline": time.time() + timeout}, default=str)
        try:
            data = await self._bus.request(f"{self._prefix}.{op}", payload, timeout)
        except (BusDown, NoResponders) as exc:
            raise NothingSentError(
                f"connector {self.server_id!r} has no owner reachable now; nothing was sent"
            ) from exc
        except RequestTimedOut as exc:
            raise RequestTimeoutError(
                f"the instance owning connector {self.server_id!r} did not answer within "
                f"{timeout:g} s"
            ) from exc
        answer = orjson.loads(data)
        if "error" in answer:
            _raise(answer["error"])
        return answer.get("ok")

    async def publish(
        self, channel_id: str, content: list[dict[str, Any]], conversation_id: str
    ) -> PublishOutcome:
        try:
            raw = await self.ask(
                "publish",
                {"channel_id": channel_id, "content": content, "conversation_id": conversation_id},
                self._config.publish_timeout,
            )
        except LinkClosedError:
            return PublishOutcome.refused(
                Refusal(
                    RefusalKind.SERVER_GONE,
                    f"server {self.server_id!r} has no owner reachable now; nothing was sent, "
                    "try again later",
                    server_id=self.server_id,
                    channel_id=channel_id,
                )
            )
        except RequestTimeoutError as exc:
            return PublishOutcome(
                PublishStatus.UNKNOWN,
                self.server_id,
                channel_id,
                reason=f"{exc}; it may have been posted (it is not sent again)",
            )
        except RpcError as exc:
            return PublishOutcome(
                PublishStatus.UNKNOWN, self.server_id, channel_id, reason=str(exc)
            )
        return _outcome(self.server_id, raw)

    async def open_channel(self, params: Mapping[str, Any]) -> Any:
        return await self.ask("open", params, self._config.request_timeout)

    async def close_channel(self, channel_id: str) -> Any:
        return await self.ask("close", {"channel_id": channel_id}, self._config.request_timeout)

    async def acknowledge(self, params: Mapping[str, Any]) -> Any:
        return await self.ask("acknowledge", params, self._config.request_timeout)

    async def typing(self, params: Mapping[str, Any]) -> None:
        await self.ask("typing", params, 0.0, slack=NOTICE_WAIT)

    async def stream(self, method: str, params: Mapping[str, Any]) -> None:
        await self.ask("stream", {"method": method, "params": params}, self._config.request_timeout)

    async def inference_phase(self, params: Mapping[str, Any]) -> None:
        await self.ask("inference_phase", params, 0.0, slack=NOTICE_WAIT)

    async def before_inference(self, params: Mapping[str, Any], answer_within: float) -> Any:
        return await self.ask("context", {"params": params, "within": answer_within}, answer_within)

    def apply_declaration(self, declared: Any) -> bool:
        # The owner took the declaration with the open's answer; its registration reaches this
        # instance through the channel mirror.
        return False

    async def output_written(self) -> None:
        return None
