"""Host checks of the handshake and the policy exchange (mcpl-protocol.md 1.2, 1.3, 3.3).

What this module knows: what a host must do between ``initialize`` and readiness — advertise
MCPL, send ``featureSets/update`` as a Request (even with nothing grantable) before anything
privileged, reject privileged requests until the receipt — and what its grant may contain
(only advertised paths, never a path it also denies), and that it refuses methods outside it,
whatever tags they carry (tags never admit anything).

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from switchboard.protocol import CAPABILITY_PATHS, MCPL_VERSION, Grant

from ..common.outcomes import Verdict, fail, failed, passed
from ..common.reply import Reply
from .channels import descriptor, incoming_message
from .context import HANDSHAKE, HOST_CHECKS, POLICY, HostContext
from .probes import push_params
from .session import HostMessage, KitConnector, no_policy

__all__ = ["PRIVILEGED_TO_SERVER", "refused_as_denied"]

PRIVILEGED_TO_SERVER: Final = frozenset(
    {
        "channels/open",
        "channels/close",
        "channels/publish",
        "channels/outgoing/chunk",
        "channels/outgoing/complete",
        "channels/acknowledge",
        "channels/typing",
        "channels/list",
        "context/beforeInference",
        "inference/lifecycle",
        "inference/chunk",
    }
)
"""Host-to-server methods that need a grant, so may never precede the policy."""

_NOTHING_GRANTABLE: Final[Mapping[str, Any]] = {"version": MCPL_VERSION}
_REGISTER_AND_PUBLISH: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "channels": {"register": True, "publish": True},
}
_REGISTER_ONLY: Final[Mapping[str, Any]] = {"version": MCPL_VERSION, "channels": {"register": True}}


def refused_as_denied(reply: Reply, capability: str | None = None) -> str | None:
    """Why ``reply`` is not a ``-32002`` refusal (naming ``capability``), or ``None``."""
    if reply.ok or reply.failure is not None:
        return f"{reply.method} was not refused: {reply.describe()}"
    if reply.code != -32002:
        return f"{reply.method} got {reply.describe()}, not -32002"
    data = reply.error.get("data") if reply.error is not None else None
    named = data.get("capability") if isinstance(data, Mapping) else None
    if not isinstance(named, str) or (capability is not None and named != capability):
        return f"{reply.method} got -32002 without data.capability={capability!r}"
    return None


def _string_list(policy: HostMessage, key: str) -> list[str]:
    params = policy.params if isinstance(policy.params, Mapping) else {}
    value = params.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        fail(f"featureSets/update {key} is not a list of strings: {value!r}")
    return list(value)


async def _initial_policy(
    kit: KitConnector,
    *,
    judge_arrival: bool = False,
    judge_form: bool = False,
    any_form: bool = False,
) -> HostMessage:
    """The host's first ``featureSets/update``.

    Only the checks about the policy Request itself judge it: ``judge_arrival`` fails when
    none came, ``judge_form`` when it came as a Notification. Every other check needs it and
    is "not exercised" without it (:func:`.session.no_policy`), so a host that never sends
    the Request fails once, not once per check. ``any_form`` takes a Notification too, for
    checks about its content or about what precedes any receipt.
    """
    policy = await kit.policy_request()
    if policy is None:
        if judge_arrival:
            fail(f"no featureSets/update arrived within {kit.options.expect_within:g} s")
        raise no_policy(policy, kit.options.expect_within)
    if not policy.is_request and not any_form:
        if judge_form:
            fail("featureSets/update arrived as a Notification (no id); it must be a Request")
        raise no_policy(policy, kit.options.expect_within)
    return policy


@HOST_CHECKS.check(
    "host.handshake.advertises_mcpl",
    requirements=("H-01",),
    level="MUST",
    section=HANDSHAKE,
    title="initialize carries capabilities.experimental.mcpl with version 0.5",
)
async def advertises_mcpl(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        init = await kit.wait_for(lambda m: m.method == "initialize")
        if init is None:
            return failed("the host sent no initialize")
        params = init.params if isinstance(init.params, Mapping) else {}
        capabilities = params.get("capabilities")
        experimental = capabilities.get("experimental") if isinstance(capabilities, dict) else None
        mcpl = experimental.get("mcpl") if isinstance(experimental, dict) else None
        if not isinstance(mcpl, dict):
            return failed("initialize has no capabilities.experimental.mcpl object")
        if mcpl.get("version") != MCPL_VERSION:
            return failed(f"experimental.mcpl.version is {mcpl.get('version')!r}")
        if params.get("protocolVersion") in (None, MCPL_VERSION):
            return failed(f"protocolVersion is {params.get('protocolVersion')!r}")
        return passed("initialize advertises MCPL 0.5")


@HOST_CHECKS.check(
    "host.policy.initial_update_is_request",
    requirements=("H-02", "H-06"),
    level="MUST",
    section=HANDSHAKE,
    title="the initial featureSets/update is a Request, before anything privileged",
)
async def initial_update_is_request(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        policy = await _initial_policy(kit, judge_arrival=True, judge_form=True)
        early = [
            m.method
            for m in kit.messages
            if m.position < policy.position and m.method in PRIVILEGED_TO_SERVER
        ]
        if early:
            return failed(f"privileged methods came before the policy: {', '.join(early)}")
        return passed("featureSets/update arrived as a Request, first of the MCPL traffic")


@HOST_CHECKS.check(
    "host.policy.initial_update_when_nothing_granted",
    requirements=("H-03",),
    level="MUST",
    section=HANDSHAKE,
    title="the policy Request comes even when the connector advertises nothing grantable",
)
async def initial_update_when_nothing_granted(ctx: HostContext) -> Verdict:
    async with ctx.launch(_NOTHING_GRANTABLE) as kit:
        policy = await _initial_policy(kit, judge_arrival=True)
        effective = _string_list(policy, "effectiveCapabilities")
        if effective:
            return failed(f"nothing was advertised, yet the grant is {effective!r}")
        return passed("an empty-grant featureSets/update Request arrived")


@HOST_CHECKS.check(
    "host.policy.privileged_rejected_before_ready",
    requirements=("H-05",),
    level="MUST",
    section=HANDSHAKE,
    title="privileged requests before the receipt get an error, never a result or silence",
)
async def privileged_rejected_before_ready(ctx: HostContext) -> Verdict:
    async with ctx.launch(hold_policy=True) as kit:
        await _initial_policy(kit)
        replies = [
            await kit.call("channels/register", {"channels": [descriptor("kit-early")]}),
            await kit.call("push/event", push_params()),
            await kit.call("model/info", {}),
        ]
        problems = [r.describe() for r in replies if r.ok or r.failure is not None]
        if problems:
            return failed(f"before the receipt: {'; '.join(problems)}")
        exact = [refused_as_denied(r) for r in replies]
        kit.release_policy()
        if any(exact):
            return passed(f"refused, though not as advised: {'; '.join(filter(None, exact))}")
        return passed("each was refused with -32002 and data.capability")


@HOST_CHECKS.check(
    "host.grant.within_advertised_and_policy",
    requirements=("H-07",),
    level="MUST",
    section=POLICY,
    title="the effective grant matches only paths the connector advertised",
)
async def within_advertised(ctx: HostContext) -> Verdict:
    async with ctx.launch(_REGISTER_AND_PUBLISH) as kit:
        policy = await _initial_policy(kit, any_form=True)
        effective = _string_list(policy, "effectiveCapabilities")
        granted = Grant(effective)
        advertised = {"channels.register", "channels.publish"}
        extra = sorted(p for p in CAPABILITY_PATHS if granted.allows(p) and p not in advertised)
        if extra:
            return failed(f"the grant {effective!r} covers unadvertised paths {extra!r}")
        return passed(f"the grant {effective!r} stays within what was advertised")


@HOST_CHECKS.check(
    "host.grant.effective_and_denied_disjoint",
    requirements=("H-08",),
    level="MUST",
    section=POLICY,
    title="no path is both in effectiveCapabilities and in deniedCapabilities",
)
async def effective_and_denied_disjoint(ctx: HostContext) -> Verdict:
    async with ctx.launch(_REGISTER_AND_PUBLISH) as kit:
        policy = await _initial_policy(kit, any_form=True)
        both = set(_string_list(policy, "effectiveCapabilities")) & set(
            _string_list(policy, "deniedCapabilities")
        )
        if both:
            return failed(f"granted and denied at once: {sorted(both)!r}")
        return passed("effective and denied capabilities are disjoint")


@HOST_CHECKS.check(
    "host.grant.ungated_methods_refused",
    requirements=("H-20", "H-37"),
    level="MUST",
    section=POLICY,
    title="after the receipt, methods outside the grant get -32002, whatever their tags say",
)
async def ungated_methods_refused(ctx: HostContext) -> Verdict:
    async with ctx.launch(_REGISTER_ONLY) as kit:
        await kit.require_ready()
        checks = [
            (await kit.call("push/event", push_params(tags=["chat:mention"])), "pushEvents"),
            (
                await kit.call(
                    "channels/incoming", {"messages": [incoming_message("kit-none", "m-1")]}
                ),
                "channels.incoming",
            ),
        ]
        problems = [p for p in (refused_as_denied(r, c) for r, c in checks) if p]
        if problems:
            return failed("; ".join(problems))
        return passed("push/event (tagged chat:mention) and channels/incoming got -32002")
