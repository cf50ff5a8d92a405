"""switchboard.connector: a small library to write an MCPL connector (server side) in Python.

Subclass :class:`Connector`, override the hooks you need, and call ``main()``
(docs/connectors.md). The SDK makes conforming behaviour the default: a 0.5 manifest, nothing
privileged before the host's policy Request is answered, every request answered, every
host→server method checked against the grant before a hook runs, and its own outbound calls
refused when the grant does not allow them.

It imports only :mod:`switchboard.protocol` and :mod:`switchboard.transport`.
"""

from __future__ import annotations

from .channels import ChannelTable
from .connector import Connector, ensure_stderr_logging
from .errors import (
    ChannelNotRegistered,
    ConnectorError,
    FeatureSetUnavailable,
    NotGranted,
    NotReady,
)
from .hooks import ConnectorHooks
from .manifest import CHANNEL_LEAVES, FeatureSetSpec, ServerManifest, build_manifest
from .messages import check_tags, incoming_text, new_id, push_event_params, utc_now
from .policy import PolicyChange, PolicyState

__all__ = [
    "CHANNEL_LEAVES",
    "ChannelNotRegistered",
    "ChannelTable",
    "Connector",
    "ConnectorError",
    "ConnectorHooks",
    "FeatureSetSpec",
    "FeatureSetUnavailable",
    "NotGranted",
    "NotReady",
    "PolicyChange",
    "PolicyState",
    "ServerManifest",
    "build_manifest",
    "check_tags",
    "ensure_stderr_logging",
    "incoming_text",
    "new_id",
    "push_event_params",
    "utc_now",
]
