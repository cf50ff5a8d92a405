"""What a lifecycle verb answers, and the refusals every verb shares.

What this module knows: :class:`Origin` (who calls: trusted dispatch context, never tool
input), :class:`LifecycleAnswer` (what a verb did), and :class:`VerbBase`, the refusals common
to ``open``, ``close`` and ``decline``: a channel no longer registered, a tuned-out channel (with
how its tune-out ends), and a decision that is recorded but cannot be carried out now (the
connector is down, or does not let this host open or close its channels). A verb that did
nothing raises a :class:`~switchboard.refusals.refusal.Refusal` naming the channel (``server_id``,
``channel_id``).

What it deliberately does not know: the flows of the verbs (:mod:`.verbs`,
:mod:`.decline`) and the tools' result shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from switchboard.channels import ChannelRef
from switchboard.channels.names.wording import q
from switchboard.lifecycle.errors import not_up_clause
from switchboard.lifecycle.parts import LifecycleParts
from switchboard.lifecycle.rules.speech import Reach, lifecycle_withheld_text
from switchboard.lifecycle.rules.words import tuned_out_meanwhile_text, tuned_out_refusal_text
from switchboard.refusals.refusal import GONE, Refusal, RefusalKind

__all__ = ["LifecycleAnswer", "Origin", "VerbBase", "refuse"]


class Origin(StrEnum):
    """Who calls a verb (trusted dispatch context, never tool input)."""

    AGENT = "agent"
    MODULE = "module"


@dataclass(frozen=True, slots=True)
class LifecycleAnswer:
    """What a verb did (a verb that did nothing raises a refusal instead).

    Attributes:
        ref: The channel.
        status: ``opened``, ``reconciled``, ``already open``, ``closed``, ``already closed``,
            ``remained closed``, ``close not confirmed``, ``recorded`` (the connector is not
            connected: it happens when it is) or ``not directed`` (the connector does not let
            this host open or close its channels).
        text: A note (may be empty).
        history: The messages before the anchor that an open asked for (oldest first).
        history_truncated: The connector had more history than it returned.
        acknowledged: For a decline that asked: whether the acknowledgment was posted.
        representation: How the connector represented it, if it said.
        acknowledgment_error: Why it was not posted.
    """

    ref: ChannelRef
    status: str
    text: str = ""
    history: tuple[Any, ...] | None = None
    history_truncated: bool | None = None
    acknowledged: bool | None = None
    representation: str | None = None
    acknowledgment_error: str | None = None


def refuse(
    ref: ChannelRef,
    kind: RefusalKind,
    text: str,
    next_step: str | None = None,
    *,
    stand_down: bool = False,
) -> Refusal:
    """The refusal of a verb on ``ref`` (it names the channel as data)."""
    return Refusal(
        kind,
        text,
        next_step,
        stand_down=stand_down,
        server_id=ref.server_id,
        channel_id=ref.channel_id,
    )


class VerbBase:
    """The refusals every verb shares, over the lifecycle's parts."""

    def __init__(self, parts: LifecycleParts) -> None:
        self._parts = parts

    def _shown(self, ref: ChannelRef) -> str:
        return self._parts.registry.names.quoted_shown(ref)

    def _tuned_out(
        self, ref: ChannelRef, tool: str, *, meanwhile: bool, stand_down: bool = False
    ) -> Refusal:
        name = self._parts.registry.names.name_for(ref)
        words = tuned_out_meanwhile_text if meanwhile else tuned_out_refusal_text
        text = words(self._shown(ref), name, tool)
        return refuse(ref, RefusalKind.TUNED_OUT, text, stand_down=stand_down)

    def _unregistered(self, ref: ChannelRef) -> Refusal:
        text = f"server {q(ref.server_id)} no longer registers channel {q(ref.channel_id)}"
        refusal = refuse(ref, RefusalKind.UNKNOWN_CHANNEL, text + "; nothing ran.", GONE)
        return refusal.adding(gone=True)

    def _undirected(self, ref: ChannelRef, what: str) -> LifecycleAnswer:
        """The decision is recorded but nothing can be sent to the connector now."""
        sid = ref.server_id
        if self._parts.connectors.reach(sid) is Reach.UP:
            text = (
                f"{lifecycle_withheld_text(sid)}. Your decision to {what} channel "
                f"{self._shown(ref)} is recorded and applies if that server is ever granted "
                "channels.lifecycle."
            )
            return LifecycleAnswer(ref, "not directed", text)
        text = (
            f"{not_up_clause(sid)}. The decision to {what} channel {self._shown(ref)} is "
            "recorded and carried out when that server registers it again."
        )
        return LifecycleAnswer(ref, "recorded", text)
