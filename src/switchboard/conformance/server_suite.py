"""Run the server suite against a connector: ``await run_server_suite(target) -> Report``.

A preflight session reads the manifest, so checks that cannot apply are reported "not
applicable" without a connection of their own; every other check runs on connections of its
own, a few at a time.

What it deliberately does not know: terminal, JSON or JUnit output (:mod:`.common.report`,
:mod:`.cli`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import structlog

from .common.catalogue import Catalogue
from .common.options import SuiteOptions
from .common.outcomes import CheckResult, Outcome
from .common.registry import Check, CheckRegistry
from .common.report import Report
from .common.runner import run_checks
from .common.suite_coverage import SuiteCoverage, suite_coverage
from .common.transcript import Transcript
from .common.version import kit_version
from .server import (
    channels,
    grant,
    handshake,
    hooks,
    manifest,
    observed,
    policy,
    requests,
    state,
    streaming,
)
from .server.context import SECTIONS, SERVER_CHECKS, ServerContext
from .server.scenarios import wait_channels
from .server.session import HostSession
from .target import ServerTarget

__all__ = [
    "SERVER_CHECKS",
    "ServerTarget",
    "SuiteOptions",
    "run_server_suite",
    "server_check_ids",
    "server_coverage",
]

log = structlog.get_logger(__name__)

# Keep the check modules imported: importing them is what registers their checks.
_CHECK_MODULES: Final = (
    handshake,
    policy,
    grant,
    requests,
    observed,
    hooks,
    channels,
    streaming,
    manifest,
    state,
)

SERVER_CHECKS.order_sections(SECTIONS)


def server_check_ids() -> tuple[str, ...]:
    """Every server check id, in report order (handy for ``pytest.mark.parametrize``)."""
    return SERVER_CHECKS.ids


def server_coverage(catalogue: Catalogue | None = None) -> SuiteCoverage | None:
    """Coverage of the catalogue's server requirements (``None`` without a catalogue)."""
    return suite_coverage("server", SERVER_CHECKS.requirement_map(), catalogue=catalogue)


#: How many of the target's last stderr lines a warning quotes.
_WARNING_STDERR_LINES: Final = 5


class _Preflight:
    """What one session before the checks learned: the manifest, if the server answered,
    and under a full grant whether it registered channels and which sets stayed disabled."""

    def __init__(self) -> None:
        self.answered = False
        self.manifest: Mapping[str, Any] | None = None
        self.no_channels = False
        self.disabled: dict[str, str] = {}
        self.stderr: tuple[str, ...] = ()

    async def run(self, target: ServerTarget, options: SuiteOptions) -> None:
        transcript = Transcript(anyio.current_time())
        context = ServerContext(target, options, transcript)
        with anyio.move_on_after(options.check_timeout):
            try:
                async with context.connect() as session:
                    reply = await session.initialize()
                    self.answered = reply.ok
                    self.manifest = session.manifest
                    if reply.ok and session.manifest is not None:
                        await self._full_grant(session)
            except Exception as exc:  # the checks will report it, each with its evidence
                log.warning("preflight_failed", target=target.describe(), error=str(exc))
        self.stderr = transcript.stderr_tail

    async def _full_grant(self, session: HostSession) -> None:
        await session.notify("notifications/initialized")
        receipt = await session.grant_all()
        if not session.ready:
            return  # the policy checks report it
        for name, decl in session.feature_sets.items():
            if not decl.valid:
                self.disabled[name] = "its declaration is invalid (see advertisement_shape)"
        entries = receipt.result.get("unavailableFeatures") if receipt.ok else None
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and isinstance(entry.get("featureSet"), str):
                missing = entry.get("missingCapabilities")
                self.disabled[entry["featureSet"]] = f"the receipt says missing {missing!r}"
        if "channels.register" in session.advertised:
            self.no_channels = not await wait_channels(session)

    def warnings(self, results: Sequence[CheckResult]) -> tuple[str, ...]:
        """What the run should point out beside the results."""
        warnings = [
            f"feature set {name!r} stayed disabled under a full grant: {why}"
            for name, why in self.disabled.items()
        ]
        if self.no_channels:
            unexercised = sum(1 for r in results if r.outcome is Outcome.NOT_EXERCISED)
            tail = self.stderr[-_WARNING_STDERR_LINES:]
            said = " | ".join(tail) if tail else "nothing"
            warnings.append(
                "the server advertises channels.register but registered no channels under a "
                f"full grant, so {unexercised} checks were not exercised; if its own "
                f"registration failed, its stderr says why (it ended with: {said})"
            )
        return tuple(warnings)

    def skip_reason(self, check: Check[ServerContext]) -> str | None:
        if not self.answered or check.applies is None:
            return None
        return check.applies(self.manifest)


async def run_server_suite(
    target: ServerTarget | Sequence[str] | str,
    *,
    only: Sequence[str] | None = None,
    options: SuiteOptions | None = None,
    registry: CheckRegistry[ServerContext] | None = None,
) -> Report:
    """Run the server checks against ``target`` and return the report.

    What it knows: the complete server registry (importing it imports every check module), and one
    run — a preflight session that reads the manifest so checks that cannot apply are reported "not
    applicable" without a connection of their own, and, under a full grant, sees whether the server
    registers channels and enables its feature sets; then every selected check on fresh connections
    (see :mod:`.common.runner`); then the report with the catalogue's coverage and the run's
    *warnings*: a server that registered no channels (the checks that need one go unexercised; its
    stderr often says why) or left a feature set disabled under a full grant. A warning is not a
    failure.

    The kit plays the host. A target is a command list (spawned over stdio, one process per
    connection), ``"tcp://host:port"``, or a ``"ws://..."``/``"wss://..."`` URL.

    Args:
        target: a command list, ``"tcp://host:port"``, ``"ws://..."``, or a
            :class:`~.target.ServerTarget`.
        only: run just these check ids (in report order); ``None`` runs them all.
        options: timing and concurrency; defaults follow the protocol reference.
        registry: the checks to draw from (default: :data:`SERVER_CHECKS`).

    Raises:
        KeyError: ``only`` names an unknown check id.
        ValueError: the target is malformed.
    """
    server = ServerTarget.of(target)
    options = options or SuiteOptions()
    checks = (registry or SERVER_CHECKS).select(only)
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    clock = anyio.current_time()
    preflight = _Preflight()
    await preflight.run(server, options)
    concurrency = options.concurrency or (4 if server.kind == "stdio" else 1)
    results = await run_checks(
        checks,
        lambda check, transcript: ServerContext(
            server, options, transcript, preflight.manifest, check.applies
        ),
        skip_reason=preflight.skip_reason,
        limit=options.check_timeout,
        concurrency=concurrency,
    )
    return Report(
        suite="server",
        target=server.describe(),
        results=tuple(results),
        coverage=server_coverage(),
        started=started,
        duration=anyio.current_time() - clock,
        kit_version=kit_version(),
        warnings=preflight.warnings(results),
    )
