"""JSON-RPC 2.0 messages, sans-I/O: classify inbound frames, encode outbound ones.

:func:`decode_frame` turns one frame into events (a call, a notification, a response, an
immediate error reply, or what is discarded); the ``encode_*`` functions build outbound frames.
Ids are echoed exactly as they came, batches answered element by element, and junk that does
not look like JSON skipped; a method's :data:`ParamsReaders` may read its params straight from
the frame's bytes (the hot path), with everything that does not fit read the general way.

This module knows the JSON-RPC envelope only: not what methods mean, not links, not tasks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast

import msgspec
import orjson

from switchboard.transport.errors import ParamProblem, invalid_params, invalid_request, parse_error

__all__ = [
    "BatchReply",
    "Discarded",
    "ImmediateReply",
    "Inbound",
    "InboundCall",
    "InboundNotification",
    "InboundResponse",
    "ParamsReader",
    "ParamsReaders",
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


# The values read off the wire are plain slotted dataclasses, never changed after they are
# made: a frozen dataclass costs three times as much to build (about 1 µs), once per frame.


@dataclass(slots=True)
class InboundNotification:
    """A notification: handled, never answered."""

    method: str
    params: Any


@dataclass(slots=True)
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
    """Something not handled (at most answered with an error that comes as its own event);
    ``reason`` is a stable snake_case log event, ``detail`` at most 200 characters of it."""

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
    try:
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})
    except TypeError:
        if not _beyond_orjson(request_id):
            raise
        return _with_id(orjson.dumps({"jsonrpc": "2.0", "id": None, "result": result}), request_id)


def encode_error(request_id: RequestId, error: dict[str, Any]) -> bytes:
    """Serialize an error response carrying the error object ``error``."""
    try:
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})
    except TypeError:
        if not _beyond_orjson(request_id):
            raise
        return _with_id(orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error}), request_id)


# -- ids orjson cannot carry -------------------------------------------------------------------
#
# orjson reads an integer beyond 64 bits as a float (so the id would be lost) and refuses a
# string with an escaped unpaired surrogate ("\ud800"); it cannot write either back. Both are
# valid JSON, and JSON-RPC echoes the id as it came. Frames that hit one of them are read again
# with the stdlib parser, and answers to them get the id spliced in by the stdlib encoder
# (ASCII escapes, so "\ud800" goes back exactly as it came). Every other frame stays on
# orjson: the fallback costs a type check per message.

_NULL_ID_PREFIX: Final = b'{"jsonrpc":"2.0","id":null'
_UNREAD: Final = object()


def _beyond_orjson(request_id: RequestId) -> bool:
    """Whether ``request_id`` is an id orjson cannot write (a huge integer, a lone surrogate)."""
    if type(request_id) is not int and type(request_id) is not str:
        return False
    try:
        orjson.dumps(request_id)
    except TypeError:
        return True
    return False


def _with_id(frame: bytes, request_id: RequestId) -> bytes:
    """``frame`` (encoded with a null id) with ``request_id`` written by the stdlib encoder."""
    assert frame.startswith(_NULL_ID_PREFIX)
    written = json.dumps(request_id, ensure_ascii=True).encode("ascii")
    return b'{"jsonrpc":"2.0","id":' + written + frame[len(_NULL_ID_PREFIX) :]


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _stdlib_loads(frame: bytes) -> Any:
    """The stdlib parser's reading of ``frame`` (exact integers, surrogates kept), or
    :data:`_UNREAD` when it is not JSON either (NaN and Infinity included)."""
    try:
        return json.loads(frame, parse_constant=_no_constants)
    except (ValueError, RecursionError):
        return _UNREAD


def _float_id(obj: Any) -> bool:
    """Whether a message (or a batch element) has a float id: maybe a huge integer read lossily."""
    if type(obj) is dict:
        return type(obj.get("id")) is float
    return type(obj) is list and any(type(e) is dict and type(e.get("id")) is float for e in obj)


def _loads(frame: bytes) -> tuple[Any, bool]:
    """Parse one frame: ``(value, exact)``, ``exact`` when the stdlib parser had to read it.

    Raises:
        orjson.JSONDecodeError: Neither parser reads it.
    """
    try:
        obj = orjson.loads(frame)
    except orjson.JSONDecodeError:
        if frame.lstrip()[:1] not in (b"{", b"["):
            raise
        exact = _stdlib_loads(frame)
        if exact is _UNREAD:
            raise
        return exact, True
    if _float_id(obj):
        exact = _stdlib_loads(frame)
        if exact is not _UNREAD:
            return exact, True
    return obj, False


def _refuse_surrogates(method: str, params: Any, answer_id: object) -> bytes | Discarded | None:
    """The refusal of a message whose method or params hold an unpaired surrogate, or None.

    ``answer_id`` is the id to answer with, or ``_NO_ID`` for a notification (dropped).
    """
    if _surrogate_at(method) is not None:
        problem = "method holds an unpaired UTF-16 surrogate, which is not text"
        if answer_id is _NO_ID:
            return Discarded("message_dropped", problem)
        return _invalid(cast(RequestId, answer_id), problem)
    where = _surrogate_at(params)
    if where is None:
        return None
    problem = "holds an unpaired UTF-16 surrogate (such as \\ud800), which is not text"
    if answer_id is _NO_ID:
        return Discarded("message_dropped", f"params {where or '(whole)'} {problem}")
    error = invalid_params(ParamProblem(where, problem))
    return encode_error(cast(RequestId, answer_id), error.to_wire())


def _surrogate_at(value: Any, path: str = "") -> str | None:
    """The dotted path of the first string (or key) in ``value`` holding an unpaired
    surrogate, or None. Only frames the stdlib parser read can hold one."""
    if type(value) is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if type(value) is dict:
        for key, item in value.items():
            shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
            inner = f"{path}.{shown}" if path else shown
            if _surrogate_at(key) is not None:
                return inner
            found = _surrogate_at(item, inner)
            if found is not None:
                return found
    elif type(value) is list:
        for index, item in enumerate(value):
            found = _surrogate_at(item, f"{path}.{index}" if path else str(index))
            if found is not None:
                return found
    return None


def _invalid(request_id: RequestId, reason: str) -> bytes:
    return encode_error(request_id, invalid_request(reason).to_wire())


def _usable_id(value: object) -> bool:
    return value is None or type(value) is int or type(value) is str


def _attempts_json_rpc(frame: bytes) -> bool:
    """Whether an unparsable frame still looks like a JSON-RPC message: an object (``{``), or
    a batch (``[`` then ``{`` or ``]``). ``[discord-mcpl] ...`` is a log line, not a batch."""
    text = frame.lstrip()
    if text[:1] == b"{":
        return True
    return text[:1] == b"[" and text[1:].lstrip()[:1] in (b"{", b"]")


P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class ParamsReader:
    """How to read one method's params straight from a request frame, in one pass.

    ``shape`` is a type msgspec decodes the params into, together with the envelope (one scan
    of the frame), and ``finish`` turns the decoded value into the params the handler gets, or
    None to have the frame read the general way.
    """

    shape: Any
    finish: Callable[[Any], Any | None]


ParamsReaders = Mapping[str, "ParamsReader | Callable[[msgspec.Raw], Any | None]"]
"""Per method, how to read a request's params from the frame's bytes: a :class:`ParamsReader`,
or a function of the params' raw JSON (the envelope is then read first). Either says None to
have the frame read the general way."""


class _Envelope(msgspec.Struct, Generic[P], gc=False):
    jsonrpc: str
    method: str
    id: int | str
    params: P


_read_envelope: Final = msgspec.json.Decoder(_Envelope[msgspec.Raw]).decode
_DECODERS: dict[Any, Callable[[bytes], _Envelope[Any]]] = {}  # per params shape
# How far into a frame its method is looked for: encoders write jsonrpc, id, method, params.
_HEAD: Final = 160
_QUOTED: dict[str, bytes] = {}  # a method name as it appears in a frame, quoted


def _read_request(frame: bytes, readers: ParamsReaders) -> InboundCall | None:
    """One request read through its method's params reader, or None to read it in full."""
    head = frame[:_HEAD]
    if b'"method"' not in head:  # a response (most frames a publisher reads): one search
        return None
    for method in readers:
        quoted = _QUOTED.get(method)
        if quoted is None:
            quoted = _QUOTED[method] = f'"{method}"'.encode()
        if quoted in head:
            break
    else:
        return None
    reader = readers[method]
    if not frame.isascii():
        try:  # a reader skips members, so the whole frame is checked to be UTF-8 here
            frame.decode()
        except UnicodeDecodeError:
            return None
    if isinstance(reader, ParamsReader):
        shape = reader.shape
        decode = _DECODERS.get(shape)
        if decode is None:
            decoder: msgspec.json.Decoder[_Envelope[Any]] = msgspec.json.Decoder(
                _Envelope[shape]  # type: ignore[valid-type]
            )
            decode = _DECODERS[shape] = decoder.decode
        finish = reader.finish
    else:
        decode, finish = _read_envelope, reader
    try:
        envelope = decode(frame)
    except (msgspec.DecodeError, RecursionError):
        return None
    if envelope.method != method or envelope.jsonrpc != "2.0":
        return None
    params = finish(envelope.params)
    if params is None:
        return None
    return InboundCall(envelope.id, method, params)


def decode_frame(frame: bytes, readers: ParamsReaders | None = None) -> list[Inbound]:
    """Classify one inbound frame into the events it carries, in order.

    :func:`decode_frame` turns one frame into events (:class:`InboundCall`,
    :class:`InboundNotification`, :class:`InboundResponse`, :class:`ImmediateReply` for a message
    that is answered with an error without reaching a handler, :class:`Discarded` for what is
    dropped with only a log line). The ``encode_*`` functions build outbound frames.

    Rules kept here (JSON-RPC 2.0):

    - ``jsonrpc`` must be ``"2.0"``; otherwise ``INVALID_REQUEST`` if the message has a usable id,
      else it is discarded.
    - A request id is a string, an integer (not a bool) or null, and is echoed back as it came, even
      an integer beyond 64 bits or a string with an escaped unpaired surrogate (``"\\ud800"``):
      orjson cannot read or write those exactly, so only the frames that hold one are read again by
      the stdlib parser, and their answers get the id written by the stdlib encoder. Such a frame's
      method or params holding an unpaired surrogate (not text) is refused with the id
      (``INVALID_PARAMS`` naming the field; a notification is dropped with a log line). A response
      is matched by its exact value; ours are always integers.
    - A batch is answered with one array holding an entry per request and per invalid element, in
      element order; a batch of notifications and responses only gets no answer; an empty batch gets
      a single ``INVALID_REQUEST`` (not an array).
    - A frame that is not JSON is a parse error when it looks like JSON (starts with ``{`` or ``[``)
      and otherwise junk to be skipped: connectors print banners on stdout.

    A caller may pass :data:`ParamsReaders`: for a request naming one of their methods, the frame is
    first read as an envelope with its params left as bytes, and the method's reader turns those
    bytes into the params (the hot ``channels/incoming`` path reads and checks its messages in one
    pass, see :func:`switchboard.protocol.fastpath.read_incoming_params`). Any frame that does not
    fit (a batch, an odd id, a reader that says None ...) is read the general way, so the rules
    above hold whatever the readers do.

    ``readers``: see :data:`ParamsReaders` (the module's docstring).
    """
    if readers:
        call = _read_request(frame, readers)
        if call is not None:
            return [call]
    try:
        obj, exact = _loads(frame)
    except orjson.JSONDecodeError:
        sample = frame[:200].decode("utf-8", "replace")
        if _attempts_json_rpc(frame):
            # JSON-RPC 2.0 §5.1: invalid JSON is answered -32700 with a null id.
            return [
                Discarded("unparsable_message_answered", sample),
                ImmediateReply(encode_error(None, parse_error().to_wire())),
            ]
        # Not JSON at all (a banner such as "[name] Client initialized"): never answered.
        return [Discarded("junk_line_skipped", sample)]
    if type(obj) is dict:
        event = _classify(obj, exact)
        return [ImmediateReply(event) if isinstance(event, bytes) else event]
    if type(obj) is list:
        return _decode_batch(obj, exact)
    return [ImmediateReply(_invalid(None, "not an object or array"))]


def _decode_batch(elements: list[Any], exact: bool = False) -> list[Inbound]:
    if not elements:
        return [ImmediateReply(_invalid(None, "empty batch"))]
    batch = BatchReply()
    events: list[Inbound] = []
    for element in elements:
        event = (
            _classify(element, exact) if type(element) is dict else _invalid(None, "not an object")
        )
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


def _classify(msg: dict[str, Any], exact: bool = False) -> Inbound | bytes:
    """One message object to an event, or to the bytes of an immediate error answer.

    ``exact``: the stdlib parser read it, so its method or params may hold an unpaired
    surrogate, which is not text: a request is refused with its id, a notification dropped.
    """
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
        if exact:
            refused = _refuse_surrogates(method, params, answer_id if has_id else _NO_ID)
            if refused is not None:
                return refused
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
