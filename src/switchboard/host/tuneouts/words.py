"""The refusals of tune-out calls: what did not happen, and what to call instead.

What this module knows: :class:`TuneOutRefusal`, the exception a tune-out call raises when it
did nothing, and the words of each refusal (``data.refusal`` values ``not-recorded``,
``tuned-out-by-another-agent``, ``overlapping-tune-out``, ``not-tuned-out``). It also knows
the one rule about overlap: one owner's epochs never cover the same channel at once, so a
one-channel tune-out inside the owner's all-except tune-out is refused, and so is an
all-except tune-out around the owner's one-channel tune-out of another channel
(:func:`overlap_refusal`). Channels are shown as the caller passes them (already quoted).

What it deliberately does not know: the store, names and the tools' result shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from switchboard.channels import ChannelRef, TuneOutScope
from switchboard.channels.lifecycle.decisions import ScopeKind
from switchboard.channels.tuneouts.epochs import ActiveTuneOut

__all__ = [
    "TuneOutRefusal",
    "another_agent",
    "not_in_effect",
    "not_recorded",
    "overlap_refusal",
]


class TuneOutRefusal(Exception):
    """A tune-out call that did nothing, with what to tell the agent.

    Attributes:
        kind: The refusal's ``data.refusal`` value.
        message: What happened, as a sentence.
        next_step: What to call instead.
        data: Details for the structured result.
    """

    def __init__(self, kind: str, message: str, next_step: str, **data: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.next_step = next_step
        self.data = data


def not_recorded(error: Exception | None) -> TuneOutRefusal:
    """The decision log is missing (``error`` None) or refused the append."""
    if error is None:
        return TuneOutRefusal(
            "not-recorded",
            "This Switchboard runs without a decision log, so it cannot record a tune-out; "
            "nothing changed.",
            "ask whoever runs this host",
        )
    return TuneOutRefusal(
        "not-recorded",
        f"Recording the tune-out decision failed ({error}), so nothing changed.",
        "call again; if it fails the same way, ask whoever runs this host",
    )


def another_agent(shown: str, owner: str | None) -> TuneOutRefusal:
    """Another agent's one-channel tune-out holds the channel."""
    who = f"agent {owner!r}" if owner else "another agent"
    return TuneOutRefusal(
        "tuned-out-by-another-agent",
        f"Channel {shown} is already tuned out by {who}, so nothing changed.",
        "leave it be, or ask that agent to cancel its tune-out",
    )


def not_in_effect() -> TuneOutRefusal:
    """The epoch to end is not in effect any more."""
    return TuneOutRefusal(
        "not-tuned-out",
        "That tune-out is not in effect any more (it has ended), so nothing changed.",
        "call tune_out_status to see your tune-outs",
    )


def overlap_refusal(
    owner: str,
    scope: TuneOutScope,
    epochs: Iterable[ActiveTuneOut],
    broad: ActiveTuneOut | None,
    shown: Callable[[ChannelRef], str],
) -> TuneOutRefusal | None:
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
        return TuneOutRefusal(
            "overlapping-tune-out",
            f"Your tune-out of every channel except {kept} already covers channel "
            f"{shown(scope.ref)}, so nothing changed.",
            f'cancel that one first (tune_out with channel {kept}, scope "all-except" and mode '
            '"cancel"), or leave it be',
        )
    for held in epochs:
        epoch = held.epoch
        if (
            epoch.owner == owner
            and epoch.scope.kind is ScopeKind.CHANNEL
            and epoch.scope.ref != scope.ref
        ):
            inner = shown(epoch.scope.ref)
            return TuneOutRefusal(
                "overlapping-tune-out",
                f"Your tune-out of channel {inner} would overlap a tune-out of every channel "
                f"except {shown(scope.ref)}, so nothing changed.",
                f'cancel it first (tune_out with channel {inner} and mode "cancel")',
            )
    return None
