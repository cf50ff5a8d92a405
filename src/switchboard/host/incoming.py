"""``channels/incoming`` and ``push/event``: admission at receipt, then the durable store.

Every message is checked when it arrives (MCPL §14.5): against the channel actually registered
by *this* connection (a claimed id that was never registered confers nothing), the descriptor's
direction (an outbound-only channel receives nothing) and the configured per-channel narrowing.
The method gate itself was checked by the session against the current grant. Results are
per message. Accepted messages are handed to the store synchronously, so arrival order is kept,
and the answer goes back only once the store has committed them (a :class:`Deferred`, so the
next request is read while this one waits for its commit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.host.events import Observer
from switchboard.protocol import PushEventParams, validate_incoming
from switchboard.protocol.messages import MessageProblem
from switchboard.store import IncomingRecord, MessageStore
from switchboard.transport import INVALID_PARAMS, Deferred, RpcError

log = structlog.get_logger(__name__)

_NOT_REGISTERED = "unknown channel: not registered by this connection"
_OUTBOUND_ONLY = "channel is outbound-only and receives nothing"
_NOT_PERMITTED = "channel not permitted by host policy"


class IncomingHandler:
    """Admits, stores and acknowledges what one connector sends in."""

    def __init__(
        self,
        *,
        server_id: str,
        registry: ChannelRegistry,
        store: MessageStore,
        observer: Observer,
        clock: Callable[[], float],
        permits: Callable[[str], bool],
    ) -> None:
        self._server_id = server_id
        self._registry = registry
        self._store = store
        self._observer = observer
        self._clock = clock
        self._permits = permits

    async def handle(self, params: Any) -> Deferred:
        raw = params.get("messages") if isinstance(params, dict) else None
        if not isinstance(raw, list):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params",
                {"errors": [{"loc": "messages", "msg": "must be an array of messages"}]},
            )
        sid = self._server_id
        get = self._registry.get
        permits = self._permits
        results: list[dict[str, Any]] = []
        records: list[IncomingRecord] = []
        for item, checked in zip(raw, validate_incoming(raw), strict=True):
            if isinstance(checked, MessageProblem):
                results.append(
                    {
                        "messageId": checked.message_id or "",
                        "accepted": False,
                        "reason": checked.reason,
                    }
                )
                continue
            cid = checked.channel_id
            entry = get(ChannelRef(sid, cid))
            reason: str | None
            if entry is None:
                reason = _NOT_REGISTERED
            elif entry.descriptor.direction == "outbound":
                reason = _OUTBOUND_ONLY
            elif not permits(cid):
                reason = _NOT_PERMITTED
            else:
                reason = None
            if reason is not None:
                results.append(
                    {"messageId": checked.message_id, "accepted": False, "reason": reason}
                )
                continue
            author = checked.author
            results.append({"messageId": checked.message_id, "accepted": True})
            records.append(
                IncomingRecord(
                    server_id=sid,
                    channel_id=cid,
                    message_id=checked.message_id,
                    thread_id=checked.thread_id,
                    author_id=author.id,
                    author_name=author.name,
                    timestamp=checked.timestamp,
                    content=item["content"],
                    metadata=item.get("metadata"),
                    tags=item.get("tags"),
                )
            )
        if not records:
            return Deferred(_ready({"results": results}))
        committed = self._store.submit(records, received_at=self._clock())
        observer = self._observer

        async def after_commit() -> dict[str, Any]:
            stored = await committed
            fresh = [r for r, s in zip(records, stored, strict=True) if not s.duplicate]
            if fresh:
                observer("incoming", sid, {"records": fresh})
            return {"results": results}

        return Deferred(after_commit())

    async def push_event(
        self, params: Any, check_feature_set: Callable[[str, str], None]
    ) -> Deferred:
        p = PushEventParams.model_validate(params)
        check_feature_set(p.feature_set, "pushEvents")
        origin = p.origin or {}
        channel_id = origin.get("mcplChannelId")
        if not isinstance(channel_id, str) or ChannelRef(self._server_id, channel_id) not in (
            self._registry
        ):
            channel_id = ""
        record = IncomingRecord(
            server_id=self._server_id,
            channel_id=channel_id,
            message_id=f"event:{p.event_id}",
            thread_id=None,
            author_id=str(origin.get("authorId", "")),
            author_name=str(origin.get("authorName", p.feature_set)),
            timestamp=p.timestamp,
            content=params["payload"]["content"],
            metadata={"kind": "push/event", "featureSet": p.feature_set, "origin": origin},
            tags=p.tags,
        )
        committed = self._store.submit([record], received_at=self._clock())
        observer = self._observer
        sid = self._server_id

        async def after_commit() -> dict[str, Any]:
            stored = await committed
            if not stored[0].duplicate:
                observer("push", sid, {"records": [record]})
            return {"accepted": True}

        return Deferred(after_commit())


async def _ready(value: dict[str, Any]) -> dict[str, Any]:
    return value
