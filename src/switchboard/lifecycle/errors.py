"""Why a lifecycle request did not do what it was for, and how that is said to an agent.

What this module knows: :class:`LifecycleError`, raised by a channel's lifecycle run (see
:mod:`switchboard.lifecycle.reconcile`) and by the speech gate, with a ``kind`` from
:class:`~switchboard.lifecycle.rules.reconcile.LifecycleErrorKind` (or None for a plain
request failure: the connector refused, timed out or went away), and the clauses every
lifecycle text is built from. Each clause names the channel or server concerned and says what
did or did not happen; none pretends a channel closed without a close answer.

What it deliberately does not know: names (the caller passes the channel as it is shown), how
a failure is refused to an agent (:mod:`switchboard.refusals.refusal`), and the tools' result
shapes.
"""

from __future__ import annotations

from switchboard.channels import ChannelRef
from switchboard.channels.names.wording import q
from switchboard.lifecycle.rules.reconcile import LifecycleErrorKind
from switchboard.refusals.errors import HostError

__all__ = [
    "LifecycleError",
    "is_converge_failure",
    "not_up_clause",
    "removed_clause",
    "substituted_clause",
]


class LifecycleError(HostError):
    """A lifecycle run (or a wait for one) failed.

    Attributes:
        kind: Which failure, or None for a request the connector refused or never answered.
        ref: The channel.
        reason: A clause saying what went wrong (no leading capital, no full stop).
    """

    def __init__(self, kind: LifecycleErrorKind | None, ref: ChannelRef, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.ref = ref
        self.reason = reason


def is_converge_failure(error: BaseException | None) -> bool:
    """Whether ``error``, or an error that caused it, is a ``converge`` failure."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, LifecycleError) and error.kind is LifecycleErrorKind.CONVERGE:
            return True
        seen.add(id(error))
        error = error.__cause__
    return False


def removed_clause(ref: ChannelRef) -> str:
    """The channel's server withdrew it meanwhile."""
    return f"server {q(ref.server_id)} no longer registers channel {q(ref.channel_id)}"


def substituted_clause(ref: ChannelRef, answered: object) -> str:
    """The open was answered for another channel (or for an id that is not a string)."""
    if isinstance(answered, str):
        what = f"for a different channel ({q(answered)})"
    else:
        what = "for a channel whose id is not a string"
    return (
        f"server {q(ref.server_id)} answered the open of {q(ref.channel_id)} {what}, so it is "
        "not known to be open; words sent by its id might land elsewhere until an open of it "
        "is answered for this channel"
    )


def not_up_clause(server_id: str) -> str:
    """The server is not connected and ready now."""
    return f"server {q(server_id)} is not connected right now"
