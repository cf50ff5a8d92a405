"""The runner: each check on its own connections, with a deadline, a few at a time.

Every check gets a fresh transcript and a fresh context (so fresh connections) and a deadline;
an exception escaping a check is its failure, never the run's; checks run concurrently up to
a bound.

What it deliberately does not know: any suite, context type, or how results are printed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import anyio
import structlog

from switchboard.transport import LinkClosedError

from .outcomes import CheckResult, CheckStop, Outcome, Verdict, failed, not_applicable
from .registry import Check
from .transcript import Transcript

__all__ = ["run_checks"]

log = structlog.get_logger(__name__)

C = TypeVar("C")


def _leaf(exc: BaseException) -> BaseException:
    """The most telling exception inside ``exc``: a CheckStop if any, else the first leaf."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = [_leaf(inner) for inner in exc.exceptions]
    for leaf in leaves:
        if isinstance(leaf, CheckStop):
            return leaf
    return leaves[0]


def _verdict_of(exc: Exception, check_id: str) -> Verdict:
    leaf = _leaf(exc)
    if isinstance(leaf, CheckStop):
        return leaf.verdict()
    if isinstance(leaf, LinkClosedError):
        return failed(f"the connection to the server ended: {leaf}")
    if isinstance(leaf, OSError):
        return failed(f"the server could not be started or reached: {leaf}")
    log.error("check_aborted", check=check_id, exc_info=leaf)
    return failed(f"the check could not complete: {type(leaf).__name__}: {leaf}")


async def _run_one(
    check: Check[C],
    make_context: Callable[[Check[C], Transcript], C],
    skip_reason: str | None,
    limit: float,
) -> CheckResult:
    started = anyio.current_time()
    transcript = Transcript(started)
    if skip_reason is not None:
        verdict = not_applicable(skip_reason)
    else:
        verdict = failed(f"the check did not finish within {limit:g} s: the server hung")
        with anyio.move_on_after(limit):
            try:
                verdict = await check.run(make_context(check, transcript))
            except Exception as exc:
                verdict = _verdict_of(exc, check.id)
    duration = anyio.current_time() - started
    log.info("check_finished", check=check.id, outcome=verdict.outcome.value, seconds=duration)
    return CheckResult(
        check_id=check.id,
        title=check.title,
        requirements=check.requirements,
        level=check.level,
        section=check.section,
        outcome=verdict.outcome,
        message=verdict.message,
        duration=duration,
        frames=transcript.frames,
        stderr=transcript.stderr_tail if verdict.outcome is Outcome.FAIL else (),
    )


async def run_checks(
    checks: Sequence[Check[C]],
    make_context: Callable[[Check[C], Transcript], C],
    *,
    skip_reason: Callable[[Check[C]], str | None],
    limit: float,
    concurrency: int,
) -> list[CheckResult]:
    """Run ``checks``, at most ``concurrency`` at once, each under ``limit`` seconds.

    What it knows:

    - that every check gets a fresh transcript and a fresh context (so fresh connections), and runs
      under its own deadline: a server that hangs fails that check, never the run;
    - that a failed result carries the tail of the target's stderr the transcript kept;
    - how a check's ending becomes a :class:`~.outcomes.CheckResult`: a returned verdict, a
      :class:`~.outcomes.CheckStop` raised from a helper (also from inside a task group, where it
      arrives wrapped in an exception group), a closed connection (a failure: the server went away),
      or any other exception (a failure that names it);
    - that a check whose ``applies`` reason is known up front is "not applicable" without any
      connection;
    - ordering: results come back in the order the checks were given, whatever finished first.

    Args:
        checks: what to run, in report order.
        make_context: builds a check's context around the check and its transcript.
        skip_reason: a known reason a check does not apply (``None``: run it).
        limit: seconds each check may take.
        concurrency: how many checks may run at the same time.

    Returns:
        One result per check, in the order of ``checks``.
    """
    results: list[CheckResult | None] = [None] * len(checks)
    limiter = anyio.CapacityLimiter(concurrency)

    async def run(index: int, check: Check[C]) -> None:
        async with limiter:
            results[index] = await _run_one(check, make_context, skip_reason(check), limit)

    async with anyio.create_task_group() as tg:
        for index, check in enumerate(checks):
            tg.start_soon(run, index, check)
    return [result for result in results if result is not None]
