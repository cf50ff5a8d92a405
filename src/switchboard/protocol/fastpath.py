"""A fast acceptance check for the hot ``channels/incoming`` path.

Validating every incoming message with pydantic costs several microseconds per message on a
small machine (four model objects each), which alone would cap a host well below the message
rates connectors can send. :func:`incoming_is_valid` is a hand-written check of the common
shape (text content only) that answers ``True`` only for messages the
:class:`~switchboard.protocol.channel_messages.IncomingMessage` model would also accept; a
property test holds it to that. Anything else, including every message with non-text content,
takes the full pydantic path, which also gives the reason when a message is refused.

This is our own code rather than a library because it is a shortcut in front of one: the
model stays the single definition of what is valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Final

import msgspec
import orjson

__all__ = [
    "CheckedMessage",
    "CheckedMessages",
    "IncomingRawParams",
    "accepted_results",
    "check_incoming_params",
    "incoming_is_valid",
    "read_incoming_params",
]


def incoming_is_valid(m: Any) -> bool:
    """True only if ``m`` is a well-formed incoming message whose content is all text."""
    if type(m) is not dict:
        return False
    get = m.get
    cid = get("channelId")
    mid = get("messageId")
    ts = get("timestamp")
    if type(cid) is not str or type(mid) is not str or type(ts) is not str:
        return False
    if not cid or not mid or not ts:
        return False
    author = get("author")
    if type(author) is not dict:
        return False
    if type(author.get("id")) is not str or type(author.get("name")) is not str:
        return False
    content = get("content")
    if type(content) is not list:
        return False
    for block in content:
        if type(block) is not dict or block.get("type") != "text":
            return False
        if type(block.get("text")) is not str:
            return False
    thread = get("threadId")
    if thread is not None and type(thread) is not str:
        return False
    metadata = get("metadata")
    if metadata is not None and type(metadata) is not dict:
        return False
    tags = get("tags")
    if tags is not None:
        if type(tags) is not list:
            return False
        for tag in tags:
            if type(tag) is not str:
                return False
    return True


# -- reading a whole batch straight from the frame's bytes ------------------------------------
#
# Why msgspec: it decodes JSON into typed structs in C and checks the types as it goes, so one
# pass both reads and validates a message, allocating one struct where orjson builds a dict of
# dicts; and ``msgspec.Raw`` keeps each message's own bytes (a view into the frame, no copy),
# which the store keeps as they came instead of encoding the message again.


class _Author(msgspec.Struct, gc=False):
    id: str
    name: str


class _Text(msgspec.Struct, tag_field="type", tag="text", gc=False):
    text: str


_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
_NULL: Final = msgspec.Raw(b"null")


class CheckedMessage(msgspec.Struct, gc=False):
    """The members of one incoming message the host reads, as checked while decoding.

    Accepted only when :func:`incoming_is_valid` would accept the message (text content only);
    members not named here are skipped, and kept in the message's raw bytes.
    """

    channelId: _NonEmpty
    messageId: _NonEmpty
    author: _Author
    timestamp: _NonEmpty
    content: list[_Text]
    threadId: str | None = None
    metadata: msgspec.Raw = _NULL  # an object or null, checked after decoding
    tags: list[str] | None = None

    def metadata_object(self) -> dict[str, Any] | None:
        """The ``metadata`` object, read now; None when it is absent or null."""
        if self.metadata is _NULL:
            return None
        value: dict[str, Any] | None = _read_metadata(self.metadata)
        return value


class IncomingRawParams(msgspec.Struct):
    """``channels/incoming`` params with each message kept as its JSON bytes: the shape the
    transport decodes a request's params into, in the same pass as its envelope (see
    :func:`check_incoming_params`)."""

    messages: list[msgspec.Raw]


class CheckedMessages(list[CheckedMessage]):
    """The messages of one ``channels/incoming`` request, every one checked, in order.

    ``raws`` holds each message's bytes exactly as the connector sent them (same order), and
    ``body`` those bytes joined into one JSON array.
    """

    __slots__ = ("body", "raws")

    def __init__(
        self, messages: list[CheckedMessage], raws: list[msgspec.Raw], body: bytes
    ) -> None:
        super().__init__(messages)
        self.raws = raws
        self.body = body


_read_params: Final = msgspec.json.Decoder(IncomingRawParams).decode
_read_messages: Final = msgspec.json.Decoder(list[CheckedMessage]).decode
_OBJECT_OR_NULL: Final = (ord("{"), ord("n"))
_read_metadata: Final = msgspec.json.Decoder(dict[str, Any] | None).decode


def read_incoming_params(params: bytes | msgspec.Raw) -> dict[str, Any] | None:
    """The params of a ``channels/incoming`` request read straight from their JSON bytes, as
    ``{"messages": CheckedMessages}``, or None unless every message is well formed with text
    content only (the caller then reads the frame the general way, which also says what is
    wrong with a message).

    The bytes must be valid UTF-8 (the caller checks the frame): members this skips are not
    checked for it.
    """
    try:
        raws = _read_params(params).messages
    except (msgspec.DecodeError, RecursionError):
        return None
    return _checked(raws)


def check_incoming_params(params: IncomingRawParams) -> dict[str, Any] | None:
    """:func:`read_incoming_params` for params the transport already decoded as
    :class:`IncomingRawParams` (``transport.ParamsReader(IncomingRawParams,
    check_incoming_params)``: one pass over the frame for the envelope and the list)."""
    return _checked(params.messages)


def _checked(raws: list[msgspec.Raw]) -> dict[str, Any] | None:
    # The messages' bytes joined into one array are what the store keeps, and decoding that
    # array in one call costs three quarters of decoding its messages one by one.
    body = b"[" + b",".join(raws) + b"]"
    try:
        messages = _read_messages(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    for m in messages:
        if m.metadata is not _NULL and memoryview(m.metadata)[0] not in _OBJECT_OR_NULL:
            return None
    return {"messages": CheckedMessages(messages, raws, body)}


def accepted_results(ids: Sequence[str], key: str) -> orjson.Fragment | None:
    """``[{key: id, "accepted": true}, ...]`` for ``ids`` in order, as JSON written once.

    The results of a batch whose every item was accepted (``channels/register`` answers with
    ``"id"``, ``channels/incoming`` with ``"messageId"``). Building one dict per item only for
    orjson to write it costs more than the rest of the answer; instead the ids are encoded as
    one JSON array, and each id is wrapped in its object by cutting that array at its element
    boundaries. When the encoded array holds no backslash, no id holds an escaped
    character (a quote included), so every ``"`` in it opens or closes an id; when it holds
    exactly one comma between each two ids, no id holds a comma; then ``","`` occurs only
    between two ids.

    Returns:
        An :class:`orjson.Fragment`, which orjson (and so the transport's encoder) copies as
        it is; or None when ``ids`` is empty or an id holds a comma, an escaped character or
        a character orjson cannot write: the caller builds the dicts then.
    """
    if not ids:
        return None
    try:
        encoded = orjson.dumps(ids)
    except orjson.JSONEncodeError:  # an unpaired surrogate, say
        return None
    if b"\\" in encoded or encoded.count(b",") != len(ids) - 1:
        return None
    name = orjson.dumps(key)
    between = b'","accepted":true},{' + name + b':"'
    inner = encoded[1:-1].replace(b'","', between)
    return orjson.Fragment(b"[{" + name + b":" + inner + b',"accepted":true}]')
