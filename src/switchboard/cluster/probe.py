"""Whether the NATS server of ``[cluster]`` answers: what ``switchboard check`` asks.

What it deliberately does not know: subjects and subscriptions (the bus makes those).
"""

from __future__ import annotations

import asyncio

import nats
from nats.errors import Error as NatsError

__all__ = ["nats_problem"]


async def _quiet(_exc: Exception) -> None:
    """The failure is reported once, as the problem; not also logged with a traceback."""


async def _probe(url: str, wait: float) -> None:
    nc = await nats.connect(
        url,
        connect_timeout=max(1, round(wait)),
        allow_reconnect=False,
        max_reconnect_attempts=0,
        error_cb=_quiet,
    )
    try:
        await nc.flush(timeout=max(1, round(wait)))
    finally:
        await nc.close()


def nats_problem(url: str, *, timeout: float = 3.0) -> str | None:
    """Why the NATS server at ``url`` cannot be used, or ``None`` when it answers a ping."""
    try:
        asyncio.run(asyncio.wait_for(_probe(url, timeout), timeout * 2))
    except (NatsError, OSError, TimeoutError) as exc:
        reason = str(exc).strip() or type(exc).__name__
        return (
            f"cluster.nats_url: the NATS server {url} does not answer ({reason}); start it, or "
            "correct `nats_url` in [cluster] (instances then still work, by polling, but cannot "
            "reach each other's connectors)"
        )
    return None
