"""The kit as a connector on one connection: what it advertises, answers, and records.

:class:`KitConnector` plays the connector's half of the handshake with the manifest and the
receipts a check chooses (at once, or when the check releases them), announces and serves
manifest changes, answers hooks (or never, to see a timeout), records every message the host
sends before answering it, and calls the host without ever raising.

What it deliberately does not know: what any check concludes from the traffic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio

from switchboard.protocol import MCP_PROTOCOL_VERSION, MCPL_VERSION
from switchboard.transport import Deferred, LinkClosedError, Peer, method_not_found

from ..common.options import SuiteOptions
from ..common.outcomes import NotExercised
from ..common.reply import Reply, ask, tell
from ..common.transcript import RecordingLink

__all__ = [
    "ACCEPTED",
    "CHANNELS_ONLY",
    "POLICY_CHECK",
    "HostMessage",
    "KitConnector",
    "manifest_of",
    "no_policy",
]

CHANNELS_ONLY: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": {"register": True, "publish": True, "incoming": True},
}
"""The default advertisement: channels without streaming (so H-46 is observable)."""

ACCEPTED: Final[Mapping[str, Any]] = {"accepted": True}
"""The default receipt: the policy accepted, nothing degraded."""

POLICY_CHECK: Final = "host.policy.initial_update_is_request"
"""The check that fails when the host sends no policy Request; the others defer to it."""


def no_policy(policy: HostMessage | None, within: float) -> NotExercised:
    """The verdict of a check that needs the policy exchange when the host never began it."""
    what = (
        f"no featureSets/update arrived within {within:g} s"
        if policy is None
        else "featureSets/update came as a Notification, which has no receipt"
    )
    return NotExercised(
        f"the host sent no policy Request to answer ({what}), so this could not be tried "
        f"(one failure, reported by {POLICY_CHECK})"
    )


def manifest_of(mcpl: Mapping[str, Any] | None) -> dict[str, Any]:
    """An ``initialize`` result carrying ``mcpl`` as its manifest (none: a plain MCP server)."""
    capabilities: dict[str, Any] = {}
    if mcpl is not None:
        capabilities["experimental"] = {"mcpl": dict(mcpl)}
    return {
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "capabilities": capabilities,
        "serverInfo": {"name": "switchboard-conformance-connector", "version": "0"},
    }


@dataclass(frozen=True, slots=True)
class HostMessage:
    """A request or notification the host sent.

    Attributes:
        position: the wire position of the frame that carried it (1 = first frame).
        method: the method name.
        params: the params as received (``None`` when absent).
        is_request: whether it carried an id.
        after_receipt: whether the kit had already answered the policy when it arrived.
    """

    position: int
    method: str
    params: Any
    is_request: bool
    after_receipt: bool


class KitConnector:
    """One connection from the host under test, with the kit as its connector.

    What it knows:

    - the connector's half of the handshake: it answers ``initialize`` with a manifest of the
      check's choosing (or with none at all, as a plain MCP server), and answers each of the host's
      ``featureSets/update`` Requests with the check's receipt (accepted by default) — at once, or
      only when the check releases it (to act *before* the policy, or while a narrowing is still
      unacknowledged);
    - the connector's half of §17: it announces changes with ``mcpl/manifestChanged`` and answers
      ``mcpl/manifest`` with whatever the check serves (``-32601`` until it serves something);
    - ``context/beforeInference`` answered with no injections, or never (to see a host's timeout);
    - optionally an unknown member added to every result it sends (to see the host tolerate it);
    - every request and notification the host sends, recorded at the wire with its position and
      whether it carried an id (:class:`HostMessage`), before anything answers it;
    - that a check needing the policy exchange, when the host never sends the policy Request, is
      "not exercised" naming that cause (:meth:`KitConnector.require_ready`), so one broken exchange
      is one failure (of :data:`POLICY_CHECK`), not dozens;
    - calls and notifications to the host that never raise (:class:`~..reply.Reply`), raw frames,
      and waiting for a host message that matches a predicate.

    Args:
        link: the recorded link to the host.
        options: the suite's timing.
        advertisement: the ``experimental.mcpl`` object the kit answers ``initialize`` with;
            ``None`` answers as a plain MCP server.
        hold_policy: leave the policy Request unanswered until :meth:`release_policy`.
        receipt: the answer to every policy Request.
        extra_fields: members added to every object result the kit sends.
        hold_hooks: never answer ``context/beforeInference`` (to see the host time out);
            otherwise it is answered at once with no injections.
    """

    def __init__(
        self,
        link: RecordingLink,
        options: SuiteOptions,
        advertisement: Mapping[str, Any] | None = CHANNELS_ONLY,
        *,
        hold_policy: bool = False,
        receipt: Mapping[str, Any] = ACCEPTED,
        extra_fields: Mapping[str, Any] | None = None,
        hold_hooks: bool = False,
    ) -> None:
        self.link = link
        self.hold_hooks = hold_hooks
        self.options = options
        self.advertisement = advertisement
        self.receipt = dict(receipt)
        self.extra_fields = dict(extra_fields or {})
        self.messages: list[HostMessage] = []
        self.receipt_sent = False
        self.served_manifest: Any = None
        self._serving_manifest = False
        self._release = anyio.Event()
        if not hold_policy:
            self._release.set()
        self._changed = anyio.Event()
        link.set_observer(self._observe)
        self.peer = Peer(
            link,
            on_request=self._answer,
            on_notification=self._ignore,
            name="conformance-connector",
            default_timeout=options.request_timeout,
        )

    # -- recording -------------------------------------------------------------------------

    def _observe(self, frame: bytes, position: int) -> None:
        try:
            decoded = json.loads(frame)
        except ValueError:
            decoded = None
        for item in decoded if isinstance(decoded, list) else (decoded,):
            if isinstance(item, dict) and isinstance(item.get("method"), str):
                self.messages.append(
                    HostMessage(
                        position,
                        item["method"],
                        item.get("params"),
                        "id" in item,
                        self.receipt_sent,
                    )
                )
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def _ignore(self, method: str, params: Any) -> None:
        """Notifications are recorded at the wire; nothing more to do."""

    def methods(self) -> list[str]:
        """Every method the host sent so far, in wire order."""
        return [m.method for m in self.messages]

    def sent(self, method: str, *, after: int = 0) -> list[HostMessage]:
        """The host's messages of ``method`` at wire positions after ``after``."""
        return [m for m in self.messages if m.method == method and m.position > after]

    # -- answering -------------------------------------------------------------------------

    async def _answer(self, method: str, params: Any) -> Any:
        if method == "featureSets/update":
            release = self._release
            return Deferred(lambda: self._receipt(release))
        if method == "context/beforeInference" and self.hold_hooks:
            return Deferred(anyio.sleep_forever)
        return self._with_extra(self._result_for(method))

    def _result_for(self, method: str) -> Any:
        if method == "initialize":
            return manifest_of(self.advertisement)
        if method == "ping":
            return {}
        if method == "channels/publish":
            return {"delivered": True, "messageId": f"kit-{len(self.messages)}"}
        if method in ("channels/open", "channels/close"):
            return {}
        if method == "context/beforeInference":
            return {"featureSet": "kit", "contextInjections": []}
        if method == "mcpl/manifest" and self._serving_manifest:
            return self.served_manifest
        raise method_not_found(method)

    def _with_extra(self, result: Any) -> Any:
        if self.extra_fields and isinstance(result, dict):
            return {**result, **self.extra_fields}
        return result

    async def _receipt(self, release: anyio.Event) -> Any:
        await release.wait()
        self.receipt_sent = True
        self._wake()
        return self._with_extra(dict(self.receipt))

    def release_policy(self) -> None:
        """Answer the held policy Requests (and any later one) with the receipt."""
        self._release.set()

    def hold_policy(self) -> None:
        """Leave every policy Request from now on unanswered until :meth:`release_policy`."""
        if self._release.is_set():
            self._release = anyio.Event()

    def serve_manifest(self, manifest: Any) -> None:
        """Answer ``mcpl/manifest`` with ``manifest`` from now on (any JSON value)."""
        self.served_manifest = manifest
        self._serving_manifest = True

    # -- calls -----------------------------------------------------------------------------

    async def call(self, method: str, params: Any = None) -> Reply:
        """Send a request and return the host's answer, whatever it is."""
        return await ask(self.peer, method, params, self.options.request_timeout)

    async def notify(self, method: str, params: Any = None) -> bool:
        """Send a notification; ``False`` when the connection is closed."""
        return await tell(self.peer, method, params)

    async def send_raw(self, data: bytes) -> bool:
        """Write ``data`` as one frame, JSON or not; ``False`` when the connection is closed."""
        try:
            await self.link.send_raw(data)
        except LinkClosedError:
            return False
        return True

    # -- waiting ---------------------------------------------------------------------------

    async def wait_for(
        self, predicate: Callable[[HostMessage], bool], *, within: float | None = None
    ) -> HostMessage | None:
        """The first host message matching ``predicate``, or ``None`` after ``within`` s."""
        limit = self.options.expect_within if within is None else within
        with anyio.move_on_after(limit):
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                await self._changed.wait()
        return None

    async def policy_request(self) -> HostMessage | None:
        """The host's first ``featureSets/update`` (Request or not), if it comes in time."""
        return await self.wait_for(lambda m: m.method == "featureSets/update")

    async def ready(self) -> HostMessage | None:
        """Wait for the policy Request and the kit's receipt; ``None`` if none came."""
        policy = await self.policy_request()
        if policy is None or not policy.is_request:
            return None
        with anyio.move_on_after(self.options.expect_within):
            while not self.receipt_sent:
                await self._changed.wait()
        await self.call("ping", {})  # the host has read the receipt before this answer
        return policy

    async def require_ready(self) -> HostMessage:
        """:meth:`ready`, or end the check "not exercised" naming the missing policy Request.

        Raises:
            NotExercised: the host sent no policy Request (its own check fails for that).
        """
        policy = await self.ready()
        if policy is None:
            first = next((m for m in self.messages if m.method == "featureSets/update"), None)
            raise no_policy(first, self.options.expect_within)
        return policy
