"""The report of one run: results grouped by section, as terminal text or as JSON.

What this module knows:

- :class:`Report`: what ran against which target, every result in registry order, the
  catalogue coverage, the counts, and the exit status (non-zero on any failed MUST check;
  a failed SHOULD check is reported but does not fail the run);
- the terminal form: one line per check under its section, and under each failure the
  message exchange that shows it (every frame of the check, each line cut to a width) and
  the tail of the target's stderr; then the run's warnings (things that are not failures
  but leave checks unexercised, such as a server that registered no channels);
- the JSON form: the same, with every frame of every check (frames that are JSON are
  embedded as objects, others as text).

What it deliberately does not know: how checks run, or JUnit (see :mod:`.junit`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .outcomes import CheckResult, FrameRecord, Outcome
from .suite_coverage import SuiteCoverage

__all__ = ["Report", "frame_lines", "render_json", "render_text", "report_json"]

_ARROWS = {"sent": "→", "received": "←"}


@dataclass(frozen=True, slots=True)
class Report:
    """The outcome of running a suite against one target.

    Attributes:
        suite: ``"server"``.
        target: the target as given.
        results: one per check run, in registry order.
        coverage: catalogue coverage, or ``None`` without a catalogue file.
        started: when the run started (ISO 8601, UTC).
        duration: seconds the run took.
        kit_version: the switchboard version that ran it.
        warnings: what the run noticed that is no failure but hides one, each a sentence.
    """

    suite: str
    target: str
    results: tuple[CheckResult, ...]
    coverage: SuiteCoverage | None = None
    started: str = ""
    duration: float = 0.0
    kit_version: str = "unknown"
    warnings: tuple[str, ...] = ()
    _index: dict[str, CheckResult] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update((r.check_id, r) for r in self.results)

    def __getitem__(self, check_id: str) -> CheckResult:
        return self._index[check_id]

    def ids(self, outcome: Outcome) -> frozenset[str]:
        """The ids of the checks that ended with ``outcome``."""
        return frozenset(r.check_id for r in self.results if r.outcome is outcome)

    @property
    def failed_ids(self) -> frozenset[str]:
        """The ids of every failed check, MUST or SHOULD."""
        return self.ids(Outcome.FAIL)

    @property
    def must_failures(self) -> tuple[CheckResult, ...]:
        """Failed MUST checks."""
        return tuple(r for r in self.results if r.must_failure)

    @property
    def exit_code(self) -> int:
        """``1`` when a MUST check failed, else ``0``."""
        return 1 if self.must_failures else 0

    def counts(self) -> dict[Outcome, int]:
        """How many checks ended with each outcome."""
        counts = dict.fromkeys(Outcome, 0)
        for result in self.results:
            counts[result.outcome] += 1
        return counts

    def sections(self) -> list[tuple[str, list[CheckResult]]]:
        """Results grouped by section, sections in the order they first appear."""
        grouped: dict[str, list[CheckResult]] = {}
        for result in self.results:
            grouped.setdefault(result.section, []).append(result)
        return list(grouped.items())

    def summary(self) -> str:
        """One line: the counts, and how many MUST failures."""
        counts = self.counts()
        return (
            f"{counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed "
            f"({len(self.must_failures)} MUST), {counts[Outcome.NOT_EXERCISED]} not exercised, "
            f"{counts[Outcome.NOT_APPLICABLE]} not applicable"
        )


def frame_lines(frames: Iterable[FrameRecord], *, width: int | None = 160) -> list[str]:
    """The frames as lines: ``[conn] +seconds → text`` (``←`` for what was received)."""
    lines = []
    for frame in frames:
        text = frame.text
        if width is not None and len(text) > width:
            text = text[: width - 3] + "..."
        lines.append(f"[{frame.connection}] +{frame.at:.3f}s {_ARROWS[frame.direction]} {text}")
    return lines


def _cut(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def render_text(report: Report, *, width: int | None = 160) -> str:
    """The report for a terminal; failures show their message exchange."""
    out = [f"MCPL {report.suite} conformance: {report.target}", ""]
    for section, results in report.sections():
        out.append(section)
        for result in results:
            requirements = ",".join(result.requirements)
            out.append(
                f"  {result.outcome.label:<4}  {result.check_id}  [{requirements} {result.level}]"
            )
            if result.message:
                out.append(f"        {result.message}")
            if result.outcome is Outcome.FAIL:
                out.append("        message exchange:")
                out.extend(f"          {line}" for line in frame_lines(result.frames, width=width))
                if result.stderr:
                    out.append(f"        the target's stderr (last {len(result.stderr)} lines):")
                    out.extend(f"          {_cut(line, width)}" for line in result.stderr)
        out.append("")
    for warning in report.warnings:
        out.append(f"Warning: {warning}")
    out.append(f"Summary: {report.summary()} in {report.duration:.1f} s")
    if report.coverage is not None:
        out.append(f"Coverage: {report.coverage.summary()}")
    return "\n".join(out) + "\n"


def _frame_json(frame: FrameRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "connection": frame.connection,
        "direction": frame.direction,
        "at": round(frame.at, 6),
    }
    try:
        entry["message"] = json.loads(frame.text)
    except ValueError:
        entry["raw"] = frame.text
    return entry


def _result_json(result: CheckResult) -> dict[str, Any]:
    return {
        "id": result.check_id,
        "title": result.title,
        "requirements": list(result.requirements),
        "level": result.level,
        "outcome": result.outcome.value,
        "message": result.message,
        "duration": round(result.duration, 6),
        "frames": [_frame_json(frame) for frame in result.frames],
        "stderr": list(result.stderr),
    }


def report_json(report: Report) -> dict[str, Any]:
    """The report as a JSON-ready dictionary."""
    counts = report.counts()
    return {
        "suite": report.suite,
        "target": report.target,
        "kit_version": report.kit_version,
        "started": report.started,
        "duration": round(report.duration, 6),
        "summary": {
            **{outcome.value: counts[outcome] for outcome in Outcome},
            "must_failures": len(report.must_failures),
            "exit_code": report.exit_code,
        },
        "coverage": None if report.coverage is None else report.coverage.to_json(),
        "warnings": list(report.warnings),
        "sections": [
            {"section": section, "checks": [_result_json(r) for r in results]}
            for section, results in report.sections()
        ],
    }


def render_json(report: Report) -> str:
    """The report as indented JSON text."""
    return json.dumps(report_json(report), indent=2, ensure_ascii=False) + "\n"
