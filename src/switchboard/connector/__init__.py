"""switchboard.connector: a small library to write an MCPL connector (server side) in Python.

Subclass :class:`Connector`, override the hooks you need, and call ``main()``::

    class Echo(Connector):
        async def on_ready(self) -> None:
            await self.register([{"id": "echo:main", "type": "echo", "label": "Echo",
                                  "direction": "bidirectional"}])

        async def on_publish(self, params: PublishParams) -> str:
            ...deliver it...
            return "m-1"

    Echo("echo").main()

The SDK makes the conforming behaviour the default: it answers the handshake with a 0.5
manifest, stays unprivileged until the host's policy Request is answered, answers every
request (``-32601`` for unknown methods), checks every host→server method against the
grant before a hook runs, and refuses its own outbound calls that the grant does not allow.

Modules: :mod:`.connector` (the class), :mod:`.hooks` (hook defaults), :mod:`.inbound` (what
is answered), :mod:`.policy` (grant and receipts), :mod:`.manifest` (what is advertised),
:mod:`.channels` (accepted channels), :mod:`.replies` (knowing an answer is on the wire),
:mod:`.messages` (builders), :mod:`.errors`. It imports only :mod:`switchboard.protocol` and
:mod:`switchboard.transport`.
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
