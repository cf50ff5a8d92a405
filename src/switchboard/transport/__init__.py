"""JSON-RPC 2.0 over byte streams: framing, links, and the :class:`Peer`.

Layers, bottom up: ``framing`` (sans-I/O NDJSON splitting), ``link`` (the frame-level
``Link`` protocol) with one module per transport (``memory``, ``stdio``, ``stdio_server``,
``tcp``, ``ws``; ``stream_link`` is the NDJSON pump stdio and TCP share), ``messages``
(sans-I/O JSON-RPC classification and encoding), ``errors``, and the peer: ``peer`` (tasks,
ordering, dispatch) over ``pending`` (our requests: ids, matching, timeouts, with
``deadlines``), ``outbox`` (writes and batching) and ``handlers`` (handler shapes,
``Deferred``). What a peer may repeat without end is logged through the leaf module
:mod:`switchboard.runtime.ratelog`.

This package knows JSON-RPC 2.0 and nothing of MCPL: of ``switchboard`` it imports only the
leaf module ``ratelog``.
"""

from switchboard.transport.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    FrameTooLargeError,
    LinkClosedError,
    ParamProblem,
    RequestTimeoutError,
    RpcError,
    TransportError,
    WireError,
    internal_error,
    invalid_params,
    invalid_request,
    method_not_found,
    parse_error,
    wire_error,
)
from switchboard.transport.framing import (
    DEFAULT_MAX_FRAME,
    FrameTooLarge,
    NdjsonDecoder,
    encode_frames,
)
from switchboard.transport.handlers import (
    HANDLED_REQUEST_ID,
    Deferred,
    FutureLike,
    NotificationHandler,
    RequestHandler,
    handled_request_id,
)
from switchboard.transport.link import BatchLink, Link, NamedLink
from switchboard.transport.memory import MemoryLink, memory_link_pair
from switchboard.transport.messages import ParamsReader, ParamsReaders
from switchboard.transport.peer import Peer, PeerStatistics
from switchboard.transport.pending import USE_DEFAULT, Timeout
from switchboard.transport.stdio import SpawnError, StdioLink, spawn_stdio
from switchboard.transport.stdio_server import stdio_server_link
from switchboard.transport.stream_link import (
    NdjsonStreamLink,
    asyncio_read_transport,
    asyncio_stream_writer,
    asyncio_write_transport,
)
from switchboard.transport.tcp import dial_tcp, tcp_link_from_stream
from switchboard.transport.ws import WebSocketLink, dial_websocket, websocket_link_from_connection

__all__ = [
    "DEFAULT_MAX_FRAME",
    "HANDLED_REQUEST_ID",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "USE_DEFAULT",
    "BatchLink",
    "Deferred",
    "FrameTooLarge",
    "FrameTooLargeError",
    "FutureLike",
    "Link",
    "LinkClosedError",
    "MemoryLink",
    "NamedLink",
    "NdjsonDecoder",
    "NdjsonStreamLink",
    "NotificationHandler",
    "ParamProblem",
    "ParamsReader",
    "ParamsReaders",
    "Peer",
    "PeerStatistics",
    "RequestHandler",
    "RequestTimeoutError",
    "RpcError",
    "SpawnError",
    "StdioLink",
    "Timeout",
    "TransportError",
    "WebSocketLink",
    "WireError",
    "asyncio_read_transport",
    "asyncio_stream_writer",
    "asyncio_write_transport",
    "dial_tcp",
    "dial_websocket",
    "encode_frames",
    "handled_request_id",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "memory_link_pair",
    "method_not_found",
    "parse_error",
    "spawn_stdio",
    "stdio_server_link",
    "tcp_link_from_stream",
    "websocket_link_from_connection",
    "wire_error",
]
