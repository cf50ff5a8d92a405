"""Errors of the JSON-RPC transport layer, and the one place exceptions become wire errors.

Hierarchy::

    TransportError                 root of everything this package raises
    ├── LinkClosedError            the link is closed or hit EOF (yours or the remote's doing)
    ├── RequestTimeoutError        an outbound request got no response in time
    ├── FrameTooLargeError         an inbound frame exceeded the link's ``max_frame``
    └── RpcError                   a JSON-RPC error object: the remote answered with one
                                   (raised by ``Peer.request``), or a handler raises one to
                                   answer with it

:class:`WireError` is the structural type of any exception that knows its own wire form
(``to_wire()``); :func:`wire_error` maps an arbitrary exception raised by a request handler
to the error object the peer sends. This module knows JSON-RPC 2.0 error objects; it does
not know MCPL or any application error codes (other packages define those as ``WireError``
exceptions of their own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import pydantic

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "FrameTooLargeError",
    "LinkClosedError",
    "RequestTimeoutError",
    "RpcError",
    "TransportError",
    "WireError",
    "wire_error",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# At most this many validation problems are reported back; the rest are counted.
_MAX_REPORTED_VALIDATION_ERRORS = 10


class TransportError(Exception):
    """Root of every error raised by :mod:`switchboard.transport`."""


class LinkClosedError(TransportError):
    """The link is closed or reached EOF; nothing more can be sent or received on it."""


class RequestTimeoutError(TransportError):
    """An outbound request received no response within its timeout."""


class FrameTooLargeError(TransportError):
    """An inbound frame was longer than the link allows; it was discarded, the link lives on.

    Args:
        limit: the link's ``max_frame`` in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"frame exceeds {limit} bytes")
        self.limit = limit


class RpcError(TransportError):
    """A JSON-RPC 2.0 error object as an exception.

    Raised by ``Peer.request`` when the remote answers with an error; raise it from a request
    handler to answer with exactly this error.

    Args:
        code: the JSON-RPC error code.
        message: a short, human-readable description.
        data: optional JSON-serializable detail; omitted from the wire form when ``None``.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        return f"RpcError(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    def to_wire(self) -> dict[str, Any]:
        """Return the error object: ``{"code", "message"[, "data"]}``."""
        obj: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            obj["data"] = self.data
        return obj

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> RpcError:
        """Build from an error object received on the wire.

        A malformed object (non-integer code, non-string message) still yields an error,
        with ``INTERNAL_ERROR`` or an empty message in place of the bad member, so a remote's
        mistake never turns into a crash here.
        """
        code = obj.get("code")
        message = obj.get("message")
        if type(code) is not int:
            code = INTERNAL_ERROR
        if not isinstance(message, str):
            message = "malformed error object" if message is None else str(message)
        return cls(code, message, obj.get("data"))


@runtime_checkable
class WireError(Protocol):
    """Any exception that knows its own JSON-RPC error object."""

    def to_wire(self) -> dict[str, Any]:
        """Return ``{"code": int, "message": str[, "data": ...]}``."""
        ...


def _validation_data(exc: pydantic.ValidationError) -> dict[str, Any]:
    """Field locations and messages only: no input values, no URLs, no library context."""
    problems = exc.errors(include_url=False, include_context=False, include_input=False)
    listed = [
        {"field": ".".join(str(part) for part in problem["loc"]), "message": problem["msg"]}
        for problem in problems[:_MAX_REPORTED_VALIDATION_ERRORS]
    ]
    data: dict[str, Any] = {"errors": listed}
    if len(problems) > len(listed):
        data["more"] = len(problems) - len(listed)
    return data


def wire_error(exc: BaseException) -> tuple[dict[str, Any], bool]:
    """Map an exception raised by a request handler to the error object to send.

    Returns:
        ``(error_object, unexpected)``. ``unexpected`` is true when the exception had no
        wire meaning and became a bare ``INTERNAL_ERROR``; the caller logs those with their
        traceback, since nothing about them may reach the remote.
    """
    if isinstance(exc, WireError):
        try:
            return exc.to_wire(), False
        except Exception:  # a broken to_wire is a bug of ours, not the remote's business
            return {"code": INTERNAL_ERROR, "message": "Internal error"}, True
    if isinstance(exc, pydantic.ValidationError):
        return {
            "code": INVALID_PARAMS,
            "message": "Invalid params",
            "data": _validation_data(exc),
        }, False
    return {"code": INTERNAL_ERROR, "message": "Internal error"}, True
