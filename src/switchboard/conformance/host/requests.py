"""Host checks of request handling and robustness (mcpl-protocol.md 6.6, H-17).

What this module knows: that a host answers every request a connector sends — known,
unknown (with ``-32601``) or outside its grant (``model/info`` without ``modelInfo`` with an
error, never a result) — and that junk on the wire does not end the session.

What it deliberately does not know: how the host is started or how results are reported.
"""

from __future__ import annotations

from typing import Final

from ..common.outcomes import Verdict, failed, passed
from .context import HOST_CHECKS, REQUESTS, HostContext

__all__: list[str] = []

_JUNK: Final = (
    b"{not json",
    b"[]",
    b'{"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}',
    b"\xff\xfe garbage",
    b'"a string"',
)


@HOST_CHECKS.check(
    "host.requests.every_request_answered",
    requirements=("H-17", "H-18"),
    level="MUST",
    section=REQUESTS,
    title="every request gets a result or an error; unknown -32601, model/info ungranted an error",
)
async def every_request_answered(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await kit.require_ready()
        methods = ("model/info", "channels/list", "state/update", "context/afterInference")
        replies = [await kit.call(method, {}) for method in methods]
        unknown = await kit.call("mcpl/kit-unknown", {})
        silent = [r.describe() for r in (*replies, unknown) if r.failure is not None]
        if silent:
            return failed("; ".join(silent))
        if unknown.code != -32601:
            return failed(f"an unknown method got {unknown.describe()}, not -32601")
        if replies[0].ok:
            return failed(f"model/info without modelInfo granted got {replies[0].describe()}")
        return passed(
            "every request was answered; the unknown method with -32601, "
            f"model/info with {replies[0].describe()}"
        )


@HOST_CHECKS.check(
    "host.requests.survives_malformed_frames",
    requirements=("H-17",),
    level="MUST",
    section=REQUESTS,
    title="a burst of malformed frames does not end the session",
)
async def survives_malformed_frames(ctx: HostContext) -> Verdict:
    async with ctx.launch() as kit:
        await kit.require_ready()
        for frame in _JUNK * 5:
            if not await kit.send_raw(frame):
                return failed("the host closed the connection during the junk")
        reply = await kit.call("ping", {})
        if reply.failure is not None:
            return failed(f"after {len(_JUNK) * 5} malformed frames: {reply.failure}")
        return passed("the host still answers after a burst of malformed frames")
