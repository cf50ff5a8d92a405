"""MCPL wire errors: the spec's error codes and one exception type that carries them.

What this module knows: the MCPL-specific JSON-RPC error codes (mcpl-protocol.md 3.17 and
4.12), the ``data`` member each of them carries, and how an error turns into the JSON-RPC
``error`` object and back.

What it deliberately does not know: JSON-RPC framing, request ids, or the standard codes
(``-32601``, ``-32602``, ...). The transport layer owns those; it turns any exception that has
a ``to_wire()`` method into an error object, so raising one of these from a handler is
enough.

Hierarchy::

    McplError(code, message, data)       any MCPL error, including ones read off the wire
    ├── CapabilityDenied                  -32002  data {"capability"}
    ├── FeatureSetNotEnabled              -32001  data {"featureSet"}
    ├── UnknownFeatureSet                 -32003  data {"featureSet"}
    ├── CheckpointNotFound                -32005  data {"checkpoint"}
    ├── ChannelNotPermitted               -32017  data {"channelId"}
    ├── UnknownChannel                    -32023  data {"channelId"}
    └── ChannelOpenFailed                 -32024  data {"channelId", "reason"}
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any

__all__ = [
    "CapabilityDenied",
    "ChannelNotPermitted",
    "ChannelOpenFailed",
    "CheckpointNotFound",
    "ErrorCode",
    "FeatureSetNotEnabled",
    "McplError",
    "UnknownChannel",
    "UnknownFeatureSet",
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


class McplError(Exception):
    """An MCPL error with a JSON-RPC ``code``, a ``message`` and optional ``data``.

    Raise it (or a subclass) from a handler to answer a request with an error object; build
    one with :meth:`from_wire` to represent an error a peer sent.

    Args:
        code: the JSON-RPC error code; usually an :class:`ErrorCode` member.
        message: a short human-readable description.
        data: any JSON value that gives detail; left out of the wire form when ``None``.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON-RPC error object: ``{"code", "message"[, "data"]}``."""
        wire: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            wire["data"] = self.data
        return wire

    @classmethod
    def from_wire(cls, error: Mapping[str, Any]) -> McplError:
        """Build an error from a JSON-RPC error object a peer sent.

        Tolerant by design: a missing or non-integer ``code`` becomes ``0`` and a missing
        ``message`` becomes an empty string, so a sloppy peer never raises here.
        """
        code = error.get("code")
        message = error.get("message")
        return McplError(
            code if isinstance(code, int) and not isinstance(code, bool) else 0,
            message if isinstance(message, str) else "",
            error.get("data"),
        )

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(code={self.code}, message={self.message!r}, data={self.data!r})"


class CapabilityDenied(McplError):
    """-32002: the method needs a capability path the grant does not match (§5.4)."""

    def __init__(self, capability: str) -> None:
        super().__init__(
            ErrorCode.CAPABILITY_DENIED, "Capability denied", {"capability": capability}
        )
        self.capability = capability


class FeatureSetNotEnabled(McplError):
    """-32001: the named feature set is declared but not enabled (§6.6)."""

    def __init__(self, feature_set: str) -> None:
        super().__init__(
            ErrorCode.FEATURE_SET_NOT_ENABLED,
            "Feature set not enabled",
            {"featureSet": feature_set},
        )
        self.feature_set = feature_set


class UnknownFeatureSet(McplError):
    """-32003: the named feature set was never declared in the manifest (§6.6)."""

    def __init__(self, feature_set: str) -> None:
        super().__init__(
            ErrorCode.UNKNOWN_FEATURE_SET, "Unknown feature set", {"featureSet": feature_set}
        )
        self.feature_set = feature_set


class CheckpointNotFound(McplError):
    """-32005: ``state/rollback`` named a checkpoint that is pruned or unknown (§8)."""

    def __init__(self, checkpoint: str) -> None:
        super().__init__(
            ErrorCode.CHECKPOINT_NOT_FOUND, "Checkpoint not found", {"checkpoint": checkpoint}
        )
        self.checkpoint = checkpoint


class ChannelNotPermitted(McplError):
    """-32017: no authority to publish to, or receive from, this channel (§14.6)."""

    def __init__(self, channel_id: str) -> None:
        super().__init__(
            ErrorCode.CHANNEL_NOT_PERMITTED, "Channel not permitted", {"channelId": channel_id}
        )
        self.channel_id = channel_id


class UnknownChannel(McplError):
    """-32023: the channel does not exist or was never registered (§14.6)."""

    def __init__(self, channel_id: str) -> None:
        super().__init__(ErrorCode.UNKNOWN_CHANNEL, "Unknown channel", {"channelId": channel_id})
        self.channel_id = channel_id


class ChannelOpenFailed(McplError):
    """-32024: ``channels/open`` could not connect to the channel (§14.6).

    ``channel_id`` is ``None`` when the open named only ``type`` and ``address``; ``data``
    then carries just the reason.
    """

    def __init__(self, channel_id: str | None, reason: str) -> None:
        data: dict[str, str] = {"reason": reason}
        if channel_id is not None:
            data["channelId"] = channel_id
        super().__init__(ErrorCode.CHANNEL_OPEN_FAILED, f"Channel open failed: {reason}", data)
        self.channel_id = channel_id
        self.reason = reason
