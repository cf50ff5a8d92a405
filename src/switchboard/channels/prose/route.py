"""Where one segment of an agent's prose goes: the per-agent modes and the sticky target.

The decision table that turns "this segment had prefix X, or none" into a :class:`Route` for
each :class:`ProseMode` (``locus``, ``explicit``, ``hybrid``, ``disabled``), and how the sticky
target of one turn evolves (channel-registry.md §4.1, §4.2). The batch parser and the streaming
router share it, so both route alike.

What it deliberately does not know: the grammar (where prefixes are), and how a target token
is resolved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "BLOCKED_STICKY",
    "NO_STICKY",
    "SKIP_REPLY",
    "Disposition",
    "ProseMode",
    "Route",
    "Sticky",
    "TargetCheck",
    "accept_every_target",
    "route_prefixed",
    "route_unprefixed",
    "sticky_after_failed_delivery",
]

SKIP_REPLY = "skip_reply"
"""The prefix target that marks private speech (``>>skip_reply``), never a channel name."""

TargetCheck = Callable[[str], bool]
"""Whether a target token resolves to exactly one destination speech may go to."""


def accept_every_target(token: str) -> bool:
    """A :data:`TargetCheck` that accepts every token (for callers that resolve later)."""
    return True


class ProseMode(StrEnum):
    """How one agent's plain prose is routed (its ``proseRouting`` setting).

    What it knows: the decision table that turns "this segment had prefix X, or none" into a
    :class:`Route`, for each :class:`ProseMode` (channel-registry.md §4.1, §4.2), and how the sticky
    target of one turn evolves. Both the batch parser (:mod:`~switchboard.channels.prose.grammar`)
    and the streaming router (:mod:`~switchboard.channels.prose.stream`) decide through the two
    functions here, so they cannot disagree.

    The modes (unprefixed prose / a prefixed segment):

    ============  ====================================  =========================================
    Mode          Unprefixed prose                      Prefixed segment
    ============  ====================================  =========================================
    ``locus``     delivered to the turn's frozen locus  none: ``>>`` lines are plain text
    ``explicit``  the sticky target, else **bounced**   ``>>target`` routes the segment
                  (kept as a draft, with a notice)
    ``hybrid``    the frozen locus until an envelope;   ``>>>target`` envelope routes the segment;
                  then the sticky target, or bounced    ``>>target`` lines are plain text
                  once the sticky target was cleared
    ``disabled``  **withheld**: never delivered, no     none: prefixes are ignored (the explicit
                  bounce, a private receipt             send tools still work)
    ============  ====================================  =========================================

    A prefixed segment whose target is ``skip_reply`` is private (stays in the agent's context, is
    never delivered and never bounced). Any other target is asked of the injected
    :data:`TargetCheck`: a target that resolves routes the segment there; one that does not
    (missing, ambiguous, refused) bounces it.

    The sticky target (:class:`Sticky`), carried by the caller from one text block to the next
    within **one** turn and never across turns:

    ===============================  ==========================  ================================
    Event                            ``explicit``                ``hybrid``
    ===============================  ==========================  ================================
    a target resolves                sticky = that target        sticky = that target
    a target does not resolve        sticky unchanged (the       sticky **blocked**
                                     latest *resolved* target)
    ``skip_reply``                   sticky blocked              sticky blocked
    a delivery fails afterwards      sticky unchanged            sticky blocked
    ===============================  ==========================  ================================

    A blocked sticky makes later unprefixed prose bounce until a fresh target resolves. In explicit
    mode "blocked" and "nothing chosen yet" route the same way (both bounce); in hybrid mode they
    differ (nothing chosen yet goes to the locus, blocked bounces). Decisions where the spec is
    ambiguous, recorded here: the sticky target is the *latest* resolved one, not the first;
    ``skip_reply`` blocks the sticky target in both modes, so prose after it in a later tool round
    is bounced (never sent, and the words are kept) rather than silently suppressed.
    """

    LOCUS = "locus"
    EXPLICIT = "explicit"
    HYBRID = "hybrid"
    DISABLED = "disabled"


class Disposition(StrEnum):
    """What happens to one segment's text."""

    LOCUS = "locus"
    """Delivered to the turn's frozen locus."""
    TARGET = "target"
    """Delivered to :attr:`Route.target`."""
    BOUNCE = "bounce"
    """Not delivered: kept as a draft, and the author is told."""
    PRIVATE = "private"
    """``skip_reply``: stays in the author's context; never delivered, never bounced."""
    WITHHELD = "withheld"
    """Disabled mode: never delivered and not bounced; the host writes a private receipt."""


_DELIVERED = frozenset({Disposition.LOCUS, Disposition.TARGET})


@dataclass(frozen=True, slots=True)
class Route:
    """The decided destination of one segment.

    Attributes:
        disposition: What happens to the segment's text.
        target: The target token it goes to (TARGET), the token that failed (BOUNCE of a
            prefixed segment), ``skip_reply`` (PRIVATE); None for the locus and for unprefixed
            prose with no target.
        continue_: The prefix carried the continue modifier (`` !``): re-wake after the turn.
        explicit: The segment had its own prefix (False: unprefixed, inherited or defaulted).
    """

    disposition: Disposition
    target: str | None = None
    continue_: bool = False
    explicit: bool = False

    @property
    def delivers(self) -> bool:
        """Whether text on this route goes out to a channel (the locus or a target)."""
        return self.disposition in _DELIVERED

    @property
    def private(self) -> bool:
        """Whether this is ``skip_reply`` private speech."""
        return self.disposition is Disposition.PRIVATE


@dataclass(frozen=True, slots=True)
class Sticky:
    """The sticky target of one turn, as carried from one text block to the next.

    Three states: nothing chosen yet (the default), a target, or blocked.

    Attributes:
        target: The latest resolved target token, or None.
        blocked: Unprefixed prose bounces until a fresh target resolves.
    """

    target: str | None = None
    blocked: bool = False

    def __post_init__(self) -> None:
        if self.blocked and self.target is not None:
            raise ValueError("a blocked sticky target carries no target")

    @classmethod
    def on(cls, target: str) -> Sticky:
        """The sticky state after ``target`` resolved."""
        return cls(target=target)


NO_STICKY = Sticky()
"""Nothing chosen yet: the start of every turn."""

BLOCKED_STICKY = Sticky(blocked=True)
"""The sticky target was cleared; unprefixed prose bounces until a fresh target resolves."""


def route_unprefixed(mode: ProseMode, sticky: Sticky) -> Route:
    """Decide where a segment without a prefix goes.

    Args:
        mode: The author's prose mode.
        sticky: The turn's sticky state before this segment.

    Returns:
        The route (the sticky state does not change for unprefixed prose).
    """
    if mode is ProseMode.LOCUS:
        return Route(Disposition.LOCUS)
    if mode is ProseMode.DISABLED:
        return Route(Disposition.WITHHELD)
    if sticky.target is not None:
        return Route(Disposition.TARGET, sticky.target)
    if mode is ProseMode.HYBRID and not sticky.blocked:
        return Route(Disposition.LOCUS)
    return Route(Disposition.BOUNCE)


def route_prefixed(
    mode: ProseMode,
    token: str,
    *,
    continue_: bool,
    sticky: Sticky,
    resolves: TargetCheck,
) -> tuple[Route, Sticky]:
    """Decide where a prefixed segment goes, and the sticky state after it.

    ``resolves`` is called at most once, and never for ``skip_reply``.

    Args:
        mode: The author's prose mode; only explicit and hybrid have prefixes.
        token: The target token after the prefix.
        continue_: Whether the prefix carried the continue modifier.
        sticky: The turn's sticky state before this segment.
        resolves: Whether a token resolves to one destination.

    Returns:
        The segment's route and the sticky state for the segments after it.

    Raises:
        ValueError: ``mode`` has no prefixes (locus or disabled).
    """
    if mode is not ProseMode.EXPLICIT and mode is not ProseMode.HYBRID:
        raise ValueError(f"prose mode {mode.value!r} has no prefixes")
    if token == SKIP_REPLY:
        return Route(Disposition.PRIVATE, token, continue_, explicit=True), BLOCKED_STICKY
    if resolves(token):
        return Route(Disposition.TARGET, token, continue_, explicit=True), Sticky.on(token)
    after = BLOCKED_STICKY if mode is ProseMode.HYBRID else sticky
    return Route(Disposition.BOUNCE, token, continue_, explicit=True), after


def sticky_after_failed_delivery(mode: ProseMode, sticky: Sticky) -> Sticky:
    """The sticky state after a delivery to the sticky target failed or threw.

    Hybrid mode blocks the sticky target until a fresh envelope; explicit mode keeps the latest
    resolved target (a failed delivery is not a failed resolution).
    """
    return BLOCKED_STICKY if mode is ProseMode.HYBRID else sticky
