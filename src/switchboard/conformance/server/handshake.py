"""Server checks of the handshake: the advertisement, and silence before the policy Request.

mcpl-protocol.md 1.2-1.5; S-01, S-03, S-04, S-46; each check's rule is its docstring. The
window before the policy is ``SuiteOptions.policy_silence`` (6 s by default, longer than a 5 s
registration timer). Silence proves something only about a server that does speak once
ready, so both silence checks end by granting everything: a server silent even then is
reported "not exercised".

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from ..common.outcomes import Verdict, fail, not_applicable, not_exercised, passed
from ..common.shapes import advertisement_problems
from .context import HANDSHAKE, SERVER_CHECKS, ServerContext
from .scenarios import needs, policy_failed, provoke, wait_channels
from .session import HostSession

__all__: list[str] = []


@SERVER_CHECKS.check(
    "server.handshake.advertisement_shape",
    requirements=("S-01",),
    level="MUST",
    section=HANDSHAKE,
    title="initialize advertises MCPL 0.5 under capabilities.experimental.mcpl, well shaped",
)
async def advertisement_shape(ctx: ServerContext) -> Verdict:
    """The ``initialize`` result carries ``capabilities.experimental.mcpl`` with ``version``
    ``"0.5"``, boolean capability leaves, and ``featureSets`` keyed by name, each with a description
    and ``uses`` drawn from the 17 paths.
    """
    async with ctx.connect() as session:
        reply = await session.initialize()
    if not reply.ok:
        fail(f"initialize was not answered with a result: {reply.describe()}")
    problems = advertisement_problems(reply.result)
    if problems:
        fail("; ".join(problems))
    sets = len(session.feature_sets)
    return passed(f"version 0.5, {len(session.advertised)} capability paths, {sets} feature sets")


def _privileged_report(session: HostSession, before: str) -> str:
    sent = ", ".join(sorted({m.method for m in session.privileged()}))
    return f"the server sent {sent} {before}"


async def _speaks_once_granted(session: HostSession) -> bool:
    """Grant everything and see whether the server then sends anything privileged."""
    position = session.link.received
    receipt = await session.grant_all()
    if not receipt.ok:
        raise policy_failed(receipt)
    found = await session.wait_for(lambda m: m.privileged, after=position)
    return found is not None


def _before_receipt(session: HostSession, after: int) -> list[str]:
    """Privileged methods that arrived after wire position ``after`` but before the receipt."""
    receipt = session.receipt_position
    return sorted({m.method for m in session.privileged(after=after) if m.position < receipt})


@SERVER_CHECKS.check(
    "server.policy.idle_before_request",
    requirements=("S-03",),
    level="MUST",
    section=HANDSHAKE,
    title="nothing privileged is sent before the initial policy Request is answered",
    applies=needs(),
)
async def idle_before_request(ctx: ServerContext) -> Verdict:
    """After ``initialize`` and ``initialized`` the server sends nothing privileged until a policy
    Request arrives, nor while that Request is still unanswered: the exchange completes with the
    receipt (mcpl-protocol.md 1.3), so a message that reaches the kit before the receipt was sent
    too early.
    """
    async with ctx.connect() as session:
        await session.handshake()
        await session.watch(ctx.options.policy_silence)
        if session.privileged():
            fail(_privileged_report(session, "before any policy Request"))
        position = session.link.received
        spoke = await _speaks_once_granted(session)
        early = _before_receipt(session, position)
        if early:
            fail(f"the server sent {', '.join(early)} before it answered the policy Request")
        if not spoke:
            return not_exercised("the server sent nothing privileged even with a full grant")
    return passed(f"silent for {ctx.options.policy_silence:g} s before the policy, active after it")


@SERVER_CHECKS.check(
    "server.policy.notification_never_ready",
    requirements=("S-04",),
    level="MUST",
    section=HANDSHAKE,
    title="a featureSets/update Notification never makes the server ready",
    applies=needs(),
)
async def notification_never_ready(ctx: ServerContext) -> Verdict:
    """A policy *Notification*, however generous, changes nothing."""
    async with ctx.connect() as session:
        await session.handshake()
        await session.policy_notification(
            {
                "effectiveCapabilities": sorted(session.advertised),
                "enabled": session.set_names(),
            }
        )
        await session.watch(ctx.options.policy_silence)
        if session.privileged():
            fail(_privileged_report(session, "after a policy Notification, with no Request"))
        if not await _speaks_once_granted(session):
            return not_exercised("the server sent nothing privileged even with a full grant")
    return passed("a generous policy Notification changed nothing; the Request did")


#: At most this many stray lines are quoted in a failure.
_QUOTED_LINES = 3


@SERVER_CHECKS.check(
    "server.transport.stdout_only_messages",
    requirements=("S-46",),
    level="MUST",
    section=HANDSHAKE,
    title="over stdio, the server writes nothing but JSON-RPC messages on stdout",
)
async def stdout_only_messages(ctx: ServerContext) -> Verdict:
    """(S-46, the MCP stdio transport): a server spawned over stdio writes nothing on stdout but
    JSON-RPC messages — no banner, no log line — through a whole session (handshake, full grant, its
    channels, one provocation). Over TCP or WebSocket it does not apply.
    """
    if ctx.target.kind != "stdio":
        return not_applicable(f"the server is reached over {ctx.target.kind}, not stdio")
    async with ctx.connect() as session:
        reply = await session.initialize()
        if reply.ok and session.manifest is not None:
            await session.notify("notifications/initialized")
            await session.grant_all()
            if session.ready:
                await wait_channels(session)
                await provoke(session, ctx.marker())
        await session.barrier()
        await session.quiet(window=max(session.options.quiet, 0.5))
        frames = session.link.received
        stray = list(session.stray)
    if stray:
        shown = stray[:_QUOTED_LINES]
        quoted = "; ".join(f"frame {position}: {text[:120]!r}" for position, text in shown)
        if len(stray) > len(shown):
            quoted += f" (+{len(stray) - len(shown)} more)"
        fail(f"{len(stray)} of {frames} lines on stdout are not JSON-RPC messages: {quoted}")
    return passed(f"all {frames} lines on stdout were JSON-RPC messages")
