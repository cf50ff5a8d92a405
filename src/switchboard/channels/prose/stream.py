"""The ``>>`` grammar applied incrementally, for speech that is streamed as it is generated.

:class:`StreamingRouter` runs the same grammar as
:func:`~switchboard.channels.prose.grammar.parse_speech` as a state machine over chunks, and no
text leaves before its destination is decided (fail-closed, channel-registry.md §4.3); fed in
any chunking, it routes as the batch parser routes the whole text.

What it deliberately does not know: how targets resolve (injected), the locus, delivery.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto

from switchboard.channels.prose.grammar import WHITESPACE, is_blank
from switchboard.channels.prose.route import (
    NO_STICKY,
    ProseMode,
    Route,
    Sticky,
    TargetCheck,
    accept_every_target,
    route_prefixed,
    route_unprefixed,
)

__all__ = ["Piece", "StreamingRouter"]

_HSPACE = frozenset(" \t")
_NO_PREFIXES = frozenset({ProseMode.LOCUS, ProseMode.DISABLED})


@dataclass(frozen=True, slots=True)
class Piece:
    """Text whose destination is decided.

    Attributes:
        segment: The ordinal of its segment in the block (the batch parser's index).
        route: The segment's route; it always delivers.
        text: The text, to append to what earlier pieces of the same segment carried.
    """

    segment: int
    route: Route
    text: str


class _Phase(Enum):
    LINE_START = auto()
    LEAD = auto()
    ARROWS = auto()
    GAP = auto()
    TOKEN = auto()
    AFTER_TOKEN = auto()
    AFTER_BANG = auto()
    BODY = auto()


_IN_HEAD = frozenset({_Phase.TOKEN, _Phase.AFTER_TOKEN, _Phase.AFTER_BANG})
_HOLDING = frozenset({_Phase.LEAD, _Phase.ARROWS, _Phase.GAP})


class StreamingRouter:
    """Routes one text block fed in chunks; one router per block.

    What it knows: the same grammar as :func:`~switchboard.channels.prose.grammar.parse_speech`, run
    as a state machine over chunks of text, and the rule that **no text leaves before its
    destination is decided** (fail-closed, channel-registry.md §4.3, MCPL §14.3).

    Theory of operation. Body text is emitted as soon as it arrives. Only three things are held:

    - the start of a line, while it could still be a prefix line (``>``, ``>>``; in hybrid mode also
      leading spaces, ``>>>`` and the spaces after it). The first character that rules a prefix out
      releases the held characters as body; the first target character makes it a prefix line.
    - a newline that ended a body line: if the next line is a prefix line that newline belongs to no
      body and is dropped, otherwise it is body and goes out with the next line.
    - the leading whitespace of a segment: a body that stays blank delivers nothing, so the
      whitespace goes out only together with the segment's first other character.

    A prefix's route is decided when its head ends (at the first body character, at the newline, or
    at :meth:`StreamingRouter.finish`), through the same
    :func:`~switchboard.channels.prose.route.route_prefixed` call the batch parser makes. Text on a
    route that does not deliver (bounced, private, withheld) is never emitted; the author's whole
    text, parsed in batch at the end, is what keeps drafts.

    States of the line-start machine (explicit mode uses no ``LEAD``/``GAP``)::

        LINE_START -> [LEAD] -> ARROWS -> [GAP] -> TOKEN -> AFTER_TOKEN -> AFTER_BANG -> BODY

    Locus mode holds no line starts (it has no prefixes): it passes text through as it arrives, save
    a segment's leading whitespace. Disabled mode emits nothing. At :meth:`~StreamingRouter.finish`,
    held arrows are released as body and a head with no body is routed (it still moves the sticky
    target) and delivers nothing.

    The contract, checked by property tests: for every way of cutting a block into chunks, the
    pieces grouped by :attr:`Piece.segment` are exactly the delivering segments of ``parse_speech``
    on the whole block, with the same route and text, and the sticky state after
    :meth:`~StreamingRouter.finish` is the batch parser's.

    Call :meth:`feed` for each chunk and :meth:`finish` once at the end; each returns the
    pieces decided by then. Afterwards :attr:`sticky` is the state to carry to the next block
    of the same turn.
    """

    __slots__ = (
        "_arrows",
        "_blank",
        "_continue",
        "_done",
        "_held",
        "_index",
        "_mode",
        "_newline",
        "_out",
        "_parts",
        "_phase",
        "_resolves",
        "_route",
        "_started",
        "_sticky",
        "_token",
    )

    def __init__(
        self,
        mode: ProseMode,
        *,
        sticky: Sticky = NO_STICKY,
        resolves: TargetCheck = accept_every_target,
    ) -> None:
        """Start a block.

        Args:
            mode: The author's prose mode.
            sticky: The sticky state left by the previous block of the same turn.
            resolves: Whether a target token resolves; called once per prefix, when its head
                ends, never for ``skip_reply``.
        """
        self._mode = mode
        self._sticky = sticky
        self._resolves = resolves
        self._phase = _Phase.BODY if mode in _NO_PREFIXES else _Phase.LINE_START
        self._route: Route | None = None
        self._index = -1
        self._held = ""
        self._newline = False
        self._arrows = 0
        self._token = ""
        self._continue = False
        self._started = False
        self._blank = ""
        self._done = False
        self._out: list[Piece] = []
        self._parts: list[str] = []  # text of the piece being built, for segment self._index

    @property
    def sticky(self) -> Sticky:
        """The sticky state after everything decided so far."""
        return self._sticky

    def feed(self, chunk: str) -> list[Piece]:
        """Take the next chunk; return the pieces whose destination it decided.

        Raises:
            RuntimeError: The block was already finished.
        """
        if self._done:
            raise RuntimeError("this block was finished; start a new router for the next one")
        i, n = 0, len(chunk)
        while i < n:
            if self._phase is _Phase.BODY:
                stop = n if self._mode in _NO_PREFIXES else chunk.find("\n", i)
                if stop < 0:
                    stop = n
                if stop > i:
                    self._body(chunk[i:stop])
                if stop < n:
                    self._newline = True
                    self._phase = _Phase.LINE_START
                    stop += 1
                i = stop
            else:
                self._step(chunk[i])
                i += 1
        return self._drain()

    def finish(self) -> list[Piece]:
        """End the block; return the last pieces (held arrows go out as body).

        Raises:
            RuntimeError: The block was already finished.
        """
        if self._done:
            raise RuntimeError("this block was already finished")
        self._done = True
        phase = self._phase
        if phase in _IN_HEAD:
            self._open_prefixed()
        elif phase in _HOLDING or self._newline:
            # Held arrows, or the newline of a last empty line, go out as body.
            self._release()
        self._phase = _Phase.BODY
        return self._drain()

    def _drain(self) -> list[Piece]:
        self._seal()
        out, self._out = self._out, []
        return out

    def _seal(self) -> None:
        """Turn the text gathered for the current segment into one piece."""
        if self._parts and self._route is not None:
            self._out.append(Piece(self._index, self._route, "".join(self._parts)))
            self._parts = []

    def _step(self, ch: str) -> None:
        """Advance the line-start machine by one character (every phase but BODY)."""
        phase = self._phase
        hybrid = self._mode is ProseMode.HYBRID
        if phase is _Phase.LINE_START or phase is _Phase.LEAD:
            if ch == ">":
                self._held += ch
                self._arrows = 1
                self._phase = _Phase.ARROWS
            elif hybrid and ch in _HSPACE:
                self._held += ch
                self._phase = _Phase.LEAD
            else:
                self._not_a_prefix(ch)
        elif phase is _Phase.ARROWS:
            needed = 3 if hybrid else 2
            if self._arrows < needed:
                if ch == ">":
                    self._held += ch
                    self._arrows += 1
                else:
                    self._not_a_prefix(ch)
            elif hybrid and ch in _HSPACE:
                self._held += ch
                self._phase = _Phase.GAP
            else:
                self._token_or_not(ch)
        elif phase is _Phase.GAP:
            if ch in _HSPACE:
                self._held += ch
            else:
                self._token_or_not(ch)
        elif phase is _Phase.TOKEN:
            if ch not in WHITESPACE:
                self._token += ch
            elif ch in _HSPACE:
                self._phase = _Phase.AFTER_TOKEN
            else:
                self._end_head(ch)
        elif phase is _Phase.AFTER_TOKEN and ch == "!":
            self._continue = True
            self._phase = _Phase.AFTER_BANG
        elif ch not in _HSPACE:
            self._end_head(ch)

    def _token_or_not(self, ch: str) -> None:
        if ch in WHITESPACE:
            self._not_a_prefix(ch)
            return
        # A prefix line: the newline before it and the held arrows belong to no body.
        self._newline = False
        self._held = ""
        self._token = ch
        self._continue = False
        self._phase = _Phase.TOKEN

    def _end_head(self, ch: str) -> None:
        """The head ended at ``ch``: route it; ``ch`` is a newline (taken) or the body's start."""
        self._open_prefixed()
        if ch == "\n":
            self._phase = _Phase.LINE_START
        else:
            self._phase = _Phase.BODY
            self._body(ch)

    def _not_a_prefix(self, ch: str) -> None:
        """The line turned out to be body: release what was held, then ``ch`` as body."""
        self._release()
        if ch == "\n":
            self._newline = True
            self._phase = _Phase.LINE_START
        else:
            self._phase = _Phase.BODY
            self._body(ch)

    def _release(self) -> None:
        text = ("\n" if self._newline else "") + self._held
        self._newline = False
        self._held = ""
        self._arrows = 0
        if self._route is None:
            self._open(route_unprefixed(self._mode, self._sticky))
        if text:
            self._body(text)

    def _open_prefixed(self) -> None:
        route, self._sticky = route_prefixed(
            self._mode,
            self._token,
            continue_=self._continue,
            sticky=self._sticky,
            resolves=self._resolves,
        )
        self._token = ""
        self._arrows = 0
        self._open(route)

    def _open(self, route: Route) -> None:
        self._seal()
        self._index += 1
        self._route = route
        self._started = False
        self._blank = ""

    def _body(self, text: str) -> None:
        route = self._route
        if route is None:
            route = route_unprefixed(self._mode, self._sticky)
            self._open(route)
        if not route.delivers:
            return
        if not self._started:
            if is_blank(text):
                self._blank += text
                return
            text = self._blank + text
            self._blank = ""
            self._started = True
        self._parts.append(text)
