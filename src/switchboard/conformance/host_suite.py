"""Run the host suite against a host: ``await run_host_suite(command) -> Report``.

What this module knows: the complete host registry (importing it imports every check
module), and one run — every selected check on a fresh host process (see :mod:`.common.runner`),
then the report with the catalogue's coverage of host requirements.

The kit plays the connector. A host is a command template in which ``{connector}`` stands
for the argv of the kit's connector (a relay to the kit's TCP listener), for example
``["python", "-m", "myhost", "--connector", "{connector}"]``; or, for a host that dials its
connectors, one in which ``{url}`` stands for the kit's ``tcp://127.0.0.1:PORT``.

What it deliberately does not know: terminal, JSON or JUnit output, or the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import anyio

from .common.catalogue import Catalogue
from .common.options import SuiteOptions
from .common.registry import CheckRegistry
from .common.report import Report
from .common.runner import run_checks
from .common.suite_coverage import SuiteCoverage, suite_coverage
from .common.version import kit_version
from .host import channels, general, hooks, manifest, policy, push, requests, streaming
from .host.context import HOST_CHECKS, SECTIONS, HostContext, HostTarget

__all__ = [
    "HOST_CHECKS",
    "HostTarget",
    "SuiteOptions",
    "host_check_ids",
    "host_coverage",
    "run_host_suite",
]

# Keep the check modules imported: importing them is what registers their checks.
_CHECK_MODULES: Final = (policy, general, requests, push, hooks, channels, streaming, manifest)

HOST_CHECKS.order_sections(SECTIONS)


def host_check_ids() -> tuple[str, ...]:
    """Every host check id, in report order."""
    return HOST_CHECKS.ids


def host_coverage(catalogue: Catalogue | None = None) -> SuiteCoverage | None:
    """Coverage of the catalogue's host requirements (``None`` without a catalogue)."""
    return suite_coverage("host", HOST_CHECKS.requirement_map(), catalogue=catalogue)


async def run_host_suite(
    target: HostTarget | Sequence[str],
    *,
    only: Sequence[str] | None = None,
    options: SuiteOptions | None = None,
    registry: CheckRegistry[HostContext] | None = None,
) -> Report:
    """Run the host checks against ``target`` and return the report.

    Args:
        target: a command list containing ``{connector}`` or ``{url}``, or a :class:`HostTarget`.
        only: run just these check ids (in report order); ``None`` runs them all.
        options: timing and concurrency (default concurrency: 4 host processes at once).
        registry: the checks to draw from (default: :data:`HOST_CHECKS`).

    Raises:
        KeyError: ``only`` names an unknown check id.
        ValueError: the command is empty or lacks ``{connector}`` and ``{url}``.
    """
    host = HostTarget.of(target)
    options = options or SuiteOptions()
    checks = (registry or HOST_CHECKS).select(only)
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    clock = anyio.current_time()
    results = await run_checks(
        checks,
        lambda check, transcript: HostContext(host, options, transcript, check.id),
        skip_reason=lambda check: None,
        limit=options.check_timeout,
        concurrency=options.concurrency or 4,
    )
    return Report(
        suite="host",
        target=host.describe(),
        results=tuple(results),
        coverage=host_coverage(),
        started=started,
        duration=anyio.current_time() - clock,
        kit_version=kit_version(),
    )
