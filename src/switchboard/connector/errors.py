"""Errors the connector SDK raises to the code that uses it, rooted in :class:`ConnectorError`.

Why an *outbound* call of a connector was refused locally, before anything reached the wire:
the SDK limits itself with the same grant matcher the host uses (mcpl-protocol.md 3.2, S-10),
so a call without the grant raises :class:`NotGranted` instead of being sent.

What it deliberately does not know: the errors the SDK *answers* the host with (those are
the protocol's ``McplError`` classes).
"""

from __future__ import annotations

__all__ = [
    "ChannelNotRegistered",
    "ConnectorError",
    "FeatureSetUnavailable",
    "NotGranted",
    "NotReady",
]


class ConnectorError(Exception):
    """Root of every error raised by :mod:`switchboard.connector`.

    What it knows: why an *outbound* call of a connector was refused locally, before anything
    reached the wire. The SDK limits itself with the same grant matcher the host uses
    (mcpl-protocol.md 3.2, S-10), so a connector that calls :meth:`Connector.register` without the
    grant gets an exception here instead of a ``-32002`` from the host.

    Hierarchy::

        ConnectorError                  root of everything this package raises
        ├── NotGranted                  the current grant does not allow the call
        │   ├── NotReady                ... because the policy Request has not been answered yet
        │   └── FeatureSetUnavailable   push/event tagged with a set that is not enabled
        └── ChannelNotRegistered        incoming for a channel the host has not accepted
    """


class NotGranted(ConnectorError):
    """An outbound method needs a capability path that the current grant does not allow.

    Attributes:
        method: the MCPL method that was not sent.
        capability: the gate path it needs (``channels.register`` ...).
    """

    def __init__(self, method: str, capability: str, detail: str | None = None) -> None:
        message = detail or (
            f"{method} not sent: the host has not granted {capability!r} to this connector"
        )
        super().__init__(message)
        self.method = method
        self.capability = capability


class NotReady(NotGranted):
    """An outbound privileged method was attempted before the connection was ready.

    Ready means the host's ``featureSets/update`` Request has been answered (spec §5.3);
    until then nothing is granted. Call it from :meth:`Connector.on_ready` or after
    :meth:`Connector.wait_ready`.
    """

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(
            method,
            capability,
            f"{method} not sent: the policy exchange has not completed "
            "(send it from on_ready() or after wait_ready())",
        )


class FeatureSetUnavailable(NotGranted):
    """``push/event`` was tagged with a feature set that is undeclared or not enabled.

    Attributes:
        feature_set: the set named by the caller.
        reason: ``unknown``, ``invalid_uses``, ``capability_denied``, ``not_selected``,
            ``disabled`` or ``declaration_mismatch`` (its ``uses`` lacks the gate).
    """

    def __init__(self, method: str, capability: str, feature_set: str, reason: str) -> None:
        super().__init__(
            method,
            capability,
            f"{method} not sent: feature set {feature_set!r} is not usable ({reason})",
        )
        self.feature_set = feature_set
        self.reason = reason


class ChannelNotRegistered(ConnectorError):
    """``channels/incoming`` named a channel the host never accepted (S-26).

    Attributes:
        channel_id: the first unknown channel id in the batch.
    """

    def __init__(self, channel_id: str) -> None:
        super().__init__(
            f"channels/incoming not sent: channel {channel_id!r} is not registered with the "
            "host (register it first; rejected descriptors stay unknown)"
        )
        self.channel_id = channel_id
