"""Server checks of request handling: every request answered, unknown members and bad input.

mcpl-protocol.md 1.6, 2, and peers.md 14; S-20, S-21, S-39. Each check's rule is its
docstring.

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from typing import Any, Final

import anyio

from ..common.outcomes import Verdict, fail, passed
from .context import REQUESTS, SERVER_CHECKS, ServerContext
from .scenarios import needs, policy_failed, publish_params, ready, wait_channels
from .session import HostSession, Reply

__all__: list[str] = []

_EXTRA: Final = {"x-conformance-kit": {"note": "an unknown member; ignore it", "n": 1}}


def _kind(reply: Reply) -> str:
    if reply.ok:
        return "a result"
    if reply.failure is not None:
        return "no answer"
    return f"error {reply.code}"


async def _answers(session: HostSession, requests: list[tuple[str, Any]]) -> list[Reply]:
    """Send ``requests`` at once; their answers in the same order."""
    replies: list[Reply | None] = [None] * len(requests)

    async def one(index: int, method: str, params: Any) -> None:
        replies[index] = await session.call(method, params)

    async with anyio.create_task_group() as tg:
        for index, (method, params) in enumerate(requests):
            tg.start_soon(one, index, method, params)
    return [reply for reply in replies if reply is not None]


@SERVER_CHECKS.check(
    "server.requests.every_request_answered",
    requirements=("S-20", "S-39"),
    level="MUST",
    section=REQUESTS,
    title="every request is answered, unknown methods with -32601, ids echoed as sent",
    applies=needs(),
)
async def every_request_answered(ctx: ServerContext) -> Verdict:
    """``mcpl/manifest``, ``state/rollback``, ``channels/list``, ``channels/acknowledge`` and an
    unknown method each get a result or an error (the unknown method ``-32601``), and a request with
    a string id is answered with that same string id.
    """
    marker = ctx.marker()
    unknown = f"kit/{marker}"
    async with ctx.connect() as session:
        await ready(session)
        channels = await wait_channels(session)
        channel = channels[0] if channels else f"{marker}:unknown"
        feature_set = next(iter(session.feature_sets), "kit")
        replies = await _answers(
            session,
            [
                ("mcpl/manifest", {}),
                ("state/rollback", {"featureSet": feature_set, "checkpoint": f"{marker}-cp"}),
                ("channels/list", {}),
                (
                    "channels/acknowledge",
                    {"channelId": channel, "messageId": f"{marker}-m", "intent": "seen"},
                ),
                (unknown, {}),
            ],
        )
        string_id = f"{marker}-ping"
        echoed = await session.raw_request(string_id, "ping", {})
    problems = [f"{r.method}: {r.failure}" for r in replies if r.failure is not None]
    last = replies[-1]
    if last.failure is None and last.code != -32601:
        problems.append(f"the unknown method {unknown} got {last.describe()}, expected -32601")
    if echoed is None:
        problems.append(f"a ping with the string id {string_id!r} got no answer with that id")
    if problems:
        fail("; ".join(problems))
    listed = ", ".join(f"{r.method} → {_kind(r)}" for r in replies[:-1])
    return passed(f"{listed}; unknown → -32601; string id echoed")


_MALFORMED: Final = (
    b'{"jsonrpc": "2.0", "id": 90001, "method": "ping", "params": ',
    b'{"jsonrpc": "2.0", "id": "kit-invalid", "method": 17}',
    b"[]",
    b"this line is not JSON at all",
)


@SERVER_CHECKS.check(
    "server.requests.survives_malformed_input",
    requirements=("S-20",),
    level="MUST",
    section=REQUESTS,
    title="after malformed JSON, an invalid request and junk, the server still answers",
    applies=needs(),
)
async def survives_malformed_input(ctx: ServerContext) -> Verdict:
    """After truncated JSON, an invalid request, an empty batch and a junk line, the server still
    answers.
    """
    async with ctx.connect() as session:
        await ready(session)
        for frame in _MALFORMED:
            if not await session.send_raw(frame):
                fail("the connection closed while the kit sent malformed input")
        reply = await session.barrier()
    if reply.failure is not None:
        fail(f"after malformed input the server stopped answering: {reply.failure}")
    return passed(f"still answering after {len(_MALFORMED)} malformed frames ({reply.describe()})")


async def _compare(session: HostSession, method: str, params: dict[str, Any]) -> str | None:
    plain = await session.call(method, params)
    extended = await session.call(method, {**params, **_EXTRA})
    if _kind(plain) != _kind(extended):
        return (
            f"{method} answered {_kind(plain)} plainly but {_kind(extended)} with an extra member"
        )
    return None


@SERVER_CHECKS.check(
    "server.requests.unknown_fields_tolerated",
    requirements=("S-21",),
    level="MUST",
    section=REQUESTS,
    title="requests with unknown members are answered as they would be without them",
    applies=needs(),
)
async def unknown_fields_tolerated(ctx: ServerContext) -> Verdict:
    """Requests carrying members the server does not know (``initialize``, the policy Request,
    ``mcpl/manifest``, ``channels/list``, ``channels/publish``, ``tools/list``) are answered exactly
    as without them. When the policy Request fails without the extra member too, that is S-05's one
    failure, and this check is "not exercised".
    """
    marker = ctx.marker()
    problems: list[str] = []
    async with ctx.connect() as session:
        await session.handshake(extra=_EXTRA)
        receipt = await session.grant_all(extra=_EXTRA)
        if not receipt.ok:
            plain = await session.grant_all()
            if not plain.ok:
                raise policy_failed(plain)  # not the extra member's fault: S-05 reports it
            problems.append(f"the policy Request with an extra member got {receipt.describe()}")
        channels = await wait_channels(session)
        pairs: list[tuple[str, dict[str, Any]]] = [("mcpl/manifest", {}), ("channels/list", {})]
        if "tools" in session.advertised:
            pairs.append(("tools/list", {}))
        if channels and "channels.publish" in session.advertised:
            pairs.append(("channels/publish", publish_params(channels[0], f"{marker}: extras")))
        for method, params in pairs:
            problem = await _compare(session, method, params)
            if problem is not None:
                problems.append(problem)
    if problems:
        fail("; ".join(problems))
    names = ", ".join(["initialize", "featureSets/update", *(m for m, _ in pairs)])
    return passed(f"unknown members ignored by {names}")
