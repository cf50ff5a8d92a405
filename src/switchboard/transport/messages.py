"""JSON-RPC 2.0 messages, sans-I/O: classify inbound frames, encode outbound ones.

:func:`decode_frame` turns one frame into events (:class:`InboundCall`,
:class:`InboundNotification`, :class:`InboundResponse`, :class:`ImmediateReply` for a
message that is answered with an error without reaching a handler, :class:`Discarded` for
what is dropped with only a log line). The ``encode_*`` functions build outbound frames.

Rules kept here (JSON-RPC 2.0):

- ``jsonrpc`` must be ``"2.0"``; otherwise ``INVALID_REQUEST`` if the message has a usable
  id, else it is discarded.
- A request id is a string, an integer (not a bool) or null, and is echoed back as it came.
  A response is matched by its exact value; ours are always integers.
- A batch is answered with one array holding an entry per request and per invalid element,
  in element order; a batch of notifications and responses only gets no answer; an empty
  batch gets a single ``INVALID_REQUEST`` (not an array).
- A frame that is not JSON is a parse error when it looks like JSON (starts with ``{`` or
  ``[``) and otherwise junk to be skipped: connectors print banners on stdout.

This module knows the JSON-RPC envelope only: not what methods mean, not links, not tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from switchboard.transport.errors import invalid_request, parse_error

__all__ = [
    "BatchReply",
    "Discarded",
    "ImmediateReply",
    "Inbound",
    "InboundCall",
    "InboundNotification",
    "InboundResponse",
    "RequestId",
    "decode_frame",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
]

RequestId = str | int | None
"""An id as it appears on the wire (null only on error responses and odd requests)."""

_NO_ID: Final = object()


class BatchReply:
    """Collects the entries of one batch answer; the array goes out when the last is in.

    Theory of operation: the decoder gives every element that needs an entry a slot (calls
    get an empty one, invalid elements a filled one); each call answered fills its slot via
    :meth:`fill`, which returns the whole array once no slot is empty.
    """

    __slots__ = ("_entries", "_missing")

    def __init__(self) -> None:
        self._entries: list[bytes | None] = []
        self._missing = 0

    def reserve(self, entry: bytes | None) -> int:
        """Add a slot, already filled with ``entry`` or empty; return its index."""
        self._entries.append(entry)
        if entry is None:
            self._missing += 1
        return len(self._entries) - 1

    def fill(self, slot: int, entry: bytes) -> bytes | None:
        """Fill an empty slot; return the batch frame if that completed it."""
        self._entries[slot] = entry
        self._missing -= 1
        return self.frame() if self._missing == 0 else None

    def frame(self) -> bytes | None:
        """The array frame when every slot is filled and there is at least one."""
        if self._missing or not self._entries:
            return None
        return b"[" + b",".join(e for e in self._entries if e is not None) + b"]"


@dataclass(slots=True, eq=False)
class InboundCall:
    """A request to be handled and answered exactly once (``answered`` guards that)."""

    id: RequestId
    method: str
    params: Any
    batch: BatchReply | None = None
    slot: int = 0
    answered: bool = False


@dataclass(frozen=True, slots=True)
class InboundNotification:
    """A notification: handled, never answered."""

    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class InboundResponse:
    """A response to one of our requests: ``error`` is the raw error object, if any."""

    id: RequestId
    result: Any
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class ImmediateReply:
    """A frame to send straight back (an error for something no handler may see)."""

    frame: bytes


@dataclass(frozen=True, slots=True)
class Discarded:
    """Something dropped without an answer; ``reason`` is a stable snake_case log event."""

    reason: str
    detail: str


Inbound = InboundCall | InboundNotification | InboundResponse | ImmediateReply | Discarded


def encode_request(request_id: int, method: str, params: Any) -> bytes:
    """Serialize a request (``params`` left out when ``None``)."""
    if params is None:
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method})
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def encode_notification(method: str, params: Any) -> bytes:
    """Serialize a notification (``params`` left out when ``None``)."""
    if params is None:
        return orjson.dumps({"jsonrpc": "2.0", "method": method})
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})


def encode_result(request_id: RequestId, result: Any) -> bytes:
    """Serialize a success response; raises ``TypeError`` if ``result`` is not JSON."""
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_error(request_id: RequestId, error: dict[str, Any]) -> bytes:
    """Serialize an error response carrying the error object ``error``."""
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def _invalid(request_id: RequestId, reason: str) -> bytes:
    return encode_error(request_id, invalid_request(reason).to_wire())


def _usable_id(value: object) -> bool:
    return value is None or type(value) is int or type(value) is str


def decode_frame(frame: bytes) -> list[Inbound]:
    """Classify one inbound frame into the events it carries, in order."""
    try:
        obj = orjson.loads(frame)
    except orjson.JSONDecodeError:
        if frame.lstrip()[:1] in (b"{", b"["):
            return [ImmediateReply(encode_error(None, parse_error().to_wire()))]
        return [Discarded("junk_line_skipped", frame[:200].decode("utf-8", "replace"))]
    if type(obj) is dict:
        event = _classify(obj)
        return [ImmediateReply(event) if isinstance(event, bytes) else event]
    if type(obj) is list:
        return _decode_batch(obj)
    return [ImmediateReply(_invalid(None, "not an object or array"))]


def _decode_batch(elements: list[Any]) -> list[Inbound]:
    if not elements:
        return [ImmediateReply(_invalid(None, "empty batch"))]
    batch = BatchReply()
    events: list[Inbound] = []
    for element in elements:
        event = _classify(element) if type(element) is dict else _invalid(None, "not an object")
        if isinstance(event, bytes):
            batch.reserve(event)
            continue
        if isinstance(event, InboundCall):
            event.batch = batch
            event.slot = batch.reserve(None)
        events.append(event)
    frame = batch.frame()
    if frame is not None:  # nothing left to wait for: only invalid elements needed entries
        events.append(ImmediateReply(frame))
    return events


def _classify(msg: dict[str, Any]) -> Inbound | bytes:
    """One message object to an event, or to the bytes of an immediate error answer."""
    request_id = msg.get("id", _NO_ID)
    has_id = request_id is not _NO_ID
    answer_id: RequestId = request_id if has_id and _usable_id(request_id) else None
    if msg.get("jsonrpc") != "2.0":
        if has_id and "method" in msg:
            return _invalid(answer_id, '"jsonrpc" must be "2.0"')
        return Discarded("message_dropped", 'no "jsonrpc": "2.0" member')
    method = msg.get("method")
    params = msg.get("params")
    if params is not None and type(params) is not dict and type(params) is not list:
        if has_id:
            return _invalid(answer_id, "params must be an object or array")
        return Discarded("message_dropped", "notification params not an object or array")
    if method is not None:
        if type(method) is not str:
            return _invalid(answer_id, "method must be a string")
        if not has_id:
            return InboundNotification(method, params)
        if not _usable_id(request_id):
            return _invalid(None, "id must be a string or an integer")
        return InboundCall(request_id, method, params)
    if has_id:
        if "result" in msg:
            return InboundResponse(answer_id, msg["result"], None)
        error = msg.get("error")
        if error is not None:
            if type(error) is not dict:
                error = {"code": None, "message": str(error)}
            return InboundResponse(answer_id, None, error)
        return _invalid(answer_id, "no method, result or error")
    return _invalid(None, "no method and no id")
