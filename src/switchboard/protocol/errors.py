"""MCPL wire errors: the spec's error codes, one class per code, and the table between them.

The MCPL-specific JSON-RPC error codes and their ``data`` (mcpl-protocol.md 3.17, 4.12), one
:class:`McplError` subclass per code, and :func:`read_error`, which reads an error answer as its
class so ``except UnknownChannel:`` works around a request. An ``McplError`` *is* a transport
``RpcError``, so raising one from a handler answers with it. :class:`ProtocolError` is the root
of everything this package raises.

What it deliberately does not know: JSON-RPC framing, request ids, or the standard codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import Any, ClassVar, Final, TypeVar

from switchboard.transport.errors import RpcError

__all__ = [
    "ERROR_CLASSES",
    "CapabilityDenied",
    "ChannelNotPermitted",
    "ChannelOpenFailed",
    "CheckpointNotFound",
    "ErrorCode",
    "FeatureSetNotEnabled",
    "McplError",
    "ProtocolError",
    "UnknownChannel",
    "UnknownFeatureSet",
    "from_rpc",
    "read_error",
]


class ErrorCode(IntEnum):
    """The error codes MCPL defines on top of JSON-RPC (spec §6.6, §8, §14.6)."""

    FEATURE_SET_NOT_ENABLED = -32001
    CAPABILITY_DENIED = -32002
    UNKNOWN_FEATURE_SET = -32003
    CHECKPOINT_NOT_FOUND = -32005
    CHANNEL_NOT_PERMITTED = -32017
    UNKNOWN_CHANNEL = -32023
    CHANNEL_OPEN_FAILED = -32024


class ProtocolError(Exception):
    """Root of every exception :mod:`switchboard.protocol` raises."""


class McplError(RpcError, ProtocolError):
    """An MCPL error: a JSON-RPC error object with an MCPL ``code``.

    What it knows: the MCPL-specific JSON-RPC error codes (mcpl-protocol.md 3.17 and 4.12), the
    ``data`` member each of them carries, the class each code is read as (:data:`ERROR_CLASSES`,
    :func:`from_rpc`, :func:`read_error`), and the root of everything this package raises
    (:class:`ProtocolError`).

    Hierarchy::

        ProtocolError                         root of everything switchboard.protocol raises
        ├── DigestError                       a manifest has no §17.2 digest (.digest)
        └── McplError(code, message, data)    an MCPL error; also a transport RpcError
            ├── FeatureSetNotEnabled          -32001  data {"featureSet"}
            ├── CapabilityDenied              -32002  data {"capability"}
            ├── UnknownFeatureSet             -32003  data {"featureSet"}
            ├── CheckpointNotFound            -32005  data {"checkpoint"}
            ├── ChannelNotPermitted           -32017  data {"channelId"}
            ├── UnknownChannel                -32023  data {"channelId"}
            └── ChannelOpenFailed             -32024  data {"channelId"?, "reason"}

        switchboard.transport.RpcError        (any JSON-RPC error; McplError derives from it)

    Reading errors: :func:`read_error` is the ``read_error`` a ``Peer`` of an MCPL party is given,
    so an error answer with an MCPL code raises its class (``except UnknownChannel:`` around a
    request works) while any other code stays a plain ``RpcError``. An error read off the wire keeps
    the peer's ``message`` and ``data`` as sent; its typed attributes (``channel_id`` ...) read
    ``data`` and are ``None`` when the peer left them out.

    Raise a subclass from a handler to answer a request with its error object; a peer built
    with :func:`read_error` raises the subclass for an error a remote sent.

    Args:
        code: the JSON-RPC error code; usually an :class:`ErrorCode` member.
        message: a short human-readable description.
        data: any JSON value that gives detail; left out of the wire form when ``None``.
    """

    #: The code a subclass fixes; the table :data:`ERROR_CLASSES` is keyed on it.
    CODE: ClassVar[ErrorCode]


_E = TypeVar("_E", bound=McplError)


def _received(cls: type[_E], message: str, data: Any) -> _E:
    """An error of ``cls`` as a peer sent it: the class's code, the peer's message and data.

    Bypasses the subclass's typed constructor, which builds ``data`` from its arguments.
    """
    error = cls.__new__(cls)
    McplError.__init__(error, cls.CODE, message, data)
    return error


def _member(data: Any, key: str) -> str | None:
    value = data.get(key) if isinstance(data, Mapping) else None
    return value if isinstance(value, str) else None


class FeatureSetNotEnabled(McplError):
    """-32001: the named feature set is declared but not enabled (§6.6)."""

    CODE = ErrorCode.FEATURE_SET_NOT_ENABLED

    def __init__(self, feature_set: str) -> None:
        super().__init__(self.CODE, "Feature set not enabled", {"featureSet": feature_set})

    @property
    def feature_set(self) -> str | None:
        """``data.featureSet``."""
        return _member(self.data, "featureSet")


class CapabilityDenied(McplError):
    """-32002: the method needs a capability path the grant does not match (§5.4)."""

    CODE = ErrorCode.CAPABILITY_DENIED

    def __init__(self, capability: str) -> None:
        super().__init__(self.CODE, "Capability denied", {"capability": capability})

    @property
    def capability(self) -> str | None:
        """``data.capability``: the gate path that was not granted."""
        return _member(self.data, "capability")


class UnknownFeatureSet(McplError):
    """-32003: the named feature set was never declared in the manifest (§6.6)."""

    CODE = ErrorCode.UNKNOWN_FEATURE_SET

    def __init__(self, feature_set: str) -> None:
        super().__init__(self.CODE, "Unknown feature set", {"featureSet": feature_set})

    @property
    def feature_set(self) -> str | None:
        """``data.featureSet``."""
        return _member(self.data, "featureSet")


class CheckpointNotFound(McplError):
    """-32005: ``state/rollback`` named a checkpoint that is pruned or unknown (§8)."""

    CODE = ErrorCode.CHECKPOINT_NOT_FOUND

    def __init__(self, checkpoint: str) -> None:
        super().__init__(self.CODE, "Checkpoint not found", {"checkpoint": checkpoint})

    @property
    def checkpoint(self) -> str | None:
        """``data.checkpoint``."""
        return _member(self.data, "checkpoint")


class ChannelNotPermitted(McplError):
    """-32017: no authority to publish to, or receive from, this channel (§14.6)."""

    CODE = ErrorCode.CHANNEL_NOT_PERMITTED

    def __init__(self, channel_id: str) -> None:
        super().__init__(self.CODE, "Channel not permitted", {"channelId": channel_id})

    @property
    def channel_id(self) -> str | None:
        """``data.channelId``."""
        return _member(self.data, "channelId")


class UnknownChannel(McplError):
    """-32023: the channel does not exist or was never registered (§14.6)."""

    CODE = ErrorCode.UNKNOWN_CHANNEL

    def __init__(self, channel_id: str) -> None:
        super().__init__(self.CODE, "Unknown channel", {"channelId": channel_id})

    @property
    def channel_id(self) -> str | None:
        """``data.channelId``."""
        return _member(self.data, "channelId")


class ChannelOpenFailed(McplError):
    """-32024: ``channels/open`` could not connect to the channel (§14.6).

    ``channel_id`` is ``None`` when the open named only ``type`` and ``address``; ``data``
    then carries just the reason.
    """

    CODE = ErrorCode.CHANNEL_OPEN_FAILED

    def __init__(self, channel_id: str | None, reason: str) -> None:
        data: dict[str, str] = {"reason": reason}
        if channel_id is not None:
            data["channelId"] = channel_id
        super().__init__(self.CODE, f"Channel open failed: {reason}", data)

    @property
    def channel_id(self) -> str | None:
        """``data.channelId``, when the open named one."""
        return _member(self.data, "channelId")

    @property
    def reason(self) -> str | None:
        """``data.reason``."""
        return _member(self.data, "reason")


ERROR_CLASSES: Final[Mapping[int, type[McplError]]] = MappingProxyType(
    {
        cls.CODE: cls
        for cls in (
            FeatureSetNotEnabled,
            CapabilityDenied,
            UnknownFeatureSet,
            CheckpointNotFound,
            ChannelNotPermitted,
            UnknownChannel,
            ChannelOpenFailed,
        )
    }
)
"""Each MCPL error code to the class it is read as (one class per :class:`ErrorCode`)."""


def from_rpc(error: RpcError) -> RpcError:
    """``error`` as the class of its code: the MCPL subclass for an MCPL code, keeping the
    message and data as they are; ``error`` itself when it already is one or the code is not
    MCPL's."""
    cls = ERROR_CLASSES.get(error.code)
    if cls is None or isinstance(error, cls):
        return error
    return _received(cls, error.message, error.data)


def read_error(obj: Mapping[str, Any]) -> RpcError:
    """Read an error object a peer sent: ``RpcError.from_wire``, then :func:`from_rpc`.

    Give it to a ``Peer`` as ``read_error`` so requests raise the MCPL classes.
    """
    return from_rpc(RpcError.from_wire(obj))
