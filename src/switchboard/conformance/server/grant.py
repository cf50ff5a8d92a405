"""Server checks of the grant: acting within it, reading it, and following its changes.

Two kinds of evidence (mcpl-protocol.md 3.2-3.6; S-10 .. S-14): what the server *sends*
(privileged methods outside the grant) and how it *answers* gated host→server methods under
a grant that leaves them out. Each check's rule is its docstring.

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from ..common.outcomes import Verdict, fail, not_exercised, passed
from .answers import PRIVILEGED_FROM_SERVER
from .context import POLICY, SERVER_CHECKS, ServerContext
from .scenarios import (
    PROBES,
    denied_problem,
    needs,
    probe_call,
    probe_path,
    provoke,
    publish_params,
    ready,
    wait_channels,
)
from .session import HostSession

__all__: list[str] = []

_TRAFFIC = ("channels/incoming", "push/event")


async def _probe_denied(
    session: HostSession, path: str, channels: list[str], marker: str
) -> str | None:
    channel = channels[0] if channels else f"{marker}:unknown"
    method, params = probe_call(path, channel, marker)
    return denied_problem(await session.call(method, params), path, known_channel=bool(channels))


def _outside_grant(session: HostSession) -> list[str]:
    """Privileged methods sent after the last receipt that its grant does not cover.

    What a server sends before any receipt is judged by the checks of the handshake.
    """
    return sorted(
        {
            m.method
            for m in session.privileged(after=session.receipt_position)
            if not session.granted.allows(PRIVILEGED_FROM_SERVER[m.method])
        }
    )


@SERVER_CHECKS.check(
    "server.grant.acts_within_grant",
    requirements=("S-10",),
    level="MUST",
    section=POLICY,
    title="the server exercises only gates its grant covers",
    applies=needs(),
)
async def acts_within_grant(ctx: ServerContext) -> Verdict:
    """Granted only ``channels.register``, the server may register but sends nothing else
    privileged, and refuses every probe.
    """
    marker = ctx.marker()
    async with ctx.connect() as session:
        await session.handshake()
        allowed = sorted({"channels.register"} & session.advertised)
        await session.policy(allowed, enabled=session.set_names())
        channels = await wait_channels(session)
        await session.watch()
        problems = [
            f"sent {method} outside the grant {allowed}" for method in _outside_grant(session)
        ]
        probes = [path for path, _ in PROBES if path in session.advertised]
        for path in probes:
            problem = await _probe_denied(session, path, channels, marker)
            if problem is not None:
                problems.append(problem)
    if problems:
        fail("; ".join(problems))
    if not probes:
        return not_exercised("the server advertises no gated host→server method to probe")
    return passed(f"nothing outside {allowed}; probes refused with -32002: {probes}")


@SERVER_CHECKS.check(
    "server.grant.wildcard_semantics",
    requirements=("S-11",),
    level="MUST",
    section=POLICY,
    title="* matches one segment: bare channels grants nothing, channels.* every channel leaf",
    applies=needs("channels.register", "channels.publish", "channels.lifecycle"),
)
async def wildcard_semantics(ctx: ServerContext) -> Verdict:
    """A bare ``channels`` grants nothing, while ``channels.*`` covers every channel leaf (and
    ``contextHooks.*`` no hook leaf).
    """
    marker = ctx.marker()
    problems: list[str] = []
    async with ctx.connect() as session:
        await session.handshake()
        await session.policy(["channels"], enabled=session.set_names())
        await session.watch()
        sent = sorted({m.method for m in session.privileged(after=session.receipt_position)})
        if sent:
            problems.append(f"a bare 'channels' grant let the server send {sent}")
        probes = [path for path, _ in PROBES if path in session.advertised]
        for path in probes:
            problem = await _probe_denied(session, path, [], marker)
            if problem is not None:
                problems.append(f"under a bare 'channels' grant: {problem}")
    async with ctx.connect() as session:
        await session.handshake()
        await session.policy(["channels.*", "contextHooks.*"], enabled=session.set_names())
        channels = await wait_channels(session)
        extra = [m for m in _outside_grant(session) if not m.startswith("channels/")]
        if extra:
            problems.append(f"under channels.* and contextHooks.* the server sent {extra}")
        published = None
        if channels and "channels.publish" in session.advertised:
            published = await session.call(
                "channels/publish", publish_params(channels[0], f"{marker}: wildcard")
            )
            if published.code == -32002 or published.failure is not None:
                problems.append(
                    f"channels.* did not cover channels.publish: {published.describe()}"
                )
    if problems:
        fail("; ".join(problems))
    if not channels and not probes:
        return not_exercised("the server neither registered channels nor offers a probe")
    return passed("bare 'channels' granted nothing; channels.* covered the channel leaves")


@SERVER_CHECKS.check(
    "server.grant.overlapping_lists_refused",
    requirements=("S-12",),
    level="MUST",
    section=POLICY,
    title="a path both granted and denied makes the policy malformed, and the path unused",
    applies=needs(),
)
async def overlapping_lists_refused(ctx: ServerContext) -> Verdict:
    """A policy naming one path as both granted and denied is refused, and the path stays unused."""
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        channels = await wait_channels(session)
        fallback = min(session.advertised, default="channels.publish")
        path = probe_path(session.advertised) or fallback
        reply = await session.grant_all(denied=[path])
        problems: list[str] = []
        if reply.ok:
            problems.append(f"accepted a policy granting and denying {path}: {reply.describe()}")
        elif reply.failure is not None:
            problems.append(f"the malformed policy got no answer: {reply.failure}")
        probed = path in {p for p, _ in PROBES}
        if probed:
            channel = channels[0] if channels else f"{marker}:unknown"
            method, params = probe_call(path, channel, marker)
            after = await session.call(method, params)
            if after.ok:
                problems.append(f"{path} was still served after the malformed policy")
    if problems:
        fail("; ".join(problems))
    suffix = f", and {path} stayed unused" if probed else ""
    return passed(f"the malformed policy was refused ({reply.describe()}){suffix}")


@SERVER_CHECKS.check(
    "server.grant.reduction_respected",
    requirements=("S-13",),
    level="MUST",
    section=POLICY,
    title="a narrowing Request takes effect at once",
    applies=needs(),
)
async def reduction_respected(ctx: ServerContext) -> Verdict:
    """After a narrowing Request, no incoming messages or push events follow, and a removed probe is
    refused at once.
    """
    marker = ctx.marker()
    async with ctx.connect() as session:
        await ready(session)
        channels = await wait_channels(session)
        start = session.link.received
        if not any(m.method in _TRAFFIC for m in session.messages):
            await provoke(session, marker)
            await session.wait_for(lambda m: m.method in _TRAFFIC, after=start)
        traffic_seen = any(m.method in _TRAFFIC for m in session.messages)
        narrowed = sorted(session.advertised - {"channels.incoming", "pushEvents"})
        receipt = await session.policy(narrowed, enabled=session.set_names())
        cut = session.receipt_position if receipt.ok else session.link.received
        await provoke(session, ctx.marker())
        await session.watch()
        late = sorted(
            {m.method for m in session.messages if m.method in _TRAFFIC and m.position > cut}
        )
        problems = [f"sent {late} after the receipt of a grant without them"] if late else []
        path = probe_path(session.advertised)
        if path is not None:
            await session.policy(sorted(set(narrowed) - {path}), enabled=session.set_names())
            problem = await _probe_denied(session, path, channels, marker)
            if problem is not None:
                problems.append(f"right after removing {path}: {problem}")
    if problems:
        fail("; ".join(problems))
    if not traffic_seen and path is None:
        return not_exercised("no incoming traffic to cut off and no gated method to probe")
    seen = "incoming traffic stopped" if traffic_seen else "no incoming traffic to watch"
    probe = f"; removed {path} refused at once" if path else ""
    return passed(f"{seen}{probe}")


def _push_sets(session: HostSession) -> list[str]:
    return [n for n, d in session.feature_sets.items() if d.valid and "pushEvents" in d.uses]


async def _push_selection(ctx: ServerContext) -> list[str] | None:
    """``enabled`` limits push events to one set; a ``disabled`` Notification stops it."""
    async with ctx.connect() as session:
        await session.handshake()
        chosen = _push_sets(session)
        if "pushEvents" not in session.advertised or not chosen:
            return None
        await session.grant_all(enabled=chosen[:1])
        await wait_channels(session)
        await provoke(session, ctx.marker())
        first = await session.wait_for(lambda m: m.method == "push/event")
        if first is None:
            return None
        pushes = [m for m in session.messages if m.method == "push/event"]
        problems = [
            f"push/event tagged {set_name!r} while only {chosen[0]!r} is enabled"
            for set_name in sorted({_set_of(m.params) for m in pushes} - {chosen[0]})
        ]
        await session.policy_notification({"disabled": chosen[:1]})
        await session.barrier()
        cut = session.link.received
        await provoke(session, ctx.marker())
        await session.watch()
        if any(m.method == "push/event" and m.position > cut for m in session.messages):
            problems.append(f"push/event continued after {chosen[0]!r} was disabled")
        return problems


def _set_of(params: object) -> str:
    return str(params.get("featureSet")) if isinstance(params, dict) else "?"


@SERVER_CHECKS.check(
    "server.policy.enabled_disabled_semantics",
    requirements=("S-14",),
    level="MUST",
    section=POLICY,
    title="a Notification cannot widen the grant; enabled selects and disabled subtracts",
    applies=needs(),
)
async def enabled_disabled_semantics(ctx: ServerContext) -> Verdict:
    """A Notification cannot widen the grant; ``enabled`` is an allowlist and a ``disabled``
    Notification stops a set (push events).
    """
    problems: list[str] = []
    async with ctx.connect() as session:
        await session.handshake()
        has_push = "pushEvents" in session.advertised and bool(_push_sets(session))
        path = probe_path(session.advertised)
        if path is not None:
            everything = sorted(session.advertised)
            await session.policy(sorted(session.advertised - {path}), enabled=session.set_names())
            channels = await wait_channels(session)
            await session.policy_notification(
                {"effectiveCapabilities": everything, "enabled": session.set_names()}
            )
            await session.barrier()
            channel = channels[0] if channels else f"{ctx.marker()}:unknown"
            method, params = probe_call(path, channel, ctx.marker())
            reply = await session.call(method, params)
            if reply.ok:
                problems.append(f"a policy Notification widened the grant: {method} was served")
    selection = await _push_selection(ctx) if has_push else None
    problems.extend(selection or ())
    if problems:
        fail("; ".join(problems))
    if not path and selection is None:
        return not_exercised("no gated host→server method to probe and no push events seen")
    parts = ["a widening Notification was ignored"] if path else []
    if selection is not None:
        parts.append("push events followed enabled and disabled")
    return passed("; ".join(parts))
