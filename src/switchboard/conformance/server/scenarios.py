"""Steps many server checks share: get ready, wait for channels, provoke traffic, probe grants.

When a check applies (from the preflight manifest, :func:`needs`), how to reach readiness and
wait for the server's channels, how to provoke it (a question published to one of its
channels), and how to probe a gated method.

What it deliberately does not know: any particular check's conclusion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from switchboard.protocol import advertised_paths

from ..common.outcomes import NotExercised
from .session import HostSession, Reply, ServerMessage

__all__ = [
    "POLICY_CHECK",
    "PROBES",
    "Applies",
    "denied_problem",
    "needs",
    "observe_traffic",
    "probe_call",
    "probe_path",
    "provoke",
    "publish_params",
    "ready",
    "wait_channels",
]

Applies = Callable[[Mapping[str, Any] | None], str | None]

PROBES: Final[tuple[tuple[str, str], ...]] = (
    ("channels.publish", "channels/publish"),
    ("channels.lifecycle", "channels/close"),
    ("channels.acknowledge", "channels/acknowledge"),
)
"""Gated host→server methods the kit uses to test the grant, by their gate."""

POLICY_CHECK: Final = "server.policy.receipt_returned"
"""The check that fails when the policy Request gets no receipt; the others defer to it."""

CAPABILITY_DENIED: Final = -32002
UNKNOWN_CHANNEL: Final = -32023


def needs(*paths: str) -> Applies:
    """An ``applies`` predicate: the server must be MCPL and advertise one of ``paths``.

    With no paths, only MCPL itself is required.
    """

    def applies(manifest: Mapping[str, Any] | None) -> str | None:
        if manifest is None:
            return "the server advertises no capabilities.experimental.mcpl (MCP-only)"
        if paths and not advertised_paths(manifest) & frozenset(paths):
            return f"the server advertises none of {', '.join(paths)}"
        return None

    return applies


def policy_failed(receipt: Reply) -> NotExercised:
    """The verdict of a check that needs the policy exchange when the Request failed."""
    return NotExercised(
        f"the policy Request itself failed, so this could not be tried: {receipt.describe()} "
        f"(one failure, reported by {POLICY_CHECK})"
    )


async def ready(session: HostSession, **policy: Any) -> Reply:
    """Handshake and grant everything advertised.

    Raises:
        NotExercised: the server would not accept the full grant (S-05 reports that).
    """
    await session.handshake()
    receipt = await session.grant_all(**policy)
    if not receipt.ok:
        raise policy_failed(receipt)
    if not session.ready:
        raise NotExercised(f"the server did not accept a full grant: {receipt.describe()}")
    return receipt


def _is_registration(message: ServerMessage) -> bool:
    return message.method in ("channels/register", "channels/changed")


async def wait_channels(session: HostSession) -> list[str]:
    """Wait for the server to register channels (if it may), then for it to settle.

    Returns:
        The ids the kit accepted, publishable ones first.
    """
    if "channels.register" in session.advertised and session.granted.allows("channels.register"):
        await session.wait_for(_is_registration)
        await session.quiet()
    return session.host.accepted_ids()


def publish_params(channel_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """``channels/publish`` params with one text block."""
    return {
        "conversationId": "kit-conversation",
        "channelId": channel_id,
        "content": [{"type": "text", "text": text}],
        **extra,
    }


async def provoke(session: HostSession, marker: str) -> Reply | None:
    """Publish a question carrying ``marker`` to the first channel the kit accepted.

    Returns:
        The publish answer, or ``None`` when there was no channel or no publish grant.
    """
    channels = session.host.accepted_ids()
    if not channels or not session.granted.allows("channels.publish"):
        return None
    if "channels.publish" not in session.advertised:
        return None
    text = f"{marker}: is anyone there?"
    return await session.call("channels/publish", publish_params(channels[0], text))


async def observe_traffic(session: HostSession, marker: str) -> None:
    """Full grant, channels, one provocation, then wait for the server to settle."""
    await ready(session)
    await wait_channels(session)
    await provoke(session, marker)
    await session.quiet(window=max(session.options.quiet, 0.5))


def probe_path(advertised: frozenset[str]) -> str | None:
    """The first gate among :data:`PROBES` the server advertises, or ``None``."""
    for path, _method in PROBES:
        if path in advertised:
            return path
    return None


def probe_call(path: str, channel_id: str, marker: str) -> tuple[str, dict[str, Any]]:
    """The probe request for gate ``path`` on ``channel_id``: ``(method, params)``."""
    if path == "channels.publish":
        return "channels/publish", publish_params(channel_id, f"{marker}: probe")
    if path == "channels.lifecycle":
        return "channels/close", {"channelId": channel_id}
    return "channels/acknowledge", {
        "channelId": channel_id,
        "messageId": f"{marker}-message",
        "intent": "seen-not-opening",
    }


def denied_problem(reply: Reply, path: str, *, known_channel: bool) -> str | None:
    """What is wrong with the answer to a probe whose gate ``path`` is not granted.

    The answer must be ``-32002``; for a channel the server never registered ``-32023`` is
    accepted too, since the spec does not fix which check comes first.
    """
    method = reply.method
    if reply.ok:
        return f"{method} was served although {path} is not granted: {reply.describe()}"
    if reply.failure is not None:
        return f"{method} without {path} granted: {reply.failure}"
    allowed = {CAPABILITY_DENIED} if known_channel else {CAPABILITY_DENIED, UNKNOWN_CHANNEL}
    if reply.code not in allowed:
        return f"{method} without {path} granted got {reply.describe()}, expected -32002"
    return None
