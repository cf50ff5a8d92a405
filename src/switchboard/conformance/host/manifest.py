"""Host checks of manifest changes (mcpl-protocol.md 3.15, 3.6; H-57..H-65, H-12, H-13, H-42).

The kit, as a connector, changes its manifest under a running host; the host must fetch before
acting, revoke a removal at once and tell the narrowed grant, never grant an addition, act on
the content whatever the revision says, and bound its fetches. A host may ignore
``mcpl/manifestChanged`` (§17.3), so a check that needs a fetch reports "not exercised" when
none comes.

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from switchboard.protocol import MCPL_VERSION, Grant, manifest_digest

from ..common.outcomes import NotExercised, Verdict, failed, not_exercised, passed
from ..common.reply import Reply
from ..common.shapes import change_domains
from .channels import descriptor, incoming_message
from .context import HOST_CHECKS, MANIFEST, HostContext
from .probes import accepted_one, effective, push_params, refusal
from .session import HostMessage, KitConnector

__all__ = ["BASE_MANIFEST", "with_revision"]

_CHANNELS: Final = {"register": True, "publish": True, "incoming": True}
_PUSH_SET: Final = {"kit.push": {"description": "the kit's push events", "uses": ["pushEvents"]}}
_ROOM: Final = "kit-room"
_FLOOD: Final = 200
_FLOOD_BOUND: Final = 20
_WRONG_REVISION: Final = "sha256:" + "A" * 43


def with_revision(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` with its §17.2 digest as ``revision``."""
    body = {k: v for k, v in manifest.items() if k != "revision"}
    return {**body, "revision": manifest_digest(body)}


BASE_MANIFEST: Final[Mapping[str, Any]] = with_revision(
    {"version": MCPL_VERSION, "pushEvents": True, "channels": _CHANNELS, "featureSets": _PUSH_SET}
)
"""What the kit advertises before it changes anything: channels, push events, one set."""

_NO_INCOMING: Final = with_revision(
    {
        "version": MCPL_VERSION,
        "pushEvents": True,
        "channels": {"register": True, "publish": True},
        "featureSets": _PUSH_SET,
    }
)


async def _ready(kit: KitConnector) -> list[str]:
    return effective(await kit.require_ready())


async def _incoming(kit: KitConnector, message_id: str) -> Reply:
    return await kit.call("channels/incoming", {"messages": [incoming_message(_ROOM, message_id)]})


async def _room_with_incoming(kit: KitConnector) -> None:
    """Register the kit's room and see one message on it admitted, or stop: not exercised."""
    await kit.call("channels/register", {"channels": [descriptor(_ROOM)]})
    if not accepted_one(await _incoming(kit, "kit-before")):
        raise NotExercised("the host does not admit channels/incoming from the kit at all")


async def _announce(
    kit: KitConnector, new: Any, *, old: Mapping[str, Any], revision: str | None = None
) -> HostMessage:
    """Serve ``new``, announce it, and return the host's fetch (or stop: not exercised)."""
    kit.serve_manifest(new)
    mark = kit.link.received
    if isinstance(new, Mapping):
        revision = revision or str(new.get("revision", _WRONG_REVISION))
        domains = sorted(change_domains(old, new)) or ["capabilities"]
    else:
        domains = ["capabilities"]
    params = {"revision": revision or _WRONG_REVISION, "domains": domains}
    await kit.notify("mcpl/manifestChanged", params)
    fetch = await kit.wait_for(lambda m: m.method == "mcpl/manifest" and m.position > mark)
    if fetch is None:
        raise NotExercised(
            "the host did not fetch the manifest after mcpl/manifestChanged (ignoring the "
            "notification is allowed)"
        )
    return fetch


async def _policy_after(kit: KitConnector, fetch: HostMessage) -> HostMessage | None:
    return await kit.wait_for(
        lambda m: m.method == "featureSets/update" and m.position > fetch.position
    )


@HOST_CHECKS.check(
    "host.manifest.fetch_before_acting",
    requirements=("H-57",),
    level="MUST",
    section=MANIFEST,
    title="after mcpl/manifestChanged the host fetches mcpl/manifest before changing the grant",
)
async def fetch_before_acting(ctx: HostContext) -> Verdict:
    async with ctx.launch(BASE_MANIFEST) as kit:
        await _ready(kit)
        kit.serve_manifest(_NO_INCOMING)
        mark = kit.link.received
        await kit.notify(
            "mcpl/manifestChanged",
            {"revision": _NO_INCOMING["revision"], "domains": ["capabilities"]},
        )
        first = await kit.wait_for(
            lambda m: m.position > mark and m.method in ("mcpl/manifest", "featureSets/update")
        )
        if first is None:
            return not_exercised("the host neither fetched the manifest nor changed the grant")
        if first.method == "featureSets/update":
            return failed("the host changed the policy after mcpl/manifestChanged without fetching")
        return passed("the host fetched mcpl/manifest before any policy change")


@HOST_CHECKS.check(
    "host.manifest.removals_host_first",
    requirements=("H-58", "H-12", "H-13", "H-42"),
    level="MUST",
    section=MANIFEST,
    title="a removed capability is refused at once, then a Request with the full grant follows",
)
async def removals_host_first(ctx: HostContext) -> Verdict:
    async with ctx.launch(BASE_MANIFEST) as kit:
        before = Grant(await _ready(kit))
        await _room_with_incoming(kit)
        kit.hold_policy()
        fetch = await _announce(kit, _NO_INCOMING, old=BASE_MANIFEST)
        narrowing = await _policy_after(kit, fetch)
        if narrowing is None:
            return failed("no featureSets/update followed the removal of channels.incoming")
        if not narrowing.is_request:
            return failed("the narrowed grant was sent as a Notification, not a Request")
        after = effective(narrowing)
        granted = Grant(after)
        kept = sorted(p for p in before.leaves() - {"channels.incoming"} if not granted.allows(p))
        if granted.allows("channels.incoming"):
            return failed(f"the narrowing Request still grants channels.incoming: {after!r}")
        if kept:
            return failed(f"the Request is not the complete grant: {after!r} lacks {kept!r}")
        problem = refusal(await _incoming(kit, "kit-after"), "channels/incoming")
        kit.release_policy()
        if problem is not None:
            return failed(f"with the narrowing Request still unanswered, {problem}")
        return passed(
            f"channels/incoming got -32002 before the receipt; the Request carried {after!r}"
        )


@HOST_CHECKS.check(
    "host.manifest.additions_not_granted",
    requirements=("H-59",),
    level="MUST",
    section=MANIFEST,
    title="capabilities a changed manifest adds are not granted automatically",
)
async def additions_not_granted(ctx: HostContext) -> Verdict:
    initial = with_revision({"version": MCPL_VERSION, "channels": _CHANNELS})
    grown = with_revision(
        {
            "version": MCPL_VERSION,
            "pushEvents": True,
            "channels": {**_CHANNELS, "streaming": True},
            "contextHooks": {"beforeInference": {"inject": {"system": True}}},
            "featureSets": _PUSH_SET,
        }
    )
    added = ("pushEvents", "channels.streaming", "contextHooks.beforeInference.inject.system")
    async with ctx.launch(initial) as kit:
        await _ready(kit)
        fetch = await _announce(kit, grown, old=initial)
        await kit.wait_for(lambda m: False, within=ctx.options.silence)
        for policy in kit.sent("featureSets/update", after=fetch.position):
            granted = Grant(effective(policy))
            widened = [p for p in added if granted.allows(p)]
            if widened:
                return failed(f"the host granted the additions {widened!r} by itself")
        push = await kit.call("push/event", push_params())
        if push.ok:
            return failed(f"push/event was accepted after pushEvents appeared: {push.describe()}")
        return passed(f"nothing added was granted; push/event got {push.describe()}")


@HOST_CHECKS.check(
    "host.manifest.partly_invalid_still_revokes",
    requirements=("H-60",),
    level="MUST",
    section=MANIFEST,
    title="a manifest with an invalid feature set still has its removals applied",
)
async def partly_invalid_still_revokes(ctx: HostContext) -> Verdict:
    broken = with_revision(
        {
            "version": MCPL_VERSION,
            "channels": _CHANNELS,
            "featureSets": {**_PUSH_SET, "kit.bogus": {"description": "x", "uses": ["bogus"]}},
        }
    )
    async with ctx.launch(BASE_MANIFEST) as kit:
        await _ready(kit)
        before = await kit.call("push/event", push_params(event_id="kit-before"))
        if not before.ok:
            return not_exercised(f"the host refuses the kit's push/event: {before.describe()}")
        fetch = await _announce(kit, broken, old=BASE_MANIFEST)
        await _policy_after(kit, fetch)
        after = await kit.call("push/event", push_params(event_id="kit-after"))
        if after.ok:
            return failed(f"pushEvents disappeared yet push/event was accepted: {after.describe()}")
        return passed(f"pushEvents was revoked despite the invalid set: {after.describe()}")


@HOST_CHECKS.check(
    "host.manifest.unparseable_keeps_old",
    requirements=("H-61",),
    level="MUST",
    section=MANIFEST,
    title="an mcpl/manifest answer that does not parse leaves the old manifest and MCPL in force",
)
async def unparseable_keeps_old(ctx: HostContext) -> Verdict:
    async with ctx.launch(BASE_MANIFEST) as kit:
        before = Grant(await _ready(kit))
        await _room_with_incoming(kit)
        fetch = await _announce(kit, "garbage", old=BASE_MANIFEST, revision=_WRONG_REVISION)
        await kit.wait_for(lambda m: False, within=ctx.options.silence)
        for policy in kit.sent("featureSets/update", after=fetch.position):
            granted = Grant(effective(policy))
            lost = sorted(p for p in before.leaves() if not granted.allows(p))
            if lost:
                return failed(f"after one unparseable manifest the host revoked {lost!r}")
        reply = await _incoming(kit, "kit-after")
        if not accepted_one(reply):
            return failed(f"MCPL is no longer in force: channels/incoming got {reply.describe()}")
        return passed("the old manifest stayed in force after an unparseable answer")


@HOST_CHECKS.check(
    "host.manifest.unchanged_revision_not_trusted",
    requirements=("H-62", "H-65"),
    level="MUST",
    section=MANIFEST,
    title="a fetched manifest is applied by its content even when its revision is unchanged",
)
async def unchanged_revision_not_trusted(ctx: HostContext) -> Verdict:
    stale = {**_NO_INCOMING, "revision": BASE_MANIFEST["revision"]}
    async with ctx.launch(BASE_MANIFEST) as kit:
        await _ready(kit)
        await _room_with_incoming(kit)
        fetch = await _announce(kit, stale, old=BASE_MANIFEST)
        await _policy_after(kit, fetch)
        problem = refusal(await _incoming(kit, "kit-after"), "channels/incoming")
        if problem is not None:
            return failed(f"the content changed under the same revision, but {problem}")
        return passed("the removal was applied although the revision was unchanged")


@HOST_CHECKS.check(
    "host.manifest.fetch_rate_bounded",
    requirements=("H-63",),
    level="MUST",
    section=MANIFEST,
    title=f"{_FLOOD} mcpl/manifestChanged in a burst cause only a few mcpl/manifest fetches",
)
async def fetch_rate_bounded(ctx: HostContext) -> Verdict:
    async with ctx.launch(BASE_MANIFEST) as kit:
        await _ready(kit)
        kit.serve_manifest(BASE_MANIFEST)
        mark = kit.link.received
        params = {"revision": _WRONG_REVISION, "domains": ["capabilities"]}
        for _ in range(_FLOOD):
            if not await kit.notify("mcpl/manifestChanged", params):
                return failed("the host closed the connection during the announcements")
        await kit.wait_for(lambda m: False, within=max(ctx.options.silence, 1.0))
        fetches = len(kit.sent("mcpl/manifest", after=mark))
        ping = await kit.call("ping", {})
        if ping.failure is not None:
            return failed(f"after the burst the host stopped answering: {ping.failure}")
        if fetches == 0:
            return not_exercised("the host fetched nothing (ignoring the notifications is allowed)")
        if fetches > _FLOOD_BOUND:
            return failed(f"{_FLOOD} announcements caused {fetches} mcpl/manifest requests")
        return passed(f"{_FLOOD} announcements caused {fetches} fetch(es)")


@HOST_CHECKS.check(
    "host.manifest.digest_mismatch_not_rejected",
    requirements=("H-64",),
    level="MUST",
    section=MANIFEST,
    title="a manifest whose revision is not its digest is still applied by its content",
)
async def digest_mismatch_not_rejected(ctx: HostContext) -> Verdict:
    wrong = {**_NO_INCOMING, "revision": _WRONG_REVISION}
    async with ctx.launch(BASE_MANIFEST) as kit:
        await _ready(kit)
        await _room_with_incoming(kit)
        fetch = await _announce(kit, wrong, old=BASE_MANIFEST)
        await _policy_after(kit, fetch)
        problem = refusal(await _incoming(kit, "kit-after"), "channels/incoming")
        if problem is not None:
            return failed(f"the revision was not the digest and {problem}")
        return passed("the content was applied despite the wrong revision")
