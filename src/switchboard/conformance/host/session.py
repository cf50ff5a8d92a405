"""The kit as a connector on one connection: what it advertises, answers, and records.

What this module knows:

- the connector's half of the handshake: it answers ``initialize`` with a manifest of the
  check's choosing, and answers the host's ``featureSets/update`` Request with an accepted
  receipt — at once, or only when the check releases it (to act *before* the policy);
- every request and notification the host sends, recorded at the wire with its position and
  whether it carried an id (:class:`HostMessage`), before anything answers it;
- calls to the host that never raise (:class:`~..server.session.Reply`), raw frames, and
  waiting for a host message that matches a predicate.

What it deliberately does not know: what any check concludes from the traffic.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio

from switchboard.protocol import MCP_PROTOCOL_VERSION, MCPL_VERSION
from switchboard.transport import (
    METHOD_NOT_FOUND,
    Deferred,
    LinkClosedError,
    Peer,
    RequestTimeoutError,
    RpcError,
)

from ..server.options import SuiteOptions
from ..server.session import Reply
from ..transcript import RecordingLink

__all__ = ["CHANNELS_ONLY", "HostMessage", "KitConnector", "manifest_of"]

CHANNELS_ONLY: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": {"register": True, "publish": True, "incoming": True},
}
"""The default advertisement: channels without streaming (so H-46 is observable)."""


def manifest_of(mcpl: Mapping[str, Any]) -> dict[str, Any]:
    """An ``initialize`` result carrying ``mcpl`` as its manifest."""
    return {
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "capabilities": {"experimental": {"mcpl": dict(mcpl)}},
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

    Args:
        link: the recorded link to the host.
        options: the suite's timing.
        advertisement: the ``experimental.mcpl`` object the kit answers ``initialize`` with.
        hold_policy: leave the policy Request unanswered until :meth:`release_policy`.
    """

    def __init__(
        self,
        link: RecordingLink,
        options: SuiteOptions,
        advertisement: Mapping[str, Any] = CHANNELS_ONLY,
        *,
        hold_policy: bool = False,
    ) -> None:
        self.link = link
        self.options = options
        self.advertisement = advertisement
        self.messages: list[HostMessage] = []
        self.receipt_sent = False
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

    # -- answering -------------------------------------------------------------------------

    async def _answer(self, method: str, params: Any) -> Any:
        if method == "initialize":
            return manifest_of(self.advertisement)
        if method == "featureSets/update":
            return Deferred(self._receipt)
        if method == "ping":
            return {}
        if method == "channels/publish":
            return {"delivered": True, "messageId": f"kit-{len(self.messages)}"}
        if method in ("channels/open", "channels/close"):
            return {}
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _receipt(self) -> dict[str, Any]:
        await self._release.wait()
        self.receipt_sent = True
        self._wake()
        return {"accepted": True}

    def release_policy(self) -> None:
        """Answer the held policy Request (and any later one) with an accepted receipt."""
        self._release.set()

    # -- calls -----------------------------------------------------------------------------

    async def call(self, method: str, params: Any = None) -> Reply:
        """Send a request and return the host's answer, whatever it is."""
        wait = self.options.request_timeout
        try:
            result = await self.peer.request(method, params, timeout=wait)
        except RpcError as exc:
            return Reply(method, error={"code": exc.code, "message": exc.message, "data": exc.data})
        except RequestTimeoutError:
            return Reply(method, failure=f"no answer to {method} within {wait:g} s")
        except LinkClosedError:
            return Reply(method, failure=f"the connection closed before {method} was answered")
        return Reply(method, result=result)

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
