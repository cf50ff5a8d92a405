"""What tune-outs tell an agent: the refusals of tune-out calls, and how a tune-out ends.

What this module knows:

- The refusals a tune-out call raises when it did nothing, as
  :class:`~switchboard.refusals.refusal.Refusal` (kinds ``not-recorded``,
  ``tuned-out-by-another-agent``, ``overlapping-tune-out``, ``not-tuned-out``), and the one
  rule about overlap: one owner's epochs never cover the same channel at once, so a
  one-channel tune-out inside the owner's all-except tune-out is refused, and so is an
  all-except tune-out around the owner's one-channel tune-out of another channel
  (:func:`overlap_refusal`).
- The words of the ``tuned-out`` refusals of the lifecycle tools (``channel_open``,
  ``channel_close``, ``channel_decline``): the channel is tuned out, the tool does not change
  that, and how the tune-out ends, which depends on whether some name picks the channel alone
  (``tune_out`` takes only a name, so without one it cannot cancel it).

Channels are shown as the caller passes them (already quoted).

What it deliberately does not know: the store, names and the tools' result shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from switchboard.channels import ChannelRef
from switchboard.channels.names.wording import q
from switchboard.lifecycle.rules.decisions import ScopeKind, TuneOutScope
from switchboard.refusals.refusal import (
    Refusal,
    RefusalKind,
    cancel_all_except_first,
    cancel_first,
)
from switchboard.tuneouts.rules.epochs import ActiveTuneOut

__all__ = [
    "another_agent",
    "not_in_effect",
    "not_recorded",
    "overlap_refusal",
    "tune_out_end_text",
    "tuned_out_meanwhile_text",
    "tuned_out_refusal_text",
]


def not_recorded(error: Exception) -> Refusal:
    """The decision log refused the append."""
    return Refusal(
        RefusalKind.NOT_RECORDED,
        f"Recording the tune-out decision failed ({error}), so nothing changed.",
    )


def another_agent(shown: str, owner: str | None) -> Refusal:
    """Another agent's one-channel tune-out holds the channel."""
    who = f"agent {owner!r}" if owner else "another agent"
    return Refusal(
        RefusalKind.TUNED_OUT_BY_ANOTHER_AGENT,
        f"Channel {shown} is already tuned out by {who}, so nothing changed.",
    )


def not_in_effect() -> Refusal:
    """The epoch to end is not in effect any more."""
    return Refusal(
        RefusalKind.NOT_TUNED_OUT,
        "That tune-out is not in effect any more (it has ended), so nothing changed.",
    )


def overlap_refusal(
    owner: str,
    scope: TuneOutScope,
    epochs: Iterable[ActiveTuneOut],
    broad: ActiveTuneOut | None,
    shown: Callable[[ChannelRef], str],
) -> Refusal | None:
    """The refusal of starting ``scope`` for ``owner``, or None when nothing overlaps.

    Args:
        owner: Who starts it.
        scope: What it would cover.
        epochs: Every epoch in effect (scanned only for an all-except start).
        broad: The owner's all-except epoch, if any.
        shown: How a channel is shown (quoted).
    """
    if scope.kind is ScopeKind.CHANNEL:
        if broad is None or not broad.epoch.scope.covers(scope.ref):
            return None
        kept = shown(broad.epoch.scope.ref)
        return Refusal(
            RefusalKind.OVERLAPPING_TUNE_OUT,
            f"Your tune-out of every channel except {kept} already covers channel "
            f"{shown(scope.ref)}, so nothing changed.",
            cancel_all_except_first(kept),
        )
    for held in epochs:
        epoch = held.epoch
        if (
            epoch.owner == owner
            and epoch.scope.kind is ScopeKind.CHANNEL
            and epoch.scope.ref != scope.ref
        ):
            inner = shown(epoch.scope.ref)
            return Refusal(
                RefusalKind.OVERLAPPING_TUNE_OUT,
                f"Your tune-out of channel {inner} would overlap a tune-out of every channel "
                f"except {shown(scope.ref)}, so nothing changed.",
                cancel_first(inner),
            )
    return None


def tune_out_end_text(name_alone: str | None, tool: str | None = None) -> str:
    """How a tune-out ends, for a tool that refused because of it.

    Args:
        name_alone: The name that picks the channel alone, or None when no name does.
        tool: The refusing tool; ``channel_close`` adds that it can close the channel after.
    """
    closes = tool == "channel_close"
    if name_alone is not None:
        text = (
            f"To resume normal attention, call tune_out with channel {q(name_alone)} and "
            'mode "cancel"; cancelling hands over the diverted backlog'
        )
        return text + (", and channel_close can close the channel after that." if closes else ".")
    text = (
        "No channel name picks this channel alone, so tune_out cannot cancel its tune-out: it "
        "ends by itself when its time runs out or at the first wake past its wake budget, and "
        "its backlog is handed over then."
    )
    return text + (" Once it has ended, channel_close can close the channel." if closes else "")


def tuned_out_refusal_text(shown: str, name_alone: str | None, tool: str) -> str:
    """The refusal of ``tool`` on a tuned-out channel.

    A decision recorded over the tune-out would end it without its cancel, and its backlog
    would never reach the agent; so the tool refuses and says how the tune-out ends.

    Args:
        shown: How the channel is shown (already quoted as needed).
        name_alone: The name that picks it alone, or None.
        tool: ``channel_open``, ``channel_close`` or ``channel_decline``.
    """
    return (
        f"Channel {shown} is tuned out: its messages wait in a backlog instead of your inbox, and "
        f"{tool} does not change that. {tune_out_end_text(name_alone, tool)}"
    )


def tuned_out_meanwhile_text(shown: str, name_alone: str | None, tool: str) -> str:
    """The failure of an open or close whose channel was tuned out during the round trip."""
    return (
        f"Channel {shown} was tuned out meanwhile: its messages wait in a backlog instead of "
        f"your inbox, and {tool} does not change that. {tune_out_end_text(name_alone, tool)}"
    )
