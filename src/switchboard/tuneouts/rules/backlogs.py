"""What the agent gets when a tune-out ends.

What this module knows (channel-registry.md §6): :func:`deliver_backlog`. Every end hands the
owner the diverted backlog, capped at the epoch's ``backlog_cap``. Past the cap the latest
messages are handed over raw, and a note says how many earlier ones are held back, carries the
reader's digest of them when there is one, and says that history requests fetch them in full.

What it deliberately does not know: the messages themselves (any values the host passes, kept
in order), how names are computed (the caller passes the shown form), and the tools: what a
tool is told about a tuned-out channel is the host's wording
(:mod:`switchboard.tuneouts.words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from switchboard.lifecycle.rules.decisions import ScopeKind
from switchboard.lifecycle.rules.events import EndReason
from switchboard.tuneouts.rules.epochs import ActiveTuneOut

__all__ = ["BacklogDelivery", "deliver_backlog"]

_M = TypeVar("_M")


@dataclass(frozen=True, slots=True)
class BacklogDelivery(Generic[_M]):
    """What an ended epoch hands its owner.

    Attributes:
        recipient: The owner agent.
        messages: The messages handed over raw, oldest first (the latest ``backlog_cap``).
        held_back: How many earlier messages are not handed over raw.
        note: What to tell the owner: that the tune-out ended and why, what arrived, and
            (past the cap) the digest and how to read the rest.
    """

    recipient: str
    messages: tuple[_M, ...]
    held_back: int
    note: str


def _why(held: ActiveTuneOut, reason: EndReason) -> str:
    if reason is EndReason.CANCELLED:
        return "it was cancelled"
    if reason is EndReason.EXPIRED:
        return "its time ran out"
    budget = held.epoch.max_wakes
    wakes = "wake" if budget == 1 else "wakes"
    return f"a wake came past its budget of {budget} {wakes}"


def deliver_backlog(
    ended: ActiveTuneOut,
    reason: EndReason,
    backlog: Sequence[_M],
    *,
    shown: str,
    digest: str | None = None,
) -> BacklogDelivery[_M]:
    """Decide what an ended epoch's owner receives.

    Args:
        ended: The epoch that ended (as :meth:`TuneOutBook.apply` returned it).
        reason: Why it ended.
        backlog: The diverted messages, oldest first.
        shown: How the scope's channel is shown to the owner (already quoted as needed).
        digest: The reader's digest of the traffic, if it wrote one.

    Returns:
        The latest ``backlog_cap`` messages, the count held back, and the note.
    """
    epoch = ended.epoch
    cap = epoch.backlog_cap
    total = len(backlog)
    held_back = max(0, total - cap)
    messages = tuple(backlog[held_back:])
    if epoch.scope.kind is ScopeKind.CHANNEL:
        scope = f"channel {shown}"
    else:
        scope = f"every channel except {shown}"
    note = f"Your tune-out of {scope} ended because {_why(ended, reason)}; normal attention "
    note += "resumes. "
    if total == 0:
        note += "No messages arrived while it lasted."
    elif held_back == 0:
        note += f"{total} message{'s' if total != 1 else ''} arrived while it lasted; "
        note += "it is below." if total == 1 else "they are below."
    else:
        latest = f"the latest {cap} are below" if cap else "none is shown raw"
        note += f"{total} messages arrived while it lasted; {latest}. "
        note += f"The {held_back} before {'them' if cap else 'that'} are held back"
        if digest:
            note += f"; the reader's digest of them: {digest.strip()}"
        else:
            note += "; no digest of them was written"
        note += ". Ask for the channel history to read them in full."
    return BacklogDelivery(epoch.owner, messages, held_back, note)
