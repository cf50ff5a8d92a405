"""The lifecycle verb decline: deliberately stay out of a channel one was addressed in.

What this module knows (channel-registry.md §7.5): ``decline`` refuses only a channel whose
transport is open (one desired open whose open failed can be declined), records
``closed``/``invitation-declined`` (the latest deliberate close wins), may post an
acknowledgment (``channels/acknowledge`` with ``intent: seen-not-opening``) when the connector
is up and granted ``channels.acknowledge``, closes the channel through its queue when it may
still be open, and appends an ``invitation-declined`` audit line naming what was posted (only
an acknowledgment the connector confirmed). The status is ``remained closed`` when the channel
is known closed, else ``close not confirmed`` with why. A decline that did nothing raises a
:class:`~switchboard.refusals.refusal.Refusal` (``unknown-channel``, ``tuned-out``,
``nothing-to-decline``, ``not-recorded``).

What it deliberately does not know: names and tool result shapes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from switchboard.channels import ChannelRef
from switchboard.channels.names.wording import q
from switchboard.connections.owner import Owners, SessionState
from switchboard.lifecycle.answers import LifecycleAnswer, VerbBase, refuse
from switchboard.lifecycle.errors import LifecycleError, not_up_clause
from switchboard.lifecycle.journal import DecisionNotRecorded
from switchboard.lifecycle.parts import LifecycleParts
from switchboard.lifecycle.rules.decisions import DesiredState, Source, Vetoed
from switchboard.lifecycle.rules.events import InvitationDeclined
from switchboard.lifecycle.rules.speech import Reach, lifecycle_withheld_text
from switchboard.refusals.refusal import ASK_TO_CLOSE, RefusalKind
from switchboard.transport import LinkClosedError, RequestTimeoutError, RpcError

__all__ = ["Decliner"]


class Decliner(VerbBase):
    """``decline`` over the lifecycle's parts.

    Args:
        parts: The lifecycle parts the verb works over.
        owners: The owner of each connector (the acknowledgment goes through it).
    """

    def __init__(self, parts: LifecycleParts, *, owners: Owners) -> None:
        super().__init__(parts)
        self._owners = owners

    # -- decline ------------------------------------------------------------------------------

    async def decline(
        self,
        ref: ChannelRef,
        *,
        message_id: str,
        acknowledge: str | None = None,
        by_agent: str | None = None,
    ) -> LifecycleAnswer:
        """Deliberately stay out of ``ref`` after being addressed there (``channel_decline``)."""
        parts = self._parts
        connectors = parts.connectors
        entry = parts.registry.get(ref)
        if entry is None:
            raise self._unregistered(ref)
        shown = self._shown(ref)
        record = parts.book.record(ref)
        if record is not None and record.state is DesiredState.TUNED_OUT:
            raise self._tuned_out(ref, "channel_decline", meanwhile=False)
        if parts.marks.get(entry).open:
            text = f"Channel {shown} is open, so there is nothing to decline"
            step = None
            sid = ref.server_id
            if connectors.reach(sid) is Reach.UP and not connectors.directs(sid):
                text += f", and {lifecycle_withheld_text(sid)}"
                step = ASK_TO_CLOSE
            raise refuse(ref, RefusalKind.NOTHING_TO_DECLINE, text + ".", step)
        try:
            decision = await parts.decider.decide(
                ref, DesiredState.CLOSED, Source.INVITATION_DECLINED, by_agent=by_agent
            )
        except DecisionNotRecorded as exc:
            text = (
                f"Nothing changed for channel {shown}: recording the decline failed ({exc}), so "
                "no acknowledgment was posted and nothing was sent to the server."
            )
            raise refuse(ref, RefusalKind.NOT_RECORDED, text) from exc
        if isinstance(decision.answer, Vetoed):
            raise self._tuned_out(ref, "channel_decline", meanwhile=True)
        acknowledged, representation, ack_error = await self._acknowledge(
            ref, message_id, acknowledge
        )
        close_error: str | None = None
        current = parts.registry.get(ref)
        if (
            current is not None
            and connectors.directs(ref.server_id)
            and parts.book.state(ref) is DesiredState.CLOSED
            and (parts.marks.get(current).may_be_open or parts.queue.pending(ref))
        ):
            try:
                await parts.reconciler.run(ref)
            except LifecycleError as exc:
                close_error = exc.reason
        posted = (representation or acknowledge) if acknowledged else None
        with contextlib.suppress(DecisionNotRecorded):  # an audit line; the decline stands
            await parts.decider.note(
                InvitationDeclined(ref, message_id, parts.decider.now(), posted)
            )
        current = parts.registry.get(ref)
        state = None if current is None else parts.marks.get(current)
        closed = state is not None and not state.may_be_open and not parts.queue.pending(ref)
        if closed:
            status, text = "remained closed", ""
        else:
            status = "close not confirmed"
            text = (
                f"The decline of channel {shown} is recorded, but the channel may still be open "
                f"at its server ({close_error or 'its close has not been confirmed'}); the host "
                "closes it when it can."
            )
        return LifecycleAnswer(
            ref,
            status,
            text,
            acknowledged=acknowledged if acknowledge is not None else None,
            representation=representation,
            acknowledgment_error=ack_error,
        )

    async def _acknowledge(
        self, ref: ChannelRef, message_id: str, value: str | None
    ) -> tuple[bool, str | None, str | None]:
        """Post the optional acknowledgment: (acknowledged, representation, error)."""
        if value is None:
            return False, None, None
        sid = ref.server_id
        session = self._owners.get(sid)
        if session is None or session.state is not SessionState.READY or not session.connected:
            return False, None, f"{not_up_clause(sid)}, so no acknowledgment was posted"
        if not session.grant.allows("channels.acknowledge"):
            return (
                False,
                None,
                (
                    f"server {q(sid)} is not granted channels.acknowledge, so no acknowledgment "
                    "was posted"
                ),
            )
        params = {
            "channelId": ref.channel_id,
            "messageId": message_id,
            "intent": "seen-not-opening",
            "value": value,
        }
        try:
            result = await session.acknowledge(params)
        except (RpcError, RequestTimeoutError, LinkClosedError) as exc:
            return False, None, f"the acknowledgment failed: {exc}"
        answer: Mapping[str, Any] = result if isinstance(result, Mapping) else {}
        acknowledged = answer.get("acknowledged") is True
        shown = answer.get("representation")
        representation = shown if isinstance(shown, str) else None
        if acknowledged:
            return True, representation, None
        reason = answer.get("reason")
        return (
            False,
            representation,
            (reason if isinstance(reason, str) and reason else "the server did not acknowledge it"),
        )
