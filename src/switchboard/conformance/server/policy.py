"""Server checks of the policy exchange: receipts, and a Request that grants nothing.

mcpl-protocol.md 3.3-3.5; S-05 .. S-09; each check's rule is its docstring. Only
``receipt_returned`` fails when the policy Request gets no receipt at all; the others then say
"not exercised" and name it (:func:`.scenarios.policy_failed`).

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from collections.abc import Collection

from ..common.outcomes import Verdict, fail, not_exercised, passed
from ..common.shapes import receipt_problems
from .context import POLICY, SERVER_CHECKS, ServerContext
from .scenarios import needs, policy_failed
from .session import HostSession, Reply

__all__: list[str] = []


@SERVER_CHECKS.check(
    "server.policy.receipt_returned",
    requirements=("S-05",),
    level="MUST",
    section=POLICY,
    title="the policy Request is answered with a receipt whose accepted is a boolean",
    applies=needs(),
)
async def receipt_returned(ctx: ServerContext) -> Verdict:
    """The policy Request gets a result whose ``accepted`` is a boolean."""
    async with ctx.connect() as session:
        await session.handshake()
        reply = await session.grant_all()
    if not reply.ok:
        fail(f"the policy Request got {reply.describe()}, not a receipt")
    accepted = reply.result.get("accepted") if isinstance(reply.result, dict) else None
    if not isinstance(accepted, bool):
        fail(f"the receipt's accepted is {accepted!r}, not a boolean: {reply.describe()}")
    return passed(f"receipt with accepted {str(accepted).lower()}")


@SERVER_CHECKS.check(
    "server.policy.receipt_schema",
    requirements=("S-06", "S-07"),
    level="MUST",
    section=POLICY,
    title="receipts follow the schema: fallback when refused, complete unavailable entries",
    applies=needs(),
)
async def receipt_schema(ctx: ServerContext) -> Verdict:
    """Receipts for a full and an empty grant follow the schema (``fallback`` with
    ``accepted:false``; ``featureSet``, ``missingCapabilities`` and ``effect`` in every
    ``unavailableFeatures`` entry).
    """
    async with ctx.connect() as session:
        await session.handshake()
        receipts = [await session.grant_all(), await session.policy([])]
    answered = [reply for reply in receipts if reply.ok]
    if not answered:
        raise policy_failed(receipts[0])
    problems = [p for reply in answered for p in receipt_problems(reply.result)]
    if problems:
        fail("; ".join(problems))
    return passed(f"{len(answered)} receipts (full and empty grant) follow the schema")


def _lost_sets(session: HostSession, granted: Collection[str]) -> set[str]:
    """Valid declared sets whose ``uses`` the grant does not cover."""
    return {
        name
        for name, decl in session.feature_sets.items()
        if decl.valid and not set(decl.uses) <= set(granted)
    }


def _mode_problem(reply: Reply, lost: set[str], what: str) -> str | None:
    if not reply.ok or not isinstance(reply.result, dict):
        return f"{what}: no receipt ({reply.describe()})"
    receipt = reply.result
    if receipt.get("accepted") is not True:
        return None  # a refusal carries no mode; receipt_schema checks its fallback
    entries = receipt.get("unavailableFeatures") or []
    named = {e.get("featureSet") for e in entries if isinstance(e, dict)}
    if not lost:
        if "mode" in receipt or entries:
            return f"{what}: nothing degraded, yet the receipt says {reply.describe()}"
        return None
    if receipt.get("mode") != "degraded":
        return f"{what}: sets {sorted(lost)} lost capabilities, but mode is {receipt.get('mode')!r}"
    if not lost <= named:
        return f"{what}: unavailableFeatures omits {sorted(lost - named)}"
    return None


@SERVER_CHECKS.check(
    "server.policy.receipt_mode",
    requirements=("S-08",),
    level="MUST",
    section=POLICY,
    title="a full grant gets no mode; a narrower one gets mode degraded naming the lost sets",
    applies=needs(),
)
async def receipt_mode(ctx: ServerContext) -> Verdict:
    """A grant that covers every declared set's ``uses`` gets a receipt without ``mode`` or
    unavailable features; an empty grant gets ``mode:"degraded"`` naming every valid declared set
    (all of them lost capabilities).
    """
    async with ctx.connect() as session:
        await session.handshake()
        everything = sorted(session.advertised)
        full = await session.grant_all()
        empty = await session.policy([])
    if not full.ok:
        raise policy_failed(full)
    problems = [
        problem
        for problem in (
            _mode_problem(full, _lost_sets(session, everything), "full grant"),
            _mode_problem(empty, _lost_sets(session, ()), "empty grant"),
        )
        if problem is not None
    ]
    if problems:
        fail("; ".join(problems))
    lost = sorted(_lost_sets(session, ()))
    return passed(
        f"mode omitted when whole; degraded naming {lost} when empty"
        if lost
        else "mode omitted; the server declares no feature sets to degrade"
    )


@SERVER_CHECKS.check(
    "server.policy.absent_grant_is_empty",
    requirements=("S-09",),
    level="MUST",
    section=POLICY,
    title="a policy Request without effectiveCapabilities grants nothing",
    applies=needs(),
)
async def absent_grant_is_empty(ctx: ServerContext) -> Verdict:
    """A Request carrying only ``enabled`` grants nothing."""
    async with ctx.connect() as session:
        await session.handshake()
        reply = await session.policy(None, enabled=session.set_names())
        await session.watch(ctx.options.policy_silence)
        early = session.privileged(after=session.receipt_position)
        if early:
            sent = ", ".join(sorted({m.method for m in early}))
            fail(
                f"the server sent {sent} with no effectiveCapabilities granted ({reply.describe()})"
            )
    # Silence proves something only if a fully granted server speaks: ask a fresh one.
    async with ctx.connect() as session:
        await session.handshake()
        receipt = await session.grant_all()
        if not receipt.ok:
            raise policy_failed(receipt)
        if await session.wait_for(lambda m: m.privileged) is None:
            return not_exercised("the server sent nothing privileged even with a full grant")
    return passed("no privileged traffic under a Request without effectiveCapabilities")
