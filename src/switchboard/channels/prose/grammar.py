"""The ``>>`` prose grammar: splitting one block of an agent's text into routed segments.

:func:`parse_speech` splits text at prefix lines (``>>target`` with no space), keeps quoted
``>>`` and fenced code as body, and routes each segment by the agent's prose mode and the sticky
target (channel-registry.md §4.2, §4.4).

What it deliberately does not know: how a target token becomes a channel (an injected check),
and delivery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from switchboard.channels.prose.route import (
    NO_STICKY,
    SKIP_REPLY,
    ProseMode,
    Route,
    Sticky,
    TargetCheck,
    accept_every_target,
    route_prefixed,
    route_unprefixed,
)

__all__ = [
    "WHITESPACE",
    "Head",
    "ParseResult",
    "Segment",
    "is_blank",
    "is_prose_target_token",
    "match_head",
    "parse_speech",
]

WHITESPACE = frozenset(
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""The characters JavaScript's ``\\s`` matches: what ends a target token."""

_NOT_SPACE = "[^" + "".join(re.escape(c) for c in sorted(WHITESPACE)) + "]"
_EXPLICIT_HEAD = re.compile(rf">>({_NOT_SPACE}+)((?:[ \t]+!)?)[ \t]*")
_HYBRID_HEAD = re.compile(rf"[ \t]*>>>[ \t]*({_NOT_SPACE}+)((?:[ \t]+!)?)[ \t]*")


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or only :data:`WHITESPACE` (a body that delivers nothing)."""
    return all(c in WHITESPACE for c in text)


def is_prose_target_token(text: str) -> bool:
    """Whether ``text`` is a target token: one run of non-whitespace, other than ``skip_reply``.

    A channel whose only name is ``skip_reply`` is therefore never a prose target by that name;
    its server-qualified name (``server:skip_reply``) is.
    """
    return bool(text) and text != SKIP_REPLY and not any(c in WHITESPACE for c in text)


@dataclass(frozen=True, slots=True)
class Head:
    """The head of one prefix (or envelope) line.

    Attributes:
        token: The text after the arrows up to the first whitespace.
        continue_: The continue modifier (whitespace, then ``!``) followed the token.
        length: How many characters of the line the head spans (the body starts there).
    """

    token: str
    continue_: bool
    length: int


def match_head(line: str, mode: ProseMode) -> Head | None:
    """Return the head of ``line`` if it is a prefix line in ``mode``, else None.

    Args:
        line: One line, without its newline.
        mode: The author's prose mode; only explicit and hybrid have prefix lines.
    """
    if mode is ProseMode.EXPLICIT:
        if not line.startswith(">>"):
            return None
        found = _EXPLICIT_HEAD.match(line)
    elif mode is ProseMode.HYBRID:
        if ">>>" not in line:
            return None
        found = _HYBRID_HEAD.match(line)
    else:
        return None
    if found is None:
        return None
    return Head(found.group(1), bool(found.group(2)), found.end())


@dataclass(frozen=True, slots=True)
class Segment:
    """One routed piece of a text block.

    Attributes:
        route: Where the text goes (see :class:`~switchboard.channels.prose.route.Route`).
        text: The body, with the prefix stripped; ``{{unsent}}`` is not expanded here.
        prefix: The raw head as written (with the newline it took, if any); "" if unprefixed.
    """

    route: Route
    text: str
    prefix: str = ""

    @property
    def target(self) -> str | None:
        """The route's target token (None for the locus or no target)."""
        return self.route.target

    @property
    def private(self) -> bool:
        """Whether this is ``skip_reply`` private speech."""
        return self.route.private

    @property
    def continue_(self) -> bool:
        """Whether the prefix asked for a re-wake after the turn."""
        return self.route.continue_

    @property
    def explicit(self) -> bool:
        """Whether the segment had its own prefix."""
        return self.route.explicit

    @property
    def delivers(self) -> bool:
        """Whether anything goes out: a delivering route and a body that is not blank."""
        return self.route.delivers and not is_blank(self.text)


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The segments of one text block and the sticky state after it.

    Attributes:
        segments: In text order.
        sticky: Pass this as ``sticky`` to the next block of the same turn.
    """

    segments: tuple[Segment, ...]
    sticky: Sticky

    @property
    def continue_(self) -> bool:
        """Whether any prefix in the block asked for a re-wake after the turn."""
        return any(s.route.continue_ for s in self.segments)


def parse_speech(
    text: str,
    *,
    mode: ProseMode,
    sticky: Sticky = NO_STICKY,
    resolves: TargetCheck = accept_every_target,
) -> ParseResult:
    """Split one block of an agent's text into routed segments.

    What it knows (channel-registry.md §4.2, §4.4):

    - **Prefix line** (explicit mode): a line that starts with ``>>`` immediately followed by a
      non-whitespace character. ``>> quoted`` (a space after the arrows) and a bare ``>>`` are body
      text. Its head is ``>>TARGET``, then optionally the continue modifier (spaces or tabs, then
      ``!``), then any spaces or tabs; the body starts right after, on the same line.
    - **Envelope line** (hybrid mode): the same with ``>>>``, where spaces or tabs may come before
      the arrows and between the arrows and the target. ``>>target`` lines are body text there.
    - Locus and disabled modes have no prefixes at all: the whole block is one segment.
    - **Segmentation**: the lines before the first prefix line form an unprefixed segment (none when
      the block starts with a prefix line, none for an empty block); each prefix line starts a
      segment that runs up to the next prefix line, so a body spans many lines, ``>> quoted`` lines
      included. The newline before a prefix line belongs to neither body. When a prefix line has
      nothing after its head and the next line is body, the body starts on that next line (the head
      takes the newline). So ``"\\n".join(s.prefix + s.text for s in segments)`` is the block again.
    - **Targets**: a target token is a non-empty run of non-whitespace; ``skip_reply`` is not a
      target but marks private speech. "Whitespace" is the JavaScript ``\\s`` set (ASCII whitespace,
      U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF), so a token
      ends where the reference's would.
    - Lines end at ``\\n`` only; a ``\\r`` is ordinary whitespace (it ends a token, and is body).
    - The grammar is line-based and knows no Markdown: a ``>>x`` line inside a fenced code block is
      a prefix line like any other, and a ``>`` quote line is body unless it is a prefix line.

    Where each segment goes is decided by :mod:`~switchboard.channels.prose.route`, segment by
    segment in order, with the sticky target carried in and out (:class:`ParseResult.sticky`).

    Args:
        text: The block as the agent wrote it.
        mode: The author's prose mode.
        sticky: The sticky state left by the previous block of the same turn
            (:data:`~switchboard.channels.prose.route.NO_STICKY` at the start of a turn).
        resolves: Whether a target token resolves; called once per prefixed segment, in order,
            never for ``skip_reply``.

    Returns:
        The segments, and the sticky state for the next block.
    """
    if not text:
        return ParseResult((), sticky)
    if mode is ProseMode.LOCUS or mode is ProseMode.DISABLED:
        return ParseResult((Segment(route_unprefixed(mode, sticky), text),), sticky)
    lines = text.split("\n")
    heads = [(i, head) for i, line in enumerate(lines) if (head := match_head(line, mode))]
    if not heads:
        return ParseResult((Segment(route_unprefixed(mode, sticky), text),), sticky)
    segments: list[Segment] = []
    first = heads[0][0]
    if first > 0:
        leading = "\n".join(lines[:first])
        segments.append(Segment(route_unprefixed(mode, sticky), leading))
    ends = [i for i, _ in heads[1:]] + [len(lines)]
    for (i, head), end in zip(heads, ends, strict=True):
        route, sticky = route_prefixed(
            mode, head.token, continue_=head.continue_, sticky=sticky, resolves=resolves
        )
        line = lines[i]
        rest = line[head.length :]
        if not rest and i + 1 < end:
            prefix = line + "\n"
            body = "\n".join(lines[i + 1 : end])
        else:
            prefix = line[: head.length]
            body = "\n".join([rest, *lines[i + 1 : end]])
        segments.append(Segment(route, body, prefix))
    return ParseResult(tuple(segments), sticky)
