"""The kit as a host on one connection: the handshake, the policy, calls, and what came back.

:class:`HostSession` plays the host's half of the MCPL handshake, sends policy Requests and
Notifications with whatever grant a check wants (well-formed or deliberately not), records
every frame, answers the server as :mod:`.answers` says, and calls the server without ever
raising.

What it deliberately does not know: what any check concludes from the traffic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio

from switchboard.protocol import (
    MCP_PROTOCOL_VERSION,
    MCPL_VERSION,
    FeatureSetDecl,
    Grant,
    advertised_paths,
    parse_feature_sets,
)
from switchboard.transport import LinkClosedError, Peer

from ..common.options import SuiteOptions
from ..common.outcomes import NotApplicable, fail
from ..common.reply import Reply, ask, tell
from ..common.transcript import RecordingLink
from ..common.version import kit_version
from .answers import PRIVILEGED_FROM_SERVER, HostAnswers

__all__ = [
    "KIT_ADVERTISEMENT",
    "HostSession",
    "Reply",
    "ServerMessage",
    "is_jsonrpc",
    "kit_version",
]

KIT_ADVERTISEMENT: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "pushEvents": True,
    "contextHooks": {"beforeInference": True},
    "inferenceLifecycle": True,
    "inferenceRequest": {"streaming": False},
    "modelInfo": True,
    "channels": True,
    "featureSets": True,
}
"""What the kit advertises at ``initialize``: everything it exercises or answers."""


@dataclass(frozen=True, slots=True)
class ServerMessage:
    """A request or notification the server sent.

    Attributes:
        position: the wire position of the frame that carried it (1 = first frame).
        method: the method name.
        params: the params as received (``None`` when absent).
        is_request: whether it carried an id (a Request) rather than none (a Notification).
        while_ready: whether the kit had a policy receipt in force when it arrived.
    """

    position: int
    method: str
    params: Any
    is_request: bool
    while_ready: bool

    @property
    def privileged(self) -> bool:
        """Whether the method needs a capability (mcpl-protocol.md 1.3)."""
        return self.method in PRIVILEGED_FROM_SERVER

    def mentions(self, needle: str) -> bool:
        """Whether ``needle`` occurs anywhere in the params."""
        return needle in json.dumps(self.params, ensure_ascii=False)


def is_jsonrpc(decoded: Any) -> bool:
    """Whether a decoded frame is a JSON-RPC 2.0 message: an object with ``jsonrpc: "2.0"``
    and a method or an id, or a non-empty batch of such objects."""
    items = decoded if isinstance(decoded, list) and decoded else [decoded]
    return all(
        isinstance(item, dict)
        and item.get("jsonrpc") == "2.0"
        and ("method" in item or "id" in item)
        for item in items
    )


class HostSession:
    """One connection to the server under test, with the kit as its host.

    What it knows:

    - the host's half of the MCPL handshake (mcpl-protocol.md 1.2): ``initialize`` with the kit's
      advertisement, ``notifications/initialized``, and ``featureSets/update`` Requests or
      Notifications with whatever grant a check wants (well-formed or deliberately not);
    - readiness in wire order: the connection is ready, and a new grant in force, the moment the
      receipt is read, before any later inbound message is answered; a narrowed grant applies before
      its Request is sent (3.6);
    - every request and notification the server sends, recorded at the wire with its position (the
      count of frames received so far), whether it was a Request, and whether the kit was ready —
      before the peer answers it (:class:`ServerMessage`);
    - every frame that is not a JSON-RPC message (a banner, a log line, a bare JSON value), kept
      with its position (:attr:`HostSession.stray`): the peer skips them, and the MCP stdio rule
      (S-46) says a server writes nothing else on stdout;
    - waiting: for a message matching a predicate, for the server to go quiet, or just watching for
      a while; and calls that never raise (:class:`Reply`).
    """

    def __init__(
        self,
        link: RecordingLink,
        options: SuiteOptions,
        applies: Callable[[Mapping[str, Any] | None], str | None] | None = None,
    ) -> None:
        self.link = link
        self.options = options
        self._applies = applies
        self.host = HostAnswers()
        self.messages: list[ServerMessage] = []
        self.init_result: dict[str, Any] | None = None
        self.manifest: dict[str, Any] | None = None
        self.advertised: frozenset[str] = frozenset()
        self.feature_sets: dict[str, FeatureSetDecl] = {}
        self.receipt_position = 0
        self.orphan_answers: list[tuple[int, dict[str, Any]]] = []
        self.stray: list[tuple[int, str]] = []
        self._raw_answers: dict[str, Any] = {}
        self._last_frame = anyio.current_time()
        self._changed = anyio.Event()
        link.set_observer(self._observe)
        self.peer = Peer(
            link,
            on_request=self.host.answer,
            on_notification=self._ignore,
            name="conformance-kit",
            default_timeout=options.request_timeout,
        )

    # -- recording -------------------------------------------------------------------------

    def _observe(self, frame: bytes, position: int) -> None:
        self._last_frame = anyio.current_time()
        try:
            decoded = json.loads(frame)
        except ValueError:
            decoded = None  # junk on the wire: the transport skips it, a host must too
        if not is_jsonrpc(decoded):
            self.stray.append((position, frame.decode("utf-8", "replace")))
        for item in decoded if isinstance(decoded, list) else (decoded,):
            if not isinstance(item, dict):
                continue
            method = item.get("method")
            if isinstance(method, str):
                self.messages.append(
                    ServerMessage(position, method, item.get("params"), "id" in item, self.ready)
                )
            elif isinstance(item.get("id"), str):
                self._raw_answers[item["id"]] = item
            elif item.get("id") is None:
                self.orphan_answers.append((position, item))
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def _ignore(self, method: str, params: Any) -> None:
        """Notifications are recorded at the wire; nothing more to do."""

    @property
    def ready(self) -> bool:
        """Whether a policy receipt is in force."""
        return self.host.ready

    @property
    def granted(self) -> Grant:
        """The grant the kit enforces right now."""
        return self.host.granted

    def privileged(self, *, after: int = 0) -> list[ServerMessage]:
        """Privileged messages whose frame came after wire position ``after``."""
        return [m for m in self.messages if m.privileged and m.position > after]

    # -- calls -----------------------------------------------------------------------------

    async def call(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the peer enforces it
        on_response: Callable[[Any], None] | None = None,
    ) -> Reply:
        """Send a request and return the answer, whatever it is."""
        wait = self.options.request_timeout if timeout is None else timeout
        return await ask(self.peer, method, params, wait, on_response=on_response)

    async def notify(self, method: str, params: Any = None) -> bool:
        """Send a notification; ``False`` when the connection is closed."""
        return await tell(self.peer, method, params)

    async def raw_request(self, request_id: str, method: str, params: Any = None) -> Any:
        """Send a request with a string id by hand; return the answer object or ``None``."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(json.dumps(message).encode())
        with anyio.move_on_after(self.options.request_timeout):
            while request_id not in self._raw_answers:
                await self._changed.wait()
        return self._raw_answers.get(request_id)

    async def send_raw(self, data: bytes) -> bool:
        """Write ``data`` as one frame, JSON or not; ``False`` when the connection is closed."""
        try:
            await self.link.send_raw(data)
        except LinkClosedError:
            return False
        return True

    # -- handshake and policy --------------------------------------------------------------

    async def initialize(self, *, extra: Mapping[str, Any] | None = None) -> Reply:
        """Send ``initialize`` and read the manifest from its result.

        Raises:
            NotApplicable: the check this session serves does not apply to the manifest.
        """
        params: dict[str, Any] = {
            "protocolVersion": MCP_PROTOCOL_VERSION,
            "capabilities": {"experimental": {"mcpl": dict(KIT_ADVERTISEMENT)}},
            "clientInfo": {"name": "switchboard-conformance-kit", "version": kit_version()},
            **(extra or {}),
        }
        reply = await self.call("initialize", params, timeout=self.options.start_timeout)
        if reply.ok and isinstance(reply.result, dict):
            self.init_result = reply.result
            capabilities = reply.result.get("capabilities")
            capabilities = capabilities if isinstance(capabilities, dict) else {}
            experimental = capabilities.get("experimental")
            mcpl = experimental.get("mcpl") if isinstance(experimental, dict) else None
            if isinstance(mcpl, dict):
                self.manifest = mcpl
                self.advertised = advertised_paths(mcpl, mcp_capabilities=capabilities)
                self.feature_sets = parse_feature_sets(mcpl.get("featureSets"))[0]
            reason = None if self._applies is None else self._applies(self.manifest)
            if reason is not None:
                raise NotApplicable(reason)
        return reply

    async def handshake(self, *, extra: Mapping[str, Any] | None = None) -> None:
        """``initialize`` then ``notifications/initialized``; no policy yet.

        Raises:
            CheckFailed: ``initialize`` got no result.
            NotApplicable: the server is MCP-only (no ``experimental.mcpl``).
        """
        reply = await self.initialize(extra=extra)
        if not reply.ok:
            fail(f"initialize was not answered with a result: {reply.describe()}")
        if self.manifest is None:
            raise NotApplicable("the server advertises no capabilities.experimental.mcpl")
        await self.notify("notifications/initialized")

    def set_names(self) -> list[str]:
        """The names of the declared feature sets."""
        return list(self.feature_sets)

    async def policy(
        self,
        effective: Sequence[str] | None,
        *,
        enabled: Sequence[str] | None = None,
        disabled: Sequence[str] | None = None,
        denied: Sequence[str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Reply:
        """Send a ``featureSets/update`` Request; ``effective=None`` leaves the grant out.

        Narrowing applies before the Request is sent; the new grant, and readiness, follow
        the receipt (only an ``accepted: true`` receipt makes the kit ready).
        """
        params: dict[str, Any] = dict(extra or {})
        if effective is not None:
            params["effectiveCapabilities"] = list(effective)
        for key, value in (
            ("deniedCapabilities", denied),
            ("enabled", enabled),
            ("disabled", disabled),
        ):
            if value is not None:
                params[key] = list(value)
        new_grant = Grant(effective or ())
        host = self.host
        host.granted = Grant(sorted(p for p in host.granted.leaves() if new_grant.allows(p)))

        def on_receipt(result: Any) -> None:
            self.receipt_position = self.link.received
            if isinstance(result, dict) and result.get("accepted") is True:
                host.ready = True
                host.granted = new_grant

        return await self.call("featureSets/update", params, on_response=on_receipt)

    async def grant_all(self, **kwargs: Any) -> Reply:
        """Grant every advertised path, enabling every declared feature set."""
        kwargs.setdefault("enabled", self.set_names())
        return await self.policy(sorted(self.advertised), **kwargs)

    async def policy_notification(self, params: Mapping[str, Any]) -> bool:
        """Send ``featureSets/update`` as a Notification (which must never make it ready)."""
        return await self.notify("featureSets/update", dict(params))

    # -- waiting ---------------------------------------------------------------------------

    async def wait_for(
        self,
        predicate: Callable[[ServerMessage], bool],
        *,
        after: int = 0,
        within: float | None = None,
    ) -> ServerMessage | None:
        """The first message after wire position ``after`` matching ``predicate``, or None."""
        limit = self.options.expect_within if within is None else within
        with anyio.move_on_after(limit):
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if message.position > after and predicate(message):
                        return message
                seen = len(self.messages)
                await self._changed.wait()
        return None

    async def watch(self, seconds: float | None = None) -> None:
        """Observe the connection for ``seconds`` (default: the silence window)."""
        await anyio.sleep(self.options.silence if seconds is None else seconds)

    async def quiet(self, *, window: float | None = None, limit: float | None = None) -> None:
        """Return once no frame has arrived for ``window`` s, or after ``limit`` s at most."""
        window = self.options.quiet if window is None else window
        with anyio.move_on_after(self.options.expect_within if limit is None else limit):
            while True:
                remaining = self._last_frame + window - anyio.current_time()
                if remaining <= 0:
                    return
                with anyio.move_on_after(remaining):
                    await self._changed.wait()

    async def barrier(self) -> Reply:
        """A ``ping`` round trip: the server has read everything sent before it."""
        return await self.call("ping", {})
