"""What tune-outs tell an agent: the refusals of tune-out calls.

What this module knows:

- The refusals a tune-out call raises when it did nothing, as
  :class:`~switchboard.refusals.refusal.Refusal` (kinds ``not-recorded``,
  ``tuned-out-by-another-agent``, ``overlapping-tune-out``, ``not-tuned-out``), and the one
  rule about overlap: one owner's epochs never cover the same channel at once, so a
  one-channel tune-out inside the owner's all-except tune-out is refused, and so is an
  all-except tune-out around the owner's one-channel tune-out of another channel
  (:func:`overlap_refusal`).

Channels are shown as the caller passes them (already quoted).

What it deliberately does not know: the store, names and the tools' result shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from switchboard.channels import ChannelRef
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
