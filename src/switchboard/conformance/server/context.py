"""What a server check gets (target, options, transcript, fresh connections), and the registry.

What this module knows: how one check opens connections to the server under test — each a
new process or socket (:func:`~..target.open_link`), wrapped so every frame lands in the
check's transcript (and every stderr line of a spawned one in its stderr tail), with a
:class:`~.session.HostSession` running its peer for as long as the check uses it — and how
to make markers no other traffic could contain; and the server suite's registry
(:data:`SERVER_CHECKS`, which every check module registers into) with its report sections
in the order they are shown (following mcpl-protocol.md 5b).

What it deliberately does not know: what the check does, or how its verdict is reported.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio

from ..common.options import SuiteOptions
from ..common.registry import CheckRegistry
from ..common.transcript import RecordingLink, Transcript
from ..target import ServerTarget, open_link
from .session import HostSession

__all__ = [
    "CHANNELS",
    "FEATURES",
    "HANDSHAKE",
    "HOOKS",
    "MANIFEST",
    "POLICY",
    "REQUESTS",
    "SECTIONS",
    "SERVER_CHECKS",
    "STATE",
    "STREAMING",
    "ServerContext",
]


class ServerContext:
    """The context a server check runs in.

    Args:
        target: the server under test.
        options: the suite's timing.
        transcript: where every frame of this check is recorded.
        preflight: the manifest read by the runner's preflight handshake, if any.
        applies: the check's applicability rule, applied again to each handshake's manifest.
    """

    def __init__(
        self,
        target: ServerTarget,
        options: SuiteOptions,
        transcript: Transcript,
        preflight: Mapping[str, Any] | None = None,
        applies: Callable[[Mapping[str, Any] | None], str | None] | None = None,
    ) -> None:
        self.target = target
        self.options = options
        self.transcript = transcript
        self.preflight = preflight
        self.applies = applies

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[HostSession]:
        """Open a fresh connection and yield a session on it; closes it on exit."""
        connection = self.transcript.new_connection()
        transcript = self.transcript

        def on_stderr(line: str) -> None:
            transcript.note_stderr(connection, line)

        async with open_link(self.target, name=f"target#{connection}", on_stderr=on_stderr) as raw:
            link = RecordingLink(raw, self.transcript, connection)
            session = HostSession(link, self.options, self.applies)
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.peer.run)
                try:
                    yield session
                finally:
                    with anyio.CancelScope(shield=True):
                        await session.peer.aclose()
                    tg.cancel_scope.cancel()

    @staticmethod
    def marker(label: str = "kit") -> str:
        """A fresh string no server would produce by chance (``kit-3f9a...``)."""
        return f"{label}-{secrets.token_hex(6)}"


HANDSHAKE: Final = "Handshake"
POLICY: Final = "Policy and grant"
REQUESTS: Final = "Requests and robustness"
FEATURES: Final = "Feature sets, push events and tags"
HOOKS: Final = "Hooks"
CHANNELS: Final = "Channels"
STREAMING: Final = "Streaming and delivery"
MANIFEST: Final = "Manifest"
STATE: Final = "State"

SECTIONS: Final = (
    HANDSHAKE,
    POLICY,
    REQUESTS,
    FEATURES,
    HOOKS,
    CHANNELS,
    STREAMING,
    MANIFEST,
    STATE,
)

SERVER_CHECKS: Final[CheckRegistry[ServerContext]] = CheckRegistry("server")
"""Every check of the server suite, in report order once all check modules are imported."""
