"""Server checks of the manifest (mcpl-protocol.md 3.15, 6; S-36 .. S-43) and rollback (S-44).

The revision digest, its stability, changes announced and served, and the manifest's own
validity. Each check's rule is its docstring.

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Final

from switchboard.protocol import DigestError, manifest_digest, parse_feature_sets

from ..common.outcomes import Verdict, fail, not_applicable, not_exercised, passed
from ..common.shapes import change_domains, manifest_changed_problems
from .context import MANIFEST, SERVER_CHECKS, STATE, ServerContext
from .scenarios import needs, observe_traffic, ready
from .session import HostSession

__all__ = ["BURST_WINDOW"]

BURST_WINDOW: Final = 1.0
"""Seconds: announcements closer together than this count as one burst (S-41)."""


def _with_revision(manifest: Mapping[str, Any] | None) -> str | None:
    if manifest is None:
        return "the server advertises no capabilities.experimental.mcpl (MCP-only)"
    if "revision" not in manifest:
        return "the manifest carries no revision (§17 not supported)"
    return None


def _digest_problem(manifest: Mapping[str, Any], where: str) -> str | None:
    try:
        digest = manifest_digest(manifest)
    except DigestError as exc:
        return f"the {where} manifest cannot be digested: {exc}"
    if manifest.get("revision") != digest:
        return f"the {where} revision {manifest.get('revision')!r} is not its digest {digest!r}"
    return None


async def _initialize_manifest(ctx: ServerContext) -> dict[str, Any]:
    async with ctx.connect() as session:
        await session.handshake()
    assert session.manifest is not None
    return session.manifest


@SERVER_CHECKS.check(
    "server.manifest.revision_is_digest",
    requirements=("S-36",),
    level="MUST",
    section=MANIFEST,
    title="the initialize revision is the §17.2 digest of the manifest",
    applies=_with_revision,
)
async def revision_is_digest(ctx: ServerContext) -> Verdict:
    """A ``revision`` at ``initialize`` equals the §17.2 digest of that manifest, recomputed with
    the protocol package's digester (which the published vectors check).
    """
    manifest = await _initialize_manifest(ctx)
    problem = _digest_problem(manifest, "initialize")
    if problem is not None:
        fail(problem)
    return passed(f"revision {manifest['revision']} recomputed")


@SERVER_CHECKS.check(
    "server.manifest.revision_stable_across_restarts",
    requirements=("S-37",),
    level="MUST",
    section=MANIFEST,
    title="the revision is the same on a fresh connection (a restart for a command)",
    applies=_with_revision,
)
async def revision_stable_across_restarts(ctx: ServerContext) -> Verdict:
    """Two fresh connections (two processes for a command) report the same revision."""
    first = (await _initialize_manifest(ctx)).get("revision")
    second = (await _initialize_manifest(ctx)).get("revision")
    if first != second:
        fail(f"the revision changed from {first!r} to {second!r} with nothing changed")
    return passed(f"{first} both times")


@SERVER_CHECKS.check(
    "server.manifest.fetch_returns_full_manifest",
    requirements=("S-38",),
    level="MUST",
    section=MANIFEST,
    title="mcpl/manifest returns the complete bare manifest, as at initialize",
    applies=needs(),
)
async def fetch_returns_full_manifest(ctx: ServerContext) -> Verdict:
    """``mcpl/manifest``, when implemented, returns the bare manifest, equal to the one at
    ``initialize`` unless the server announced a change meanwhile, with a revision that is its
    digest (a server without it is checked by ``every_request_answered``).
    """
    async with ctx.connect() as session:
        await ready(session)
        reply = await session.call("mcpl/manifest", {})
    if reply.code == -32601:
        return not_applicable("the server does not implement mcpl/manifest (-32601)")
    if not reply.ok:
        fail(f"mcpl/manifest got {reply.describe()}")
    if not isinstance(reply.result, dict):
        fail(f"mcpl/manifest did not return a manifest object: {reply.describe()}")
    announced = any(m.method == "mcpl/manifestChanged" for m in session.messages)
    if reply.result != session.manifest and not announced:
        fail(f"mcpl/manifest differs from the initialize manifest: {reply.describe()}")
    if "revision" in reply.result:
        problem = _digest_problem(reply.result, "fetched")
        if problem is not None:
            fail(problem)
    if announced:
        return passed("the manifest changed (announced) since initialize; the fetched one holds")
    return passed("the fetched manifest equals the initialize manifest")


@SERVER_CHECKS.check(
    "server.manifest.changed_params_exact",
    requirements=("S-40", "S-43"),
    level="MUST",
    section=MANIFEST,
    title="mcpl/manifestChanged carries exactly revision and the domains that changed",
    applies=needs(),
)
async def changed_params_exact(ctx: ServerContext) -> Verdict:
    """Any ``mcpl/manifestChanged`` carries exactly ``{revision, domains}``, and when the manifest
    can be fetched the announced revision and domains match what changed.
    """
    async with ctx.connect() as session:
        await observe_traffic(session, ctx.marker())
        changes = [m for m in session.messages if m.method == "mcpl/manifestChanged"]
        if not changes:
            return not_exercised("the server announced no manifest change")
        fetched = await session.call("mcpl/manifest", {})
    problems = sorted({p for m in changes for p in manifest_changed_problems(m.params)})
    last = changes[-1].params if isinstance(changes[-1].params, dict) else {}
    if not problems and fetched.ok and isinstance(fetched.result, dict):
        assert session.manifest is not None
        if fetched.result.get("revision") != last.get("revision"):
            problems.append("the announced revision is not the revision of the fetched manifest")
        real = change_domains(session.manifest, fetched.result)
        announced = {d for m in changes for d in (m.params or {}).get("domains", [])}
        if real and real != announced:
            problems.append(f"announced domains {sorted(announced)}, but {sorted(real)} changed")
    if problems:
        fail("; ".join(problems))
    return passed(f"{len(changes)} announcements with exact params")


def _arrivals(ctx: ServerContext, session: HostSession, method: str) -> list[float]:
    """When each ``method`` message of ``session`` arrived, in seconds since the check began."""
    connection = session.link.connection
    received = [
        frame.at
        for frame in ctx.transcript.frames
        if frame.connection == connection and frame.direction == "received"
    ]
    return [received[m.position - 1] for m in session.messages if m.method == method]


@SERVER_CHECKS.check(
    "server.manifest.bursts_coalesced",
    requirements=("S-41",),
    level="SHOULD",
    section=MANIFEST,
    title="a burst of manifest changes is announced with one notification",
    applies=needs(),
)
async def bursts_coalesced(ctx: ServerContext) -> Verdict:
    """Announcements do not come in bursts; two less than :data:`BURST_WINDOW` apart are one burst
    told piecemeal (the spec fixes no window, so the kit's is short and the check is a SHOULD).
    """
    async with ctx.connect() as session:
        await observe_traffic(session, ctx.marker())
    arrivals = _arrivals(ctx, session, "mcpl/manifestChanged")
    if not arrivals:
        return not_exercised("the server announced no manifest change")
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    close = [gap for gap in gaps if gap < BURST_WINDOW]
    if close:
        fail(
            f"{len(arrivals)} mcpl/manifestChanged, {len(close)} of them less than "
            f"{BURST_WINDOW:g} s after the one before: a burst announced piecemeal"
        )
    return passed(f"{len(arrivals)} announcements, none within {BURST_WINDOW:g} s of another")


@SERVER_CHECKS.check(
    "server.manifest.no_redundant_announcement",
    requirements=("S-42",),
    level="SHOULD",
    section=MANIFEST,
    title="no announcement repeats the revision given at initialize",
    applies=_with_revision,
)
async def no_redundant_announcement(ctx: ServerContext) -> Verdict:
    """Nothing re-announces the ``initialize`` revision."""
    async with ctx.connect() as session:
        await observe_traffic(session, ctx.marker())
    assert session.manifest is not None
    revision = session.manifest.get("revision")
    repeats = [
        m
        for m in session.messages
        if m.method == "mcpl/manifestChanged"
        and isinstance(m.params, dict)
        and m.params.get("revision") == revision
    ]
    if repeats:
        fail(f"{len(repeats)} mcpl/manifestChanged repeat the initialize revision {revision}")
    return passed("no announcement of the revision the host already has")


def rollback_set(manifest: Mapping[str, Any] | None) -> str | None:
    """Why S-44/S-45 do not apply, or None when a feature set declares ``rollback: true``.

    Both shapes of ``featureSets`` count: the 0.5 record keyed by name and the 0.4 array of
    ``{name, ...}`` (S-01 reports the shape; the rollback it declares is still checked).
    """
    if manifest is None:
        return "the server advertises no capabilities.experimental.mcpl (MCP-only)"
    sets, _diagnostics = parse_feature_sets(manifest.get("featureSets"))
    if any(decl.rollback for decl in sets.values()):
        return None
    return "no feature set declares rollback: true"


@SERVER_CHECKS.check(
    "server.state.rollback_unknown_checkpoint",
    requirements=("S-44",),
    level="MUST",
    section=STATE,
    title="state/rollback to an unknown checkpoint is -32005 with data.checkpoint",
    applies=rollback_set,
)
async def rollback_unknown_checkpoint(ctx: ServerContext) -> Verdict:
    """``state/rollback`` of an unknown checkpoint is ``-32005`` with ``data.checkpoint`` (only for
    servers declaring a rollback set).
    """
    checkpoint = ctx.marker("checkpoint")
    async with ctx.connect() as session:
        await ready(session)
        name = next((n for n, d in session.feature_sets.items() if d.rollback), None)
        if name is None:
            return not_applicable("no feature set declares rollback: true")
        reply = await session.call("state/rollback", {"featureSet": name, "checkpoint": checkpoint})
    data = reply.error.get("data") if reply.error is not None else None
    if reply.code != -32005:
        fail(f"rollback to an unknown checkpoint got {reply.describe()}, expected -32005")
    if not isinstance(data, dict) or data.get("checkpoint") != checkpoint:
        fail(f"-32005 without data.checkpoint {checkpoint!r}: data is {data!r}")
    return passed("-32005 with data.checkpoint")
