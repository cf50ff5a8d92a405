"""Errors of the JSON-RPC transport layer, the constructors of the standard error objects, and
the one place exceptions become wire errors.

:class:`TransportError` is the root; :class:`RpcError` is the one error object class, which
other layers derive their coded errors from. The standard error objects are built only by the
constructors here (:func:`parse_error`, :func:`invalid_request`, :func:`method_not_found`,
:func:`invalid_params`, :func:`internal_error`), so each has one form, and :func:`wire_error`
maps whatever a handler raises to the error object the peer sends.

It knows JSON-RPC 2.0 error objects, not MCPL or any application codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

import pydantic

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "FrameTooLargeError",
    "LinkClosedError",
    "ParamProblem",
    "RequestTimeoutError",
    "RpcError",
    "TransportError",
    "WireError",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "parse_error",
    "wire_error",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# At most this many params problems are reported back; the rest are counted.
_MAX_REPORTED_PROBLEMS = 10


class TransportError(Exception):
    """Root of every error raised by :mod:`switchboard.transport`.

    Hierarchy::

        TransportError                 root of everything this package raises
        ├── LinkClosedError            the link is closed or hit EOF (yours or the remote's doing)
        ├── RequestTimeoutError        an outbound request got no response in time
        ├── FrameTooLargeError         an inbound frame exceeded the link's ``max_frame``
        └── RpcError                   a JSON-RPC error object: the remote answered with one
                                       (raised by ``Peer.request``), or a handler raises one to
                                       answer with it; other layers derive their coded errors
                                       from it (``switchboard.protocol.McplError``)

    The standard error objects are built only by the constructors here, so each has one form:

    - :func:`parse_error`: ``Parse error``;
    - :func:`invalid_request` ``(reason)``: ``Invalid Request: <reason>``;
    - :func:`method_not_found` ``(method)``: ``Method not found``, data ``{"method": <method>}``;
    - :func:`invalid_params` ``(*problems)``: ``Invalid params``, data ``{"errors": [{"field": ...,
      "message": ...}, ...][, "more": <n>]}``: the one shape, whether a hand-written check or a
      ``pydantic.ValidationError`` refused the params. ``field`` is a dotted path into the params
      (``""`` for the params as a whole); at most ten problems are listed and ``more`` counts the
      rest;
    - :func:`internal_error` ``(message?)``: ``Internal error``, or a sentence naming the state
      (``Peer is shutting down``), never internals.

    :class:`WireError` is the structural type of any exception that knows its own wire form
    (``to_wire()``); :func:`wire_error` maps an arbitrary exception raised by a request handler to
    the error object the peer sends. This module knows JSON-RPC 2.0 error objects; it does not know
    MCPL or any application error codes (other packages define those as ``RpcError`` subclasses or
    other ``WireError`` exceptions of their own).
    """


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
    handler to answer with exactly this error. Build the standard ones with the constructors
    of this module (:func:`method_not_found`, :func:`invalid_params`, ...).

    Args:
        code: the JSON-RPC error code.
        message: a short, human-readable description.
        data: optional JSON-serializable detail; omitted from the wire form when ``None``.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = int(code)
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(code={self.code!r}, message={self.message!r}, data={self.data!r})"

    def to_wire(self) -> dict[str, Any]:
        """Return the error object: ``{"code", "message"[, "data"]}``."""
        obj: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            obj["data"] = self.data
        return obj

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> RpcError:
        """Build a plain :class:`RpcError` from an error object received on the wire.

        A malformed object (non-integer code, non-string message) still yields an error,
        with ``INTERNAL_ERROR`` or a stand-in message in place of the bad member, so a
        remote's mistake never turns into a crash here. The result is always a plain
        ``RpcError``, whatever class it is called on: a layer that gives codes classes of
        their own maps it afterwards (``switchboard.protocol.read_error``).
        """
        code = obj.get("code")
        message = obj.get("message")
        if type(code) is not int:
            code = INTERNAL_ERROR
        if not isinstance(message, str):
            message = "malformed error object" if message is None else str(message)
        return RpcError(code, message, obj.get("data"))


class ParamProblem(NamedTuple):
    """One reason params were refused, as listed in ``invalid_params`` data.

    Attributes:
        field: a dotted path into the params (``messages``, ``channels.0.id``); ``""`` for
            the params as a whole.
        message: what is wrong there, as a short phrase.
    """

    field: str
    message: str


def parse_error() -> RpcError:
    """``-32700``: the frame looked like JSON but did not parse."""
    return RpcError(PARSE_ERROR, "Parse error")


def invalid_request(reason: str) -> RpcError:
    """``-32600``: the message is not a valid request; ``reason`` says why (``empty batch``)."""
    return RpcError(INVALID_REQUEST, f"Invalid Request: {reason}")


def method_not_found(method: str) -> RpcError:
    """``-32601``: nothing here answers ``method``; ``data`` is ``{"method": method}``."""
    return RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})


def invalid_params(*problems: ParamProblem) -> RpcError:
    """``-32602``: the params were refused for ``problems`` (at least one).

    ``data`` is ``{"errors": [{"field", "message"}, ...]}`` with at most ten problems listed,
    plus ``"more": n`` counting those left out.
    """
    if not problems:
        raise ValueError("invalid_params needs at least one problem")
    listed = [
        {"field": problem.field, "message": problem.message}
        for problem in problems[:_MAX_REPORTED_PROBLEMS]
    ]
    data: dict[str, Any] = {"errors": listed}
    if len(problems) > len(listed):
        data["more"] = len(problems) - len(listed)
    return RpcError(INVALID_PARAMS, "Invalid params", data)


def internal_error(message: str = "Internal error") -> RpcError:
    """``-32603``: the request could not be handled; ``message`` never carries internals."""
    return RpcError(INTERNAL_ERROR, message)


@runtime_checkable
class WireError(Protocol):
    """Any exception that knows its own JSON-RPC error object."""

    def to_wire(self) -> dict[str, Any]:
        """Return ``{"code": int, "message": str[, "data": ...]}``."""
        ...


def _validation_problems(exc: pydantic.ValidationError) -> list[ParamProblem]:
    """Field locations and messages only: no input values, no URLs, no library context."""
    return [
        ParamProblem(".".join(str(part) for part in problem["loc"]), problem["msg"])
        for problem in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


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
            return internal_error().to_wire(), True
    if isinstance(exc, pydantic.ValidationError):
        return invalid_params(*_validation_problems(exc)).to_wire(), False
    return internal_error().to_wire(), True
