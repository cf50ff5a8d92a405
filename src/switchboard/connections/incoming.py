"""``channels/incoming`` and ``push/event``: admission at receipt, then the durable store.

Every message is checked when it arrives against the channel *this* connection registered, its
direction and the per-channel narrowing (MCPL §14.5); results are per message. Accepted
messages go to the store synchronously (arrival order kept) and the answer leaves only once the
store committed them; then one ``MessagesAccepted`` (or ``PushAccepted``) tells the batch. A
batch past the rate limit or refused by the store's disk is refused whole, so a connector that
sends it again loses nothing. The hot path reads checked messages and stores their own bytes.

What it deliberately does not know: the wire framing, agents, and what listeners do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any

import orjson
import structlog

from switchboard.channels import ChannelEntry, ChannelRef, ChannelRegistry
from switchboard.connections.diagnostics import INCOMING_REFUSED, RefusalLog
from switchboard.connections.limits import (
    TokenBucket,
    message_rate_refusal,
    storage_unavailable_error,
)
from switchboard.events import EventBus, MessagesAccepted, PushAccepted
from switchboard.protocol import PushEventParams, validate_incoming
from switchboard.protocol.fastpath import CheckedMessages, accepted_results, incoming_is_valid
from switchboard.protocol.messages import MessageProblem
from switchboard.runtime.ratelog import RateLimitedLog
from switchboard.store import (
    AppendResult,
    FreshResults,
    MessageStoreProtocol,
    RawMessages,
    StorageUnavailableError,
)
from switchboard.transport import Deferred, ParamProblem, invalid_params

__all__ = ["IncomingHandler"]

_channel_of = attrgetter("channelId")
_message_of = attrgetter("messageId")
_direction = attrgetter("descriptor.direction")

log = structlog.get_logger(__name__)

_NOT_REGISTERED = "unknown channel: not registered by this connection"
_OUTBOUND = "outbound"
_OUTBOUND_ONLY = "channel is outbound-only and receives nothing"
_NOT_PERMITTED = "channel not permitted by host policy"
_UNSEEN: Any = object()  # a channel not judged yet in this batch (None means admitted)


class IncomingHandler:
    """Admits, stores and acknowledges what one connector sends in.

    Every message is checked when it arrives (MCPL §14.5): against the channel actually registered
    by *this* connection (a claimed id that was never registered confers nothing), the descriptor's
    direction (an outbound-only channel receives nothing) and the configured per-channel narrowing.
    The method gate itself was checked by the session against the current grant. Results are per
    message. Accepted messages are handed to the store synchronously, so arrival order is kept, and
    the answer goes back only once the store has committed them (a :class:`Deferred`, so the next
    request is read while this one waits for its commit). Once committed, a batch with new messages
    is told as one :class:`~switchboard.events.MessagesAccepted` (a new push event as one
    :class:`~switchboard.events.PushAccepted`).

    Every message refused is counted and logged, rate-limited, through the connection's
    :class:`~switchboard.connections.diagnostics.RefusalLog` (one series per reason).

    Two refusals take the whole batch and acknowledge none of it, so a connector that sends again
    what was not acknowledged loses nothing (docs/operations.md, "Limits" and "Storage failures"): a
    batch past ``max_messages_per_second`` (a token bucket, checked once per batch) gets ``-32603``
    with ``data.reason = "rate-limited"`` and ``retryAfterMs``; a batch the store's disk refused
    gets ``-32603`` with ``data.reason = "storage-unavailable"`` and the ``detail``.
    """

    def __init__(
        self,
        *,
        server_id: str,
        registry: ChannelRegistry,
        store: MessageStoreProtocol,
        events: EventBus,
        clock: Callable[[], float],
        permits: Callable[[str], bool] | None,
        refusals: RefusalLog | None = None,
        rate: TokenBucket | None = None,
        noted: RateLimitedLog | None = None,
    ) -> None:
        self._rate = rate
        # What a connector may repeat (an ambiguous push origin), logged rate-limited.
        self._noted = noted if noted is not None else RateLimitedLog(log.bind(server_id=server_id))
        self._refusals = refusals
        self._server_id = server_id
        self._registry = registry
        self._store = store
        self._events = events
        self._clock = clock
        self._permits = permits

    async def handle(self, params: Any) -> Deferred:
        raw = params.get("messages") if isinstance(params, dict) else None
        if not isinstance(raw, list):
            raise invalid_params(ParamProblem("messages", "must be an array of messages"))
        rate = self._rate
        if rate is not None and (wait := rate.take(len(raw))):
            raise message_rate_refusal(rate.rate, wait)
        if type(raw) is CheckedMessages:
            return self._handle_checked(raw)
        results: list[dict[str, Any]] = []
        accepted: list[dict[str, Any]] = []
        verdicts: dict[str, str | None] = {}
        # The server's live entries by channel id: one dict lookup per channel per batch.
        channels = self._registry.server_channels(self._server_id)
        permits = self._permits
        is_valid = incoming_is_valid
        for item in raw:
            if is_valid(item):
                cid = item["channelId"]
                mid = item["messageId"]
            else:
                checked = validate_incoming([item])[0]
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
                mid = checked.message_id
            reason = verdicts.get(cid, _UNSEEN)
            if reason is _UNSEEN:
                reason = verdicts[cid] = _verdict(channels.get(cid), cid, permits)
            if reason is None:
                results.append({"messageId": mid, "accepted": True})
                accepted.append(item)
            else:
                results.append({"messageId": mid, "accepted": False, "reason": reason})
        if len(accepted) < len(results) and self._refusals is not None:
            self._count_refused(results)
        if not accepted:
            return Deferred(_ready({"results": results}))
        sid = self._server_id
        committed = self._store.submit_wire(sid, accepted, received_at=self._clock())
        emit = self._events.emit
        answer = {"results": results}

        def after_commit(stored: Sequence[AppendResult]) -> dict[str, Any]:
            return answer

        def announce(stored: Sequence[AppendResult]) -> None:
            # After the answer left: the connector's ack waits for the commit, not for the
            # listeners.
            fresh = [m for m, s in zip(accepted, stored, strict=True) if not s.duplicate]
            if len(fresh) == len(accepted):
                # The channels admitted above are exactly the batch's (each once).
                channels = [cid for cid, why in verdicts.items() if why is None]
                emit(MessagesAccepted(sid, fresh, channels, last_seq=stored[-1].seq))
            elif fresh:
                last = max(s.seq for s in stored if not s.duplicate)
                emit(MessagesAccepted(sid, fresh, last_seq=last))

        return _deferred(committed, after_commit, announce)

    def _handle_checked(self, checked: CheckedMessages) -> Deferred:
        """:meth:`handle` for a batch the transport already read and checked (the hot path):
        the same verdicts, and the accepted messages stored as the bytes they came in."""
        channels = self._registry.server_channels(self._server_id)
        permits = self._permits
        sid = self._server_id
        # Each distinct channel judged once, in C where the batch is the common case: every
        # channel registered here, none outbound-only, and no permits to ask.
        cids = list(map(_channel_of, checked))
        distinct = dict.fromkeys(cids)
        entries = list(map(channels.get, distinct))
        verdicts: dict[str, str | None]
        if permits is None and None not in entries and _OUTBOUND not in map(_direction, entries):
            verdicts = distinct  # every one None: admitted
            all_in = True
        else:
            verdicts = {
                cid: _verdict(entry, cid, permits)
                for cid, entry in zip(distinct, entries, strict=True)
            }
            all_in = not any(verdicts.values())
        results: list[dict[str, Any]] | orjson.Fragment
        keys: list[tuple[str, str, str]]
        positions: list[int] = []
        if all_in:  # the common case: the answer written once, the keys made in C
            mids = list(map(_message_of, checked))
            keys = list(zip(repeat(sid), cids, mids))
            written = accepted_results(mids, "messageId")
            results = (
                [{"messageId": mid, "accepted": True} for mid in mids]
                if written is None
                else written
            )
        else:
            each: list[dict[str, Any]] = []
            keys = []
            for position, message in enumerate(checked):
                cid, mid = message.channelId, message.messageId
                reason = verdicts[cid]
                if reason is None:
                    each.append({"messageId": mid, "accepted": True})
                    keys.append((sid, cid, mid))
                    positions.append(position)
                else:
                    each.append({"messageId": mid, "accepted": False, "reason": reason})
            if self._refusals is not None:
                self._count_refused(each)
            results = each
        if not keys:
            return Deferred(_ready({"results": results}))
        batch = RawMessages(checked.raws, checked.body)
        accepted = batch if all_in else batch.pick(positions)
        committed = self._store.submit_raw(keys, accepted, received_at=self._clock())
        emit = self._events.emit
        answer = {"results": results}

        def after_commit(stored: Sequence[AppendResult]) -> dict[str, Any]:
            return answer

        def announce(stored: Sequence[AppendResult]) -> None:
            if type(stored) is FreshResults:  # none a duplicate: nothing to look through
                admitted = [cid for cid, why in verdicts.items() if why is None]
                last = stored.first_seq + stored.length - 1
                emit(MessagesAccepted(sid, accepted, admitted, checked if all_in else None, last))
                return
            fresh = [i for i, s in enumerate(stored) if not s.duplicate]
            if len(fresh) == len(keys):
                admitted = [cid for cid, why in verdicts.items() if why is None]
                emit(MessagesAccepted(sid, accepted, admitted, last_seq=stored[-1].seq))
            elif fresh:
                ids = {keys[i][1] for i in fresh}
                last = stored[fresh[-1]].seq
                emit(MessagesAccepted(sid, accepted.pick(fresh), ids, last_seq=last))

        return _deferred(committed, after_commit, announce)

    def _count_refused(self, results: list[dict[str, Any]]) -> None:
        """One refusal series per reason, with the count and a sample message id."""
        refusals = self._refusals
        assert refusals is not None
        per_reason: dict[str, list[str]] = {}
        for r in results:
            if not r["accepted"]:
                per_reason.setdefault(r["reason"], []).append(r["messageId"])
        for reason, ids in per_reason.items():
            refusals.refuse(
                INCOMING_REFUSED,
                "channels/incoming",
                reason,
                count=len(ids),
                message_id=ids[0],
            )

    async def push_event(
        self, params: Any, check_feature_set: Callable[[str, str], None]
    ) -> Deferred:
        p = PushEventParams.model_validate(params)
        check_feature_set(p.feature_set, "pushEvents")
        origin = p.origin or {}
        channel_id = self._origin_channel(origin)
        message: dict[str, Any] = {
            "channelId": channel_id,
            "messageId": f"event:{p.event_id}",
            "author": {
                "id": str(origin.get("authorId", "")),
                "name": str(origin.get("authorName", p.feature_set)),
            },
            "timestamp": p.timestamp,
            "content": params["payload"]["content"],
            "metadata": {"kind": "push/event", "featureSet": p.feature_set, "origin": origin},
        }
        if p.tags is not None:
            message["tags"] = p.tags
        committed = self._store.submit_wire(self._server_id, [message], received_at=self._clock())
        emit = self._events.emit
        sid = self._server_id

        async def after_commit() -> dict[str, Any]:
            try:
                stored = await committed
            except StorageUnavailableError as exc:
                raise storage_unavailable_error(exc.cause) from None
            if not stored[0].duplicate:
                emit(PushAccepted(sid, message, stored[0].seq))
            return {"accepted": True}

        return Deferred(after_commit())

    def _origin_channel(self, origin: Mapping[str, Any]) -> str:
        """The registered channel a push's ``origin`` names, or ``""`` when none.

        ``mcplChannelId`` first; else ``channelId`` as an MCPL id of this connection; else
        ``channelId`` as a platform-native id, matched against the ``address.channelId`` of this
        connection's descriptors (an index lookup). A native id two of its channels share
        names neither: the push lands with no channel rather than in a guessed one.
        """
        sid = self._server_id
        registry = self._registry
        mcpl_id = origin.get("mcplChannelId")
        if isinstance(mcpl_id, str) and ChannelRef(sid, mcpl_id) in registry:
            return mcpl_id
        native = origin.get("channelId")
        if isinstance(native, int) and not isinstance(native, bool):
            native = str(native)
        if not isinstance(native, str) or not native:
            return ""
        if ChannelRef(sid, native) in registry:
            return native
        found = [e.ref.channel_id for e in registry.by_raw_id(native) if e.ref.server_id == sid]
        if len(found) == 1:
            return found[0]
        if found:
            self._noted.note(
                ("push_origin_ambiguous",),
                "push_origin_ambiguous",
                level="info",
                native_id=native,
                candidates=found,
            )
        return ""


def _verdict(
    entry: ChannelEntry | None, cid: str, permits: Callable[[str], bool] | None
) -> str | None:
    """Why messages for ``cid`` (this connection's live ``entry`` of it) are refused right
    now, or None to admit them."""
    if entry is None:
        return _NOT_REGISTERED
    if entry.descriptor.direction == _OUTBOUND:
        return _OUTBOUND_ONLY
    if permits is not None and not permits(cid):
        return _NOT_PERMITTED
    return None


async def _ready(value: dict[str, Any]) -> dict[str, Any]:
    return value


def _deferred(
    committed: Awaitable[Sequence[AppendResult]],
    then: Callable[[Sequence[AppendResult]], dict[str, Any]],
    after: Callable[[Sequence[AppendResult]], None] | None = None,
) -> Deferred:
    """Answer once the store committed: from the future's callback when it is one (no task).

    ``after`` runs once the answer has been handed over (with the future: see
    :meth:`Deferred.on_future`; otherwise just before, in the same task). A commit the store's
    disk refused is answered with :func:`storage_unavailable_error`.
    """
    if asyncio.isfuture(committed):  # cheap; a runtime Protocol check costs ~30 µs here
        # The peer settles from the store's own future: no second future, no extra hop.
        return Deferred.on_future(committed, then, failed=_answered_error, after=after)

    async def wait() -> dict[str, Any]:
        try:
            stored = await committed
        except StorageUnavailableError as exc:
            raise storage_unavailable_error(exc.cause) from None
        if after is not None:
            after(stored)
        return then(stored)

    return Deferred(wait())


def _answered_error(exc: Exception) -> Exception:
    """The error a failed commit is answered with: the storage outage's, else its own."""
    if isinstance(exc, StorageUnavailableError):
        return storage_unavailable_error(exc.cause)
    return exc
