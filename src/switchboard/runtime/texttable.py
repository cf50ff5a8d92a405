"""Plain-text tables as the command line prints them (``switchboard status``, ``switchboard
agents list``): columns padded to their widest cell, at most 60 characters (longer cells cut
with ``…``), a rule of dashes under the headings.

Hand-written: a dozen lines, where a table library would add a dependency for one layout.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["text_table"]

MAX_WIDTH = 60
"""The widest a column grows; a longer cell is cut."""


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """``rows`` under ``headers`` (None shows as an empty cell, a newline as a space)."""
    cells = [[str(h) for h in headers]] + [
        ["" if v is None else str(v).replace("\n", " ") for v in row] for row in rows
    ]
    widths = [min(MAX_WIDTH, max(len(row[i]) for row in cells)) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                (v if len(v) <= w else v[: w - 1] + "…").ljust(w)
                for v, w in zip(row, widths, strict=True)
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
