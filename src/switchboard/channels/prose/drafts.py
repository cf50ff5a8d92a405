"""Bounced drafts, and ``{{unsent}}``, which brings the latest one back.

Text that could not be delivered is not lost: the host keeps it in one :class:`DraftBox` per
agent, and the agent sends it on by writing :data:`UNSENT` in a later body, where the marker is
replaced with the latest draft (channel-registry.md §4.1, §4.2).

What it deliberately does not know: notices and their words, delivery, the clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from switchboard.channels.errors import ChannelsError
from switchboard.channels.prose.grammar import Segment, is_blank
from switchboard.channels.prose.route import Disposition

__all__ = ["DEFAULT_CAPACITY", "UNSENT", "Draft", "DraftBox", "NoUnsentDraft"]

UNSENT = "{{unsent}}"
"""The marker a body uses to bring back the latest bounced draft."""

DEFAULT_CAPACITY = 16
"""How many drafts a box keeps unless told otherwise."""


@dataclass(frozen=True, slots=True)
class Draft:
    """Words that were not delivered.

    Attributes:
        text: The words, with any marker already expanded where a draft existed.
        target: The target token they were addressed to; None for unprefixed prose.
    """

    text: str
    target: str | None = None


class NoUnsentDraft(ChannelsError, LookupError):
    """A body asked for ``{{unsent}}`` but no bounced draft is kept; nothing should be sent."""

    def __init__(self) -> None:
        super().__init__(
            f"the text uses {UNSENT} but there is no bounced draft to put there, "
            "so it was not sent; write the words out instead"
        )


class DraftBox:
    """The bounced drafts of one agent, newest last, at most ``capacity`` of them.

    What it knows (channel-registry.md §4.1, §4.2): text that could not be delivered (unprefixed
    prose in explicit mode with no target, a target that did not resolve, a delivery the host held
    back) is not lost. The host keeps it in one :class:`DraftBox` per agent, and the agent can send
    it on by writing :data:`UNSENT` in a later body; the marker is replaced at delivery, on the
    outbound wire only (the stored assistant text keeps it as written).

    Decisions recorded here:

    - **No draft to bring back is refused**, not sent: :meth:`DraftBox.expand_unsent` raises
      :class:`NoUnsentDraft`, so the host bounces that body with a notice instead of posting the
      literal marker into a channel.
    - Every occurrence of the marker is replaced, in one pass: a draft that itself contains the
      marker is not expanded again.
    - A draft is kept **expanded**: bouncing ``{{unsent}}`` again keeps the words it stood for (when
      there were any), so re-bouncing never loses text.
    - Blank text is not kept. The box is bounded: past ``capacity`` the oldest draft is dropped.
    - Expanding does not use a draft up (a failed delivery of the restored words loses nothing); the
      host calls :meth:`DraftBox.discard` once they were delivered.
    """

    __slots__ = ("_drafts",)

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        """Start an empty box.

        Args:
            capacity: How many drafts to keep; the oldest is dropped past it.

        Raises:
            ValueError: ``capacity`` is less than 1.
        """
        if capacity < 1:
            raise ValueError("a draft box keeps at least one draft")
        self._drafts: deque[Draft] = deque(maxlen=capacity)

    def __len__(self) -> int:
        return len(self._drafts)

    @property
    def latest(self) -> Draft | None:
        """The most recently kept draft, or None."""
        return self._drafts[-1] if self._drafts else None

    def drafts(self) -> tuple[Draft, ...]:
        """Every kept draft, oldest first."""
        return tuple(self._drafts)

    def keep(self, text: str, target: str | None = None) -> Draft | None:
        """Keep words that could not be delivered.

        Args:
            text: The body as written; a marker in it is expanded first if a draft exists.
            target: The target token it was addressed to, if any.

        Returns:
            The kept draft, or None when ``text`` is blank (nothing is kept).
        """
        if is_blank(text):
            return None
        latest = self.latest
        if latest is not None and UNSENT in text:
            text = text.replace(UNSENT, latest.text)
        draft = Draft(text, target)
        self._drafts.append(draft)
        return draft

    def keep_bounced(self, segments: Iterable[Segment]) -> tuple[Draft, ...]:
        """Keep the body of every bounced segment (blank ones aside), in order.

        Private and withheld segments are not drafts: they were never meant to be sent.
        """
        kept = (
            self.keep(s.text, s.route.target)
            for s in segments
            if s.route.disposition is Disposition.BOUNCE
        )
        return tuple(d for d in kept if d is not None)

    def expand_unsent(self, text: str) -> str:
        """Replace every ``{{unsent}}`` in ``text`` with the latest draft's words.

        Args:
            text: A body about to be delivered.

        Returns:
            ``text`` itself when it has no marker, else the expanded text.

        Raises:
            NoUnsentDraft: ``text`` has the marker and no draft is kept.
        """
        if UNSENT not in text:
            return text
        latest = self.latest
        if latest is None:
            raise NoUnsentDraft
        return text.replace(UNSENT, latest.text)

    def discard(self, draft: Draft) -> bool:
        """Forget ``draft`` (the newest equal one); return whether it was kept."""
        for i in range(len(self._drafts) - 1, -1, -1):
            if self._drafts[i] == draft:
                del self._drafts[i]
                return True
        return False

    def clear(self) -> None:
        """Forget every draft."""
        self._drafts.clear()
