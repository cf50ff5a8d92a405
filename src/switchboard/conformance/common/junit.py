"""The report as JUnit XML, for CI systems that read test results that way.

What this module knows: the JUnit shape CI tools accept — one ``<testsuite>`` per report
section inside a ``<testsuites>`` root, one ``<testcase>`` per check (class name
``mcpl.<suite>.<section>``, name the check id), a ``<failure>`` carrying the message and
the message exchange for a failed check (its ``type`` says MUST or SHOULD), a
``<skipped>`` for "not exercised" and "not applicable", and every frame of every check in
``<system-out>``. Built with :mod:`xml.etree.ElementTree`.

What it deliberately does not know: how checks run, or any other report format.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from .outcomes import CheckResult, Outcome
from .report import Report, frame_lines

__all__ = ["render_junit", "write_junit"]

# XML 1.0 cannot carry most control characters, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _class_name(suite: str, section: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", section.lower()).strip("_")
    return f"mcpl.{suite}.{slug}"


def _case(parent: ET.Element, report: Report, result: CheckResult) -> None:
    case = ET.SubElement(
        parent,
        "testcase",
        classname=_class_name(report.suite, result.section),
        name=result.check_id,
        time=f"{result.duration:.3f}",
    )
    transcript = "\n".join(frame_lines(result.frames, width=None))
    label = f"{','.join(result.requirements)} {result.level}: {result.message}"
    if result.outcome is Outcome.FAIL:
        failure = ET.SubElement(case, "failure", message=_clean(label), type=result.level)
        failure.text = _clean(f"{result.message}\n\n{transcript}")
    elif result.outcome in (Outcome.NOT_EXERCISED, Outcome.NOT_APPLICABLE):
        what = result.outcome.value.replace("_", " ")
        ET.SubElement(case, "skipped", message=_clean(f"{what}: {result.message}"))
    if transcript:
        ET.SubElement(case, "system-out").text = _clean(transcript)


def render_junit(report: Report) -> str:
    """The report as a JUnit XML document (UTF-8 text with an XML declaration)."""
    counts = report.counts()
    root = ET.Element(
        "testsuites",
        name=f"mcpl-{report.suite}-conformance",
        tests=str(len(report.results)),
        failures=str(counts[Outcome.FAIL]),
        skipped=str(counts[Outcome.NOT_EXERCISED] + counts[Outcome.NOT_APPLICABLE]),
        time=f"{report.duration:.3f}",
    )
    for section, results in report.sections():
        failures = sum(1 for r in results if r.outcome is Outcome.FAIL)
        skipped = sum(
            1 for r in results if r.outcome in (Outcome.NOT_EXERCISED, Outcome.NOT_APPLICABLE)
        )
        suite = ET.SubElement(
            root,
            "testsuite",
            name=section,
            tests=str(len(results)),
            failures=str(failures),
            errors="0",
            skipped=str(skipped),
            time=f"{sum(r.duration for r in results):.3f}",
        )
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="target", value=_clean(report.target))
        for result in results:
            _case(suite, report, result)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(report: Report, path: Path) -> None:
    """Write :func:`render_junit` to ``path`` in UTF-8."""
    path.write_text(render_junit(report), encoding="utf-8")
