"""Server checks read off the traffic a fully granted server sends: feature sets, push, tags.

mcpl-protocol.md 3.7, 3.8, 3.14; S-02, S-15, S-16, S-18, S-19. Each check opens its own
connection, grants everything, lets the server register its channels, provokes it once and
reads what it sends; each check's rule is its docstring.

What it deliberately does not know: how the report shows any of it.
"""

from __future__ import annotations

from typing import Any, Final

from switchboard.protocol import Grant, derive_enabled
from switchboard.transport import internal_error

from ..common.outcomes import Verdict, fail, not_exercised, passed
from ..common.shapes import push_problems, tag_problems, tag_warnings, umbrella_problems
from .context import FEATURES, SERVER_CHECKS, ServerContext
from .scenarios import needs, observe_traffic
from .session import HostSession, ServerMessage

__all__: list[str] = []

_TAGGED_BY_SET: Final = {"push/event": "pushEvents", "inference/request": "inferenceRequest"}


async def _observe(ctx: ServerContext) -> HostSession:
    async with ctx.connect() as session:
        await observe_traffic(session, ctx.marker())
    return session


def _set_messages(session: HostSession) -> list[ServerMessage]:
    return [m for m in session.messages if m.method in _TAGGED_BY_SET]


def _feature_set(message: ServerMessage) -> Any:
    return message.params.get("featureSet") if isinstance(message.params, dict) else None


@SERVER_CHECKS.check(
    "server.featuresets.uses_complete",
    requirements=("S-02",),
    level="MUST",
    section=FEATURES,
    title="each feature set's uses lists every gate its traffic exercises",
    applies=needs("pushEvents", "inferenceRequest"),
)
async def uses_complete(ctx: ServerContext) -> Verdict:
    """A ``push/event`` names a set whose ``uses`` lists ``pushEvents`` (``inferenceRequest`` for
    ``inference/request``).
    """
    session = await _observe(ctx)
    messages = _set_messages(session)
    if not messages:
        return not_exercised("no push/event or inference/request was seen")
    problems: set[str] = set()
    for message in messages:
        name = _feature_set(message)
        decl = session.feature_sets.get(name) if isinstance(name, str) else None
        gate = _TAGGED_BY_SET[message.method]
        if decl is not None and gate not in decl.uses:
            problems.add(f"{message.method} tagged {name!r}, whose uses lacks {gate}")
    if problems:
        fail("; ".join(sorted(problems)))
    return passed(f"{len(messages)} messages, each from a set that declares its gate")


@SERVER_CHECKS.check(
    "server.featuresets.declared_and_enabled",
    requirements=("S-15",),
    level="MUST",
    section=FEATURES,
    title="push/event and inference/request name a declared, enabled feature set",
    applies=needs("pushEvents", "inferenceRequest"),
)
async def declared_and_enabled(ctx: ServerContext) -> Verdict:
    """That set is declared and enabled."""
    session = await _observe(ctx)
    messages = _set_messages(session)
    if not messages:
        return not_exercised("no push/event or inference/request was seen")
    status = derive_enabled(
        session.feature_sets, Grant(sorted(session.advertised)), list(session.feature_sets), ()
    )
    problems: set[str] = set()
    for message in messages:
        name = _feature_set(message)
        if not isinstance(name, str) or name not in status:
            problems.add(f"{message.method} names the undeclared feature set {name!r}")
        elif status[name] is not None:
            problems.add(f"{message.method} names {name!r}, which is not enabled ({status[name]})")
    if problems:
        fail("; ".join(sorted(problems)))
    return passed(f"{len(messages)} messages, each from a declared and enabled set")


@SERVER_CHECKS.check(
    "server.push.params_complete",
    requirements=("S-16",),
    level="MUST",
    section=FEATURES,
    title="push/event carries eventId, an ISO-8601 timestamp and valid content blocks",
    applies=needs("pushEvents"),
)
async def params_complete(ctx: ServerContext) -> Verdict:
    """``eventId``, an ISO-8601 ``timestamp``, valid content."""
    session = await _observe(ctx)
    pushes = [m for m in session.messages if m.method == "push/event"]
    if not pushes:
        return not_exercised("no push/event was seen")
    problems = sorted({p for m in pushes for p in push_problems(m.params)})
    if problems:
        fail("; ".join(problems))
    return passed(f"{len(pushes)} push events, complete")


def _tag_lists(session: HostSession) -> list[Any]:
    found: list[Any] = []
    for message in session.messages:
        params = message.params if isinstance(message.params, dict) else {}
        if message.method == "push/event" and "tags" in params:
            found.append(params["tags"])
        elif message.method == "channels/incoming" and isinstance(params.get("messages"), list):
            found.extend(
                m["tags"] for m in params["messages"] if isinstance(m, dict) and "tags" in m
            )
    return found


@SERVER_CHECKS.check(
    "server.tags.namespaced",
    requirements=("S-18",),
    level="MUST",
    section=FEATURES,
    title="every event tag is namespaced as ns:value",
    applies=needs("pushEvents", "channels.incoming"),
)
async def namespaced(ctx: ServerContext) -> Verdict:
    """Every tag on push events and incoming messages is ``ns:value`` (core-vocabulary slips are
    noted, not failed).
    """
    session = await _observe(ctx)
    tag_lists = _tag_lists(session)
    if not tag_lists:
        return not_exercised("no push event or incoming message carried tags")
    problems = sorted({p for tags in tag_lists for p in tag_problems(tags)})
    if problems:
        fail("; ".join(problems))
    notes = sorted({w for tags in tag_lists for w in tag_warnings(tags)})
    suffix = f" (notes: {'; '.join(notes)})" if notes else ""
    return passed(f"{len(tag_lists)} tag sets, all namespaced{suffix}")


@SERVER_CHECKS.check(
    "server.tags.umbrella_core_tags",
    requirements=("S-19",),
    level="SHOULD",
    section=FEATURES,
    title="umbrella core tags (chat:addressed ...) come with the specific ones",
    applies=needs("pushEvents", "channels.incoming"),
)
async def umbrella_core_tags(ctx: ServerContext) -> Verdict:
    """``chat:addressed`` comes with ``chat:mention``, ``chat:reply`` and ``chat:dm`` (SHOULD)."""
    session = await _observe(ctx)
    tag_lists = _tag_lists(session)
    if not tag_lists:
        return not_exercised("no push event or incoming message carried tags")
    problems = sorted({p for tags in tag_lists for p in umbrella_problems(tags)})
    if problems:
        fail("; ".join(problems))
    return passed(f"{len(tag_lists)} tag sets, umbrella tags present where implied")


@SERVER_CHECKS.check(
    "server.push.stable_event_id_on_retry",
    requirements=("S-17",),
    level="SHOULD",
    section=FEATURES,
    title="a push/event retried after an error reuses its eventId",
    applies=needs("pushEvents"),
)
async def stable_event_id_on_retry(ctx: ServerContext) -> Verdict:
    """The kit refuses the first ``push/event`` with an error; a retry of the same payload reuses
    its ``eventId`` (SHOULD).
    """
    refused: list[Any] = []

    async def refuse_once(params: Any) -> Any:
        if not refused:
            refused.append(params)
            raise internal_error("refused once by the conformance kit to see a retry")
        return {"accepted": True}

    async with ctx.connect() as session:
        session.host.overrides["push/event"] = refuse_once
        await observe_traffic(session, ctx.marker())
        if not refused:
            return not_exercised("no push/event was seen")
        first = refused[0] if isinstance(refused[0], dict) else {}

        def is_retry(m: ServerMessage) -> bool:
            params = m.params if isinstance(m.params, dict) else {}
            return (
                m.method == "push/event"
                and params is not first
                and params.get("payload") == first.get("payload")
            )

        retry = await session.wait_for(is_retry)
    if retry is None:
        return not_exercised("the server did not retry the push/event the kit refused")
    retried = retry.params.get("eventId") if isinstance(retry.params, dict) else None
    if retried != first.get("eventId"):
        fail(f"the retry carries eventId {retried!r}, not the original {first.get('eventId')!r}")
    return passed(f"the retry reused eventId {retried!r}")
