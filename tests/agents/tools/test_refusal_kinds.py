"""The refusal kinds docs/tools.md documents are exactly the kinds the code can produce."""

from __future__ import annotations

import re
from pathlib import Path

from switchboard.refusals.refusal import NEXT_STEP, RefusalKind

TOOLS_MD = Path(__file__).resolve().parents[3] / "docs" / "tools.md"
KIND = re.compile(r"[a-z]+(?:-[a-z]+)*")
"""What a kind looks like (tool names, with their underscores, are not kinds)."""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables(text: str) -> list[list[list[str]]]:
    """Every table of ``text``: its rows (the header first, the separator left out)."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            if not set(line) <= set("|-: "):
                rows.append(_cells(line))
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def _kinds(cell: str) -> set[str]:
    return {k for k in re.findall(r"`([^`]+)`", cell) if KIND.fullmatch(k)}


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_the_refusals_table_lists_exactly_the_kinds_the_code_can_produce() -> None:
    (table,) = _tables(_section(TOOLS_MD.read_text(encoding="utf-8"), "Refusals"))
    header, *rows = table
    assert header[0] == "refusal"
    documented = set().union(*(_kinds(row[0]) for row in rows))
    produced = {kind.value for kind in RefusalKind}
    assert sorted(produced - documented) == []  # produced, never documented
    assert sorted(documented - produced) == []  # documented, never produced


def test_every_refusal_the_docs_name_anywhere_is_one_the_code_can_produce() -> None:
    """The other tables' refusal columns and the examples' ``"refusal": ...`` values."""
    text = TOOLS_MD.read_text(encoding="utf-8")
    named: set[str] = set(re.findall(r'"refusal": "([^"]+)"', text))
    for header, *rows in _tables(text):
        if "refusal" in header:
            column = header.index("refusal")
            named |= set().union(*(_kinds(row[column]) for row in rows))
    assert named  # the tables and examples were found
    assert sorted(named - {kind.value for kind in RefusalKind}) == []


def test_every_kind_has_a_next_step_to_fall_back_on() -> None:
    assert sorted(k for k in RefusalKind if not NEXT_STEP.get(k)) == []
