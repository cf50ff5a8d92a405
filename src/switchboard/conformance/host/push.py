"""Host checks of feature sets and push events (mcpl-protocol.md 3.7, 3.8; H-19, H-21, H-22,
H-34, H-35).

What this module knows: how a host must refuse a ``push/event`` it does not admit — always
with a JSON-RPC error object, never a result carrying a failure flag: ``-32003`` (SHOULD) for
a feature set never declared, ``-32001`` with ``data.featureSet`` for a declared set that is
not enabled (one whose ``uses`` is invalid is never enabled), and some error for a use the
set did not declare — what an admitted one gets back (``{accepted: bool, inferenceId?,
reason?}``), and that a repeated ``eventId`` does not start a second inference.

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from switchboard.protocol import MCPL_VERSION, Grant

from ..common.outcomes import Verdict, failed, not_exercised, passed
from ..common.reply import Reply
from .context import HOST_CHECKS, PUSH, HostContext
from .probes import effective, enabled_sets, push_params

__all__: list[str] = []

_SETS: Final[Mapping[str, Any]] = {
    "kit.push": {"description": "the kit's push events", "uses": ["pushEvents"]},
    "kit.invalid": {"description": "uses a path that is no leaf", "uses": ["contextHooks.x"]},
    "kit.channels": {"description": "declares no pushEvents", "uses": ["channels.register"]},
}
_ADVERTISED: Final[Mapping[str, Any]] = {
    "version": MCPL_VERSION,
    "pushEvents": True,
    "channels": {"register": True, "publish": True, "incoming": True},
    "featureSets": _SETS,
}


def _result_problem(reply: Reply) -> str | None:
    """H-35: an admitted push gets ``{accepted: bool, inferenceId?, reason?}``."""
    result = reply.result
    if not isinstance(result, Mapping) or not isinstance(result.get("accepted"), bool):
        return f"push/event answered {reply.describe()}, not {{accepted: bool, ...}}"
    if "inferenceId" in result and not isinstance(result["inferenceId"], str):
        return f"push/event inferenceId is not a string: {reply.describe()}"
    if result["accepted"] is False and not isinstance(result.get("reason"), str):
        return f"push/event accepted false without a reason: {reply.describe()}"
    return None


def _feature_set_named(reply: Reply, name: str) -> bool:
    data = reply.error.get("data") if reply.error is not None else None
    return isinstance(data, Mapping) and data.get("featureSet") == name


@HOST_CHECKS.check(
    "host.errors.rejections_are_error_objects",
    requirements=("H-19", "H-21", "H-22", "H-35"),
    level="MUST",
    section=PUSH,
    title="push/event refusals are error objects with the documented codes; results are shaped",
)
async def rejections_are_error_objects(ctx: HostContext) -> Verdict:
    async with ctx.launch(_ADVERTISED) as kit:
        policy = await kit.require_ready()
        if not Grant(effective(policy)).allows("pushEvents"):
            return not_exercised("the host does not grant pushEvents, so no set can be tried")
        enabled = enabled_sets(policy)
        if enabled is not None and "kit.invalid" in enabled:
            return failed("a feature set whose uses is invalid was enabled")
        unknown = await kit.call("push/event", push_params("kit.never-declared", "kit-e1"))
        invalid = await kit.call("push/event", push_params("kit.invalid", "kit-e2"))
        undeclared = await kit.call("push/event", push_params("kit.channels", "kit-e3"))
        good = await kit.call("push/event", push_params("kit.push", "kit-e4"))
        silent = [r.describe() for r in (unknown, invalid, undeclared, good) if r.failure]
        if silent:
            return failed("; ".join(silent))
        for reply, what in (
            (unknown, "an undeclared feature set"),
            (invalid, "a set with invalid uses"),
            (undeclared, "a set whose uses lacks pushEvents"),
        ):
            if reply.ok:
                return failed(f"push/event naming {what} got a result: {reply.describe()}")
        if invalid.code != -32001 or not _feature_set_named(invalid, "kit.invalid"):
            return failed(
                f"a set with invalid uses got {invalid.describe()}, not -32001 with data.featureSet"
            )
        problem = _result_problem(good)
        if problem is not None:
            return failed(problem)
        note = "" if unknown.code == -32003 else f" (undeclared set got {unknown.code}, not -32003)"
        return passed(f"refusals were error objects; the enabled set got {good.describe()}{note}")


@HOST_CHECKS.check(
    "host.push.deduplicated_by_event_id",
    requirements=("H-34",),
    level="SHOULD",
    section=PUSH,
    title="the same push/event eventId twice starts at most one inference",
)
async def deduplicated_by_event_id(ctx: HostContext) -> Verdict:
    async with ctx.launch(_ADVERTISED) as kit:
        await kit.require_ready()
        first = await kit.call("push/event", push_params("kit.push", "kit-same"))
        second = await kit.call("push/event", push_params("kit.push", "kit-same"))
        ids = [
            r.result.get("inferenceId")
            for r in (first, second)
            if r.ok and isinstance(r.result, Mapping)
        ]
        if not any(isinstance(i, str) for i in ids):
            return not_exercised(
                "the host started no inference on the push events (no inferenceId), so a "
                "duplicate cannot be told apart"
            )
        if len(ids) == 2 and ids[0] != ids[1] and isinstance(ids[1], str):
            return failed(f"the repeated eventId started a second inference: {ids!r}")
        return passed(f"the repeated eventId started no second inference: {ids!r}")
