"""Messages in MCPL wire form, as the store keeps them: the body codec of a batch row.

What this module knows: the shape of one ``channels/incoming`` message on the wire
(``channelId``, ``messageId``, ``threadId?``, ``author{id,name}``, ``timestamp``, ``content``,
``metadata?``, ``tags?``, and whatever else the connector sent), how a batch of them is
encoded (one JSON array of the messages, unknown fields kept as given: orjson's encoding of
wire dicts, or the connector's own bytes joined, see :class:`RawMessages`; stored packed with
zlib when that is smaller, see :func:`pack_body`), the key that identifies a message for
de-duplication, and how an :class:`IncomingRecord` becomes a wire
message and a wire message becomes a :class:`StoredMessage`.

What it deliberately does not know: SQLite, threads, the event loop, or whether a message is
valid MCPL. The host validates messages before they reach the store; this module only refuses
what it cannot encode or key.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, overload

import orjson

from switchboard.store.records import IncomingRecord, StoredMessage, StoreError

__all__ = [
    "PACK_MIN_BYTES",
    "Key",
    "RawMessages",
    "StoredSlice",
    "WireMessage",
    "decode_body",
    "encode_body",
    "keys_of",
    "load_json",
    "pack_body",
    "runs_by_server",
    "slice_batch",
    "to_stored",
    "to_wire",
]

WireMessage = dict[str, Any]
# (server_id, channelId, messageId): at most one stored message per key (within the window).
Key = tuple[str, str, str]

_DUMPS: Final = orjson.dumps
_LOADS: Final = orjson.loads
_compress: Final = zlib.compress
_decompress: Final = zlib.decompress
# The first byte of a zlib stream with the default window (CMF 0x78); never the first byte of
# a JSON array.
_ZLIB_FIRST: Final = b"\x78"

#: Bodies shorter than this are stored as they are (a row of one page either way).
PACK_MIN_BYTES: Final = 2048


def encode_body(messages: Sequence[WireMessage]) -> bytes:
    """One orjson document for the whole batch (a JSON array of the messages, in order).

    Raises:
        StoreError: a message holds something JSON cannot represent.
    """
    try:
        return _DUMPS(messages)
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise StoreError(f"a message cannot be encoded as JSON: {exc}") from exc


def pack_body(body: bytes) -> bytes:
    """What is stored for ``body``: the body compressed with zlib (level 1) when it is at least
    :data:`PACK_MIN_BYTES` and compressing makes it smaller, else the body as it is.

    Why: one commit of a 12 KB batch spans two 8 KiB pages and costs about 250 µs on the
    development VM, one of 1 KB about 45 µs; deflate at level 1 takes about 35 µs for 12 KB
    and runs without the GIL. The stored row shrinks 3 to 15 times with it.

    The store packs a batch on the submitting thread: on the writer thread, taking the GIL back
    after deflate meant waiting for the event loop's next system call, about 200 µs a batch
    under load (a py-spy profile of the writer thread). zlib is the standard library's: no new
    dependency, and its own header and checksum mark and guard a packed body (a JSON array
    starts with ``[``, a zlib stream with ``0x78``).
    """
    if len(body) < PACK_MIN_BYTES or body[:1] != b"[":  # short, or packed already
        return body
    packed = _compress(body, 1)
    return packed if len(packed) < len(body) else body


def decode_body(body: bytes) -> list[WireMessage]:
    """The messages of one stored batch, in seq order (packed or not, see :func:`pack_body`).

    Raises:
        StoreError: the body is not a JSON array (the file was damaged or written by others).
    """
    if body[:1] == _ZLIB_FIRST:
        try:
            body = _decompress(body)
        except zlib.error as exc:
            raise StoreError(f"a stored batch cannot be unpacked: {exc}") from exc
    try:
        messages = load_json(body)
    except ValueError as exc:
        raise StoreError(f"a stored batch is not valid JSON: {exc}") from exc
    if not isinstance(messages, list):
        raise StoreError("a stored batch is not a JSON array")
    return messages


def _finite_or_none(text: str) -> float | None:
    number = float(text)
    return number if math.isfinite(number) else None


def load_json(data: Any) -> Any:
    """``data`` read as JSON: by orjson, or by the standard library when orjson cannot read
    it but it is JSON all the same (a number beyond a double's range such as ``1e999``, read
    as null, which is how orjson would have written it).

    Why the second reader: a batch the host stored as the connector's own bytes
    (:class:`RawMessages`) was checked as JSON by msgspec, which reads a few texts orjson
    refuses; those must still read back.

    ``data``: bytes, or any object with the buffer protocol (a ``msgspec.Raw`` ...).

    Raises:
        ValueError: ``data`` is not JSON.
    """
    if type(data) is not bytes:
        data = memoryview(data)
    try:
        return _LOADS(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(bytes(data), parse_float=_finite_or_none)
        except RecursionError as exc:
            raise ValueError(f"nested too deeply: {exc}") from None


class RawMessages(Sequence[WireMessage]):
    """Wire messages kept as the bytes they came in (one buffer each), read when looked at.

    The hot ingest path hands these to the store, which writes the bytes as they are (no
    encoding), and to the host's listeners, most of which never look at a message, or only at
    the last one: each message is read (with :func:`load_json`) when first asked for, and
    kept. The bytes must be one valid JSON object each.
    """

    __slots__ = ("_body", "_raws", "_read")

    def __init__(self, raws: Sequence[Any], body: bytes | None = None) -> None:
        """``body``: the raws joined into a JSON array, when the caller has it already."""
        self._raws = raws
        self._body = body
        self._read: list[WireMessage | None] | None = None

    def __len__(self) -> int:
        return len(self._raws)

    @overload
    def __getitem__(self, index: int) -> WireMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[WireMessage]: ...
    def __getitem__(self, index: int | slice) -> WireMessage | list[WireMessage]:
        if isinstance(index, slice):
            return [self._one(i) for i in range(*index.indices(len(self._raws)))]
        count = len(self._raws)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("message index out of range")
        return self._one(index)

    def __iter__(self) -> Iterator[WireMessage]:
        return (self._one(i) for i in range(len(self._raws)))

    def __reversed__(self) -> Iterator[WireMessage]:
        return (self._one(i) for i in range(len(self._raws) - 1, -1, -1))

    def _one(self, index: int) -> WireMessage:
        read = self._read
        if read is None:
            read = self._read = [None] * len(self._raws)
        message = read[index]
        if message is None:
            message = read[index] = load_json(self._raws[index])
        return message

    def body(self, positions: Sequence[int] | None = None) -> bytes:
        """The JSON array of the messages (or of those at ``positions``), from their bytes."""
        raws = self._raws
        if positions is None:
            if self._body is not None:
                return self._body
        else:
            raws = [raws[i] for i in positions]
        return b"[" + b",".join(raws) + b"]"

    def pick(self, positions: Sequence[int]) -> RawMessages:
        """The messages at ``positions``, in that order (read again when looked at)."""
        return RawMessages([self._raws[i] for i in positions])


def keys_of(server_id: str, messages: Sequence[WireMessage]) -> list[Key]:
    """The de-duplication key of every message, in order.

    Raises:
        StoreError: a message is not an object with ``channelId`` and ``messageId``.
    """
    try:
        return [(server_id, m["channelId"], m["messageId"]) for m in messages]
    except (KeyError, TypeError) as exc:
        raise StoreError(f"a message has no channelId/messageId: {exc!r}") from exc


def to_wire(record: IncomingRecord) -> WireMessage:
    """The wire form of a record; optional members appear only when they have a value."""
    message: WireMessage = {
        "channelId": record.channel_id,
        "messageId": record.message_id,
        "author": {"id": record.author_id, "name": record.author_name},
        "timestamp": record.timestamp,
        "content": record.content,
    }
    if record.thread_id is not None:
        message["threadId"] = record.thread_id
    if record.metadata is not None:
        message["metadata"] = record.metadata
    if record.tags is not None:
        message["tags"] = record.tags
    return message


def runs_by_server(records: Sequence[IncomingRecord]) -> list[tuple[str, list[WireMessage]]]:
    """Split records into runs of the same ``server_id`` (a batch row has one server), each
    converted to wire form, keeping their order. A connector's batch is a single run."""
    runs: list[tuple[str, list[WireMessage]]] = []
    current: list[WireMessage] | None = None
    server: str | None = None
    for record in records:
        if current is None or record.server_id != server:
            server = record.server_id
            current = []
            runs.append((server, current))
        current.append(to_wire(record))
    return runs


def to_stored(seq: int, server_id: str, received_at: float, message: WireMessage) -> StoredMessage:
    """Build the :class:`StoredMessage` for one decoded wire message.

    Raises:
        StoreError: the message lacks a member every stored message has.
    """
    try:
        author = message["author"]
        return StoredMessage(
            seq=seq,
            server_id=server_id,
            channel_id=message["channelId"],
            message_id=message["messageId"],
            thread_id=message.get("threadId"),
            author_id=author["id"],
            author_name=author["name"],
            timestamp=message["timestamp"],
            content=message["content"],
            metadata=message.get("metadata"),
            tags=message.get("tags"),
            received_at=received_at,
        )
    except (KeyError, TypeError) as exc:
        raise StoreError(f"stored message {seq} lacks a member: {exc!r}") from exc


@dataclass(frozen=True, slots=True)
class StoredSlice:
    """Consecutive stored messages of one batch, still in wire form: seqs ``first_seq``,
    ``first_seq + 1``, ... in order.

    Why not :class:`StoredMessage` at once: an instance that follows other instances' commits
    reads every batch to route it, and most messages are routed to none of its agents; building
    a record per message costs more than deciding that (``bench/bench_cluster.py``, tail).
    """

    first_seq: int
    server_id: str
    received_at: float
    messages: list[WireMessage]

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.messages) - 1

    def stored(self) -> list[StoredMessage]:
        """The messages as records (see :func:`to_stored`)."""
        sid, at = self.server_id, self.received_at
        return [to_stored(s, sid, at, m) for s, m in enumerate(self.messages, self.first_seq)]


def slice_batch(
    first_seq: int, server_id: str, received_at: float, body: bytes, start: int, room: int
) -> StoredSlice:
    """The messages of one stored batch row from seq ``start`` on, at most ``room`` of them.

    Raises:
        StoreError: the body cannot be decoded (see :func:`decode_body`).
    """
    messages = decode_body(body)
    skip = start - first_seq if start > first_seq else 0
    return StoredSlice(first_seq + skip, server_id, received_at, messages[skip : skip + room])
