"""What a lifecycle verb answers, and the answers every verb shares.

What this module knows: :class:`Origin` (who calls: trusted dispatch context, never tool
input), :class:`LifecycleAnswer` (a status, or a refusal with its kind, its text and the next
step), and :class:`VerbBase`, the refusals common to ``open``, ``close`` and ``decline``: a
channel no longer registered, a tuned-out channel (with how its tune-out ends), and a decision
that is recorded but cannot be carried out now (the connector is down, or does not let this
host open or close its channels).

What it deliberately does not know: the flows of the verbs (:mod:`.verbs`,
:mod:`.decline`) and the tools' result shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from switchboard.channels import ChannelRef
from switchboard.channels.lifecycle.speech import Reach, lifecycle_withheld_text
from switchboard.channels.tuneouts.delivery import tuned_out_meanwhile_text, tuned_out_refusal_text
from switchboard.host.lifecycle.errors import not_up_clause, q

if TYPE_CHECKING:
    from switchboard.host.lifecycle.host import LifecycleHost

__all__ = ["RETRY", "LifecycleAnswer", "Origin", "VerbBase", "fail"]

RETRY = "call it again; if it fails the same way, ask whoever runs this host"
"""The next step after a decision that could not be recorded."""


class Origin(StrEnum):
    """Who calls a verb (trusted dispatch context, never tool input)."""

    AGENT = "agent"
    MODULE = "module"


@dataclass(frozen=True, slots=True)
class LifecycleAnswer:
    """What a verb did.

    Attributes:
        ref: The channel.
        ok: It did what was asked, or it is recorded to happen (see ``status``).
        status: On success: ``opened``, ``reconciled``, ``already open``, ``closed``,
            ``already closed``, ``remained closed``, ``recorded`` (the connector is not
            connected: it happens when it is) or ``not directed`` (the connector does not
            let this host open or close its channels).
        text: On success a note (may be empty); on failure what happened.
        refusal: On failure, which: ``tuned-out``, ``explicit-open``, ``unknown-source``,
            ``not-recorded``, ``open-failed``, ``close-failed``, ``overtaken``,
            ``superseded``, ``nothing-to-decline``, ``unknown-channel``.
        is_error: Whether the failure is an error for the caller (an ``explicit-open``
            refusal, or a module's ``tuned-out`` refusal, is one it stands down on).
        next_step: What to do next, on failure.
        history: The messages before the anchor that an open asked for (oldest first).
        history_truncated: The connector had more history than it returned.
        acknowledged: For a decline that asked: whether the acknowledgment was posted.
        representation: How the connector represented it, if it said.
        acknowledgment_error: Why it was not posted.
    """

    ref: ChannelRef
    ok: bool
    status: str | None = None
    text: str = ""
    refusal: str | None = None
    is_error: bool = False
    next_step: str = ""
    history: tuple[Any, ...] | None = None
    history_truncated: bool | None = None
    acknowledged: bool | None = None
    representation: str | None = None
    acknowledgment_error: str | None = None


def fail(
    ref: ChannelRef, refusal: str, text: str, next_step: str, *, is_error: bool = True
) -> LifecycleAnswer:
    """A failed answer."""
    return LifecycleAnswer(
        ref, False, text=text, refusal=refusal, is_error=is_error, next_step=next_step
    )


class VerbBase:
    """The refusals every verb shares, over one lifecycle host."""

    def __init__(self, host: LifecycleHost) -> None:
        self._host = host

    def _shown(self, ref: ChannelRef) -> str:
        return self._host.registry.names.quoted_shown(ref)

    def _tuned_out(
        self, ref: ChannelRef, tool: str, *, meanwhile: bool, is_error: bool
    ) -> LifecycleAnswer:
        name = self._host.registry.names.name_for(ref)
        words = tuned_out_meanwhile_text if meanwhile else tuned_out_refusal_text
        text = words(self._shown(ref), name, tool)
        return fail(ref, "tuned-out", text, "see how the tune-out ends above", is_error=is_error)

    def _unregistered(self, ref: ChannelRef) -> LifecycleAnswer:
        text = f"server {q(ref.server_id)} no longer registers channel {q(ref.channel_id)}"
        return fail(ref, "unknown-channel", text + "; nothing ran.", "call channel_list")

    def _undirected(self, ref: ChannelRef, what: str) -> LifecycleAnswer:
        """The decision is recorded but nothing can be sent to the connector now."""
        sid = ref.server_id
        if self._host.reach(sid) is Reach.UP:
            text = (
                f"{lifecycle_withheld_text(sid)}. Your decision to {what} channel "
                f"{self._shown(ref)} is recorded and applies if that server is ever granted "
                "channels.lifecycle."
            )
            return LifecycleAnswer(ref, True, "not directed", text)
        text = (
            f"{not_up_clause(sid)}. The decision to {what} channel {self._shown(ref)} is "
            "recorded and carried out when that server registers it again."
        )
        return LifecycleAnswer(ref, True, "recorded", text)
