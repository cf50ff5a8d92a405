"""An agent's prose with ``>>`` lines: each segment routed, delivered, bounced or kept private.

One ``speak`` call is parsed by the pure grammar, each ``>>`` target resolved once with the
turn's own channels, plain speech sent to the locus frozen at turn start, and the words of a
segment that could not go are kept as a draft for ``{{unsent}}`` (channel-registry.md §4, §8.4).

What it deliberately does not know: MCP and result shapes, how a publish is carried out, and
where the locus came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from switchboard.agents.desk.desk import AgentDesk, Locus
from switchboard.agents.speech.publishing import PublishTo, UnknownNameRefusal, unknown_name_refusal
from switchboard.channels import (
    BLOCKED_STICKY,
    ChannelEntry,
    ChannelNameError,
    ChannelRef,
    ChannelRegistry,
    Disposition,
    NoUnsentDraft,
    ProseMode,
    Segment,
    parse_speech,
)
from switchboard.channels.prose.grammar import is_blank
from switchboard.channels.prose.route import sticky_after_failed_delivery
from switchboard.refusals.outcome import PublishStatus
from switchboard.refusals.refusal import Refusal, RefusalKind, name_refusal

__all__ = ["SegmentStatus", "Speech", "SpokenSegment", "speak"]

SegmentStatus = Literal["delivered", "failed", "unknown", "bounced", "private", "withheld", "empty"]
"""What became of one segment (see :class:`SpokenSegment`)."""


@dataclass(frozen=True, slots=True)
class SpokenSegment:
    """What became of one segment.

    Attributes:
        status: ``delivered``, ``failed``, ``unknown`` (sent, not confirmed), ``bounced`` (not
            sent: no target, or one that does not pick one channel), ``private``
            (``>>skip_reply``), ``withheld`` (disabled mode) or ``empty`` (a prefix with no
            words, which only moves the sticky target).
        text: The body as written (``{{unsent}}`` not expanded).
        target: The target token as written after ``>>``; None for unprefixed prose.
        ref: The channel it went, or was meant, to; None when none was chosen.
        message_id: The connector's id of the delivered message.
        refusal: Why it was not sent (kind ``unknown-channel``, ``no-channel``, …), or for
            ``unknown`` why it is not confirmed (``unconfirmed``).
        reason: Why, in words: the refusal's message, or why ``withheld``.
        kept: Whether its words were kept as a draft (``{{unsent}}`` brings them back).
    """

    status: SegmentStatus
    text: str
    target: str | None = None
    ref: ChannelRef | None = None
    message_id: str | None = None
    refusal: Refusal | None = None
    reason: str | None = None
    kept: bool = False


@dataclass(frozen=True, slots=True)
class Speech:
    """The segments of one ``speak`` call, in text order, and the state it leaves."""

    segments: tuple[SpokenSegment, ...]
    mode: ProseMode
    sticky: str | None
    sticky_ref: ChannelRef | None


_NO_TARGET = {
    ProseMode.EXPLICIT: "this prose has no >>target line and no target was chosen earlier in "
    "this turn, so nothing was sent; start it with a >>target line",
    ProseMode.HYBRID: "the sticky target of this turn was cleared (by >>>skip_reply, a target "
    "that did not resolve, or a failed delivery), so nothing was sent; start it with a "
    ">>>target line",
}


class _Speaker:
    """One ``speak`` call in progress (the state its segments share)."""

    def __init__(
        self,
        registry: ChannelRegistry,
        publish_to: PublishTo,
        desk: AgentDesk,
        locus: Locus,
        unknown: UnknownNameRefusal | None = None,
    ) -> None:
        self.registry = registry
        self.unknown = unknown
        self.publish_to = publish_to
        self.desk = desk
        self.locus = locus
        self.found: dict[str, ChannelEntry | ChannelNameError] = {}
        self.sticky_ref = desk.sticky_ref
        self.sticky_failed = False

    def resolves(self, token: str) -> bool:
        try:
            self.found[token] = self.registry.names.resolve_prose_target(
                token, for_speech=True, own=self.desk.own
            )
        except ChannelNameError as exc:
            self.found[token] = exc
            return False
        return True

    def bounce(self, seg: Segment, refusal: Refusal) -> SpokenSegment:
        kept = self.desk.drafts.keep(seg.text, seg.target) is not None
        return SpokenSegment(
            "bounced", seg.text, seg.target, refusal=refusal, reason=refusal.message, kept=kept
        )

    async def segment(self, seg: Segment) -> SpokenSegment | None:
        route = seg.route
        kind = route.disposition
        if kind is Disposition.PRIVATE:
            return SpokenSegment("private", seg.text, seg.target)
        if kind is Disposition.WITHHELD:
            reason = "prose routing is disabled for this agent: use channel_publish to post"
            return SpokenSegment("withheld", seg.text, reason=reason)
        if not seg.prefix and is_blank(seg.text):
            return None
        if kind is Disposition.BOUNCE:
            return self._bounced(seg)
        ref: ChannelRef | None
        if kind is Disposition.LOCUS:
            ref = self.locus.ref
            if ref is None:
                reason = (
                    "This prose names no channel and there is no locus to send it to "
                    f"({self.locus.reason}), so nothing was sent."
                )
                return self.failed(seg, None, Refusal(RefusalKind.NO_CHANNEL, reason))
        elif route.explicit:
            found = self.found[seg.target or ""]
            assert isinstance(found, ChannelEntry)  # the parser routed it: it resolved
            ref = self.sticky_ref = found.ref
            self.sticky_failed = False
        elif self.sticky_failed:
            return self.bounce(seg, Refusal(RefusalKind.NO_TARGET, _NO_TARGET[ProseMode.HYBRID]))
        else:
            ref = self.sticky_ref
        if is_blank(seg.text):
            return SpokenSegment("empty", seg.text, seg.target, ref)
        return await self.deliver(seg, ref)

    def _bounced(self, seg: Segment) -> SpokenSegment:
        if seg.target is None:
            mode = self.desk.prose
            reason = _NO_TARGET.get(mode, _NO_TARGET[ProseMode.EXPLICIT])
            return self.bounce(seg, Refusal(RefusalKind.NO_TARGET, reason))
        found = self.found.get(seg.target)
        if isinstance(found, ChannelNameError):
            said = unknown_name_refusal(found, seg.target.strip(), self.unknown)
            refused = said or name_refusal(found, "speak", server_arg=None)
            return self.bounce(seg, refused.as_kind(RefusalKind.UNRESOLVED_TARGET))
        return self.bounce(seg, Refusal(RefusalKind.UNRESOLVED_TARGET, "it was not resolved"))

    def failed(self, seg: Segment, ref: ChannelRef | None, refusal: Refusal) -> SpokenSegment:
        kept = self.desk.drafts.keep(seg.text, seg.target) is not None
        return SpokenSegment(
            "failed", seg.text, seg.target, ref, refusal=refusal, reason=refusal.message, kept=kept
        )

    async def deliver(self, seg: Segment, ref: ChannelRef | None) -> SpokenSegment:
        registry = self.registry
        entry = None if ref is None else registry.get(ref)
        if ref is None or entry is None:
            reason = "No channel was chosen for these words, so nothing was sent."
            if ref is not None:
                shown = registry.names.quoted_shown(ref, self.desk.own)
                reason = f"The channel {shown} is not registered now, so nothing was sent."
            return self.failed(seg, ref, Refusal(RefusalKind.UNKNOWN_CHANNEL, reason))
        drafts = self.desk.drafts
        used = drafts.latest
        try:
            body = drafts.expand_unsent(seg.text)
        except NoUnsentDraft as exc:
            none = Refusal(RefusalKind.NO_UNSENT_DRAFT, str(exc))
            return SpokenSegment(
                "bounced", seg.text, seg.target, ref, refusal=none, reason=none.message
            )
        outcome = await self.publish_to(entry, body, conversation_id=self.desk.conversation_id)
        if outcome.status is PublishStatus.DELIVERED:
            if body != seg.text and used is not None:
                drafts.discard(used)
            return SpokenSegment("delivered", seg.text, seg.target, ref, outcome.message_id)
        if seg.route.disposition is Disposition.TARGET:
            after = sticky_after_failed_delivery(self.desk.prose, self.desk.sticky)
            self.sticky_failed = self.sticky_failed or after.blocked
        reason = outcome.reason or "the connector did not confirm the message"
        if outcome.status is PublishStatus.UNKNOWN:
            unconfirmed = Refusal(RefusalKind.UNCONFIRMED, reason)
            return SpokenSegment(
                "unknown", seg.text, seg.target, ref, refusal=unconfirmed, reason=reason
            )
        return self.failed(
            seg, ref, outcome.refusal or Refusal(RefusalKind.CONNECTOR_FAILED, reason)
        )


async def speak(
    registry: ChannelRegistry,
    publish_to: PublishTo,
    desk: AgentDesk,
    locus: Locus,
    text: str,
    *,
    unknown: UnknownNameRefusal | None = None,
) -> Speech:
    """Route ``text`` segment by segment for the agent ``desk`` serves (see module doc).

    What it knows (channel-registry.md §4.1, §4.2, §4.5, §8.4): how one ``speak`` call turns into
    publishes, using the pure grammar (:func:`~switchboard.channels.parse_speech`), the ``>>``
    target resolver with the turn's own channels, and the agent's
    :class:`~switchboard.channels.DraftBox`:

    - The text is parsed in the agent's prose mode with the turn's sticky state; each ``>>`` target
      is resolved once, for speech (an inbound-only channel is refused).
    - A segment routed to a target goes to the channel the target resolved to; an unprefixed segment
      that inherits the sticky target goes to the channel the sticky target resolved to *when it was
      set* (kept on the desk), so a registry change within the turn can make it fail but never send
      it elsewhere.
    - Plain speech on the locus route goes to the locus the caller captured once at the start of the
      call (the turn's frozen locus; outside any turn the home or default channel). A turn with no
      channel takes no fallback: the segment fails.
    - ``{{unsent}}`` in a delivered body is replaced by the latest kept draft; that draft is
      forgotten once the words were delivered. With no draft to bring back the segment is not sent.
    - Words that were not sent are kept as drafts: bounced segments, and segments whose publish was
      refused or failed before anything went out. Words whose delivery is *unknown* are not kept
      (they may have been posted; resending them could post them twice).
    - In hybrid mode a failed or unconfirmed delivery to the sticky target blocks it: later
      unprefixed prose of the turn bounces until a fresh envelope resolves.
    - ``>>skip_reply`` segments are private, disabled mode withholds prose; neither sends or keeps
      anything. The continue modifier ``!`` is parsed and has no effect over MCP (the agent drives
      its own loop).

    A segment that was not sent carries its :class:`~switchboard.refusals.refusal.Refusal` as a
    value (a target that did not resolve through :func:`~switchboard.refusals.refusal.name_refusal`,
    as ``unresolved-target``): it is part of the answer, not the failure of the call.

    Args:
        registry: Resolves the ``>>`` targets and says what is registered now.
        publish_to: The host's publish, for each segment that goes out.
        desk: The speaking agent's desk (turn, own channels, sticky target, drafts).
        locus: Where plain speech goes, captured at the start of this call.
        text: The prose as written.
        unknown: The host's word on a target nothing answers to (a channel of a server that
            is not serving now); the segment still bounces as ``unresolved-target``.
    """
    turn = desk.turn.number
    speaker = _Speaker(registry, publish_to, desk, locus, unknown)
    parsed = parse_speech(text, mode=desk.prose, sticky=desk.sticky, resolves=speaker.resolves)
    out: list[SpokenSegment] = []
    for seg in parsed.segments:
        spoken = await speaker.segment(seg)
        if spoken is not None:
            out.append(spoken)
    sticky = BLOCKED_STICKY if speaker.sticky_failed else parsed.sticky
    sticky_ref = speaker.sticky_ref if sticky.target is not None else None
    if desk.turn.number == turn:  # a turn that began meanwhile starts with no sticky target
        desk.sticky = sticky
        desk.sticky_ref = sticky_ref
    return Speech(tuple(out), desk.prose, sticky.target, sticky_ref)
