"""Host checks of the grant's edges and of general tolerance (mcpl-protocol.md 1.5, 1.6, 3.2,
3.5; H-09, H-10, H-11, H-15, H-16, H-66, H-68).

The grant is advertisement ∩ policy, so a host's matcher can be seen from outside: the grant
for a partial advertisement must be the full one's restricted to it, and what the host enforces
must be what its stated grant means under one-segment ``*`` matching. Also: ``inject.system``
is not granted by default, a receipt never widens a grant, ``fallback: "mcp-only"`` stops MCPL,
unknown members are tolerated, and a server without ``experimental.mcpl`` is MCP-only.

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from switchboard.protocol import MCPL_VERSION, Grant, advertised_paths

from ..common.outcomes import Verdict, failed, not_exercised, passed
from .channels import descriptor, incoming_message
from .context import GENERAL, HOST_CHECKS, POLICY, HostContext
from .probes import BARE_PARENTS, EVERYTHING, accepted_one, effective, push_params
from .session import KitConnector, no_policy

__all__: list[str] = []

_SYSTEM: Final = "contextHooks.beforeInference.inject.system"
_HOOKS_AND_CHANNELS: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "contextHooks": {"beforeInference": True},
    "channels": {"register": True, "publish": True, "incoming": True},
    "featureSets": {"kit.system": {"description": "system prompt", "uses": [_SYSTEM]}},
}
_NESTED: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "pushEvents": True,
    "channels": {"register": True, "publish": False},
    "contextHooks": {"beforeInference": {"inject": {"beforeUser": True}}},
    "inferenceRequest": {"streaming": True},
}
# Server-to-host requests the kit can send harmlessly, with the path each one needs.
_PROBES: Final[tuple[tuple[str, dict[str, Any], str], ...]] = (
    ("channels/register", {"channels": []}, "channels.register"),
    ("channels/list", {}, "channels.register"),
    ("channels/incoming", {"messages": [incoming_message("kit-x", "m-x")]}, "channels.incoming"),
    ("push/event", push_params(), "pushEvents"),
    ("model/info", {}, "modelInfo"),
)
_MCPL_PREFIXES: Final = ("featureSets/", "channels/", "mcpl/", "context/", "inference/", "push/")


async def _grant(kit: KitConnector) -> list[str]:
    return effective(await kit.require_ready())


async def _enforcement_problems(kit: KitConnector, stated: list[str]) -> list[str]:
    """Probe gated requests: what ``stated`` covers (one-segment ``*``) is never refused with
    ``-32002``, and what it does not cover is never served."""
    grant = Grant(stated)
    problems: list[str] = []
    for method, params, gate in _PROBES:
        reply = await kit.call(method, params)
        if reply.failure is not None:
            continue  # silence says nothing about matching (every_request_answered sees it)
        if grant.allows(gate) and reply.code == -32002:
            problems.append(f"{method} refused with -32002 though {stated!r} grants {gate}")
        elif not grant.allows(gate) and reply.ok:
            problems.append(
                f"{method} was served ({reply.describe()}) though {stated!r} lacks {gate}"
            )
    return problems


@HOST_CHECKS.check(
    "host.grant.wildcard_matching",
    requirements=("H-10",),
    level="MUST",
    section=POLICY,
    title="grants follow one-segment matching and a generic walk of nested advertisements",
)
async def wildcard_matching(ctx: HostContext) -> Verdict:
    async with ctx.launch(EVERYTHING) as kit:
        full = await _grant(kit)
        problems = await _enforcement_problems(kit, full)
    if problems:
        return failed("; ".join(problems))
    async with ctx.launch(_NESTED) as kit:
        nested = await _grant(kit)
    advertised = advertised_paths(_NESTED)
    expected = Grant(full).leaves() & advertised
    got = Grant(nested).leaves()
    if got != expected:
        return failed(
            f"for the nested advertisement the grant {nested!r} covers {sorted(got)!r}, but the "
            f"full grant {full!r} restricted to it is {sorted(expected)!r}"
        )
    if not expected:
        return not_exercised(
            f"the enforcement matched the grant {full!r}, but the host grants none of the "
            "nested advertisement's paths"
        )
    return passed(f"enforcement matched {full!r}; the nested advertisement got {sorted(got)!r}")


@HOST_CHECKS.check(
    "host.grant.bare_parent_grants_nothing",
    requirements=("H-11",),
    level="MUST",
    section=POLICY,
    title="a bare parent such as 'channels' in the grant authorizes no method",
)
async def bare_parent_grants_nothing(ctx: HostContext) -> Verdict:
    async with ctx.launch(EVERYTHING) as kit:
        stated = await _grant(kit)
        parents = sorted(set(stated) & BARE_PARENTS)
        if not parents:
            return not_exercised(f"the grant {stated!r} holds no bare parent to try")
        problems = await _enforcement_problems(kit, stated)
    if problems:
        return failed("; ".join(problems))
    return passed(f"the bare parents {parents!r} granted nothing")


@HOST_CHECKS.check(
    "host.grant.inject_system_denied_by_default",
    requirements=("H-09",),
    level="SHOULD",
    section=POLICY,
    title="contextHooks.beforeInference.inject.system is not granted by default",
)
async def inject_system_denied_by_default(ctx: HostContext) -> Verdict:
    async with ctx.launch(_HOOKS_AND_CHANNELS) as kit:
        stated = await _grant(kit)
    if Grant(stated).allows(_SYSTEM):
        return failed(f"the default grant {stated!r} includes {_SYSTEM}")
    return passed(f"the grant {stated!r} leaves {_SYSTEM} out")


@HOST_CHECKS.check(
    "host.grant.receipt_never_widens",
    requirements=("H-15",),
    level="MUST",
    section=POLICY,
    title="a receipt naming missing capabilities does not make the host grant them",
)
async def receipt_never_widens(ctx: HostContext) -> Verdict:
    receipt = {
        "accepted": True,
        "mode": "degraded",
        "unavailableFeatures": [
            {"featureSet": "kit.system", "missingCapabilities": [_SYSTEM], "effect": "disabled"}
        ],
    }
    async with ctx.launch(_HOOKS_AND_CHANNELS, receipt=receipt) as kit:
        stated = await _grant(kit)
        if Grant(stated).allows(_SYSTEM):
            return not_exercised(f"the host granted {_SYSTEM} from the start")
        await kit.wait_for(lambda m: False, within=ctx.options.silence)
        for policy in kit.sent("featureSets/update"):
            if Grant(effective(policy)).allows(_SYSTEM):
                return failed(f"after the receipt the host granted {_SYSTEM}: {policy.params!r}")
    return passed(f"the receipt asked for {_SYSTEM}; no later policy granted it")


@HOST_CHECKS.check(
    "host.grant.mcp_only_fallback_stops_mcpl",
    requirements=("H-16",),
    level="SHOULD",
    section=POLICY,
    title="after accepted:false with fallback mcp-only, the host stops MCPL (or closes)",
)
async def mcp_only_fallback_stops_mcpl(ctx: HostContext) -> Verdict:
    receipt = {"accepted": False, "fallback": "mcp-only", "reason": "the kit declines MCPL"}
    async with ctx.launch(receipt=receipt) as kit:
        policy = await kit.policy_request()
        if policy is None or not policy.is_request:
            raise no_policy(policy, ctx.options.expect_within)
        await kit.wait_for(lambda m: False, within=ctx.options.silence)
        register = await kit.call("channels/register", {"channels": [descriptor("kit-room")]})
        if register.failure is not None and "closed" in register.failure:
            return passed("the host closed the connection after the refusal")
        later = [
            m.method
            for m in kit.messages
            if m.after_receipt and m.method.startswith(_MCPL_PREFIXES)
        ]
        if later:
            return failed(f"MCPL traffic after the mcp-only fallback: {later!r}")
        if register.ok:
            return failed(f"channels/register was still served: {register.describe()}")
        return passed(f"no MCPL traffic after the refusal; register got {register.describe()}")


@HOST_CHECKS.check(
    "host.general.unknown_result_fields_tolerated",
    requirements=("H-66",),
    level="MUST",
    section=GENERAL,
    title="an unknown member in every result the connector sends changes nothing",
)
async def unknown_result_fields_tolerated(ctx: HostContext) -> Verdict:
    async with ctx.launch(extra_fields={"x-extra": 1, "x-kit": {"nested": True}}) as kit:
        await kit.require_ready()
        register = await kit.call("channels/register", {"channels": [descriptor("kit-room")]})
        incoming = await kit.call(
            "channels/incoming", {"messages": [incoming_message("kit-room", "m-1")]}
        )
        if not accepted_one(incoming):
            return failed(
                "with x-extra in the initialize result and the receipt, the connection did not "
                f"work: register {register.describe()}; incoming {incoming.describe()}"
            )
    return passed("initialize and the receipt carried unknown members; MCPL worked normally")


@HOST_CHECKS.check(
    "host.general.no_mcpl_without_advertisement",
    requirements=("H-68",),
    level="MUST",
    section=GENERAL,
    title="a server without experimental.mcpl gets no featureSets/update and no MCPL methods",
)
async def no_mcpl_without_advertisement(ctx: HostContext) -> Verdict:
    async with ctx.launch(None) as kit:
        init = await kit.wait_for(lambda m: m.method == "initialize")
        if init is None:
            return failed("the host sent no initialize")
        await kit.wait_for(lambda m: False, within=ctx.options.silence)
        register = await kit.call("channels/register", {"channels": [descriptor("kit-room")]})
        mcpl = [m.method for m in kit.messages if m.method.startswith(_MCPL_PREFIXES)]
        if mcpl:
            return failed(f"MCPL methods to a plain MCP server: {mcpl!r}")
        if register.ok:
            return failed(f"a plain MCP server's register was served: {register.describe()}")
    return passed(f"no MCPL traffic; channels/register got {register.describe()}")
