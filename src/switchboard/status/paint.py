"""The status page's first paint: ``/status/page`` filled from a snapshot on the server.

The page's script (``page/page.js``) keeps it live from ``/status/events``; this module
writes the same tables into the HTML it is served in, so the page shows the host at once,
before (or without) its script: rows, the empty-state sentence of a table with none, times
with their date. Every value is escaped (names and message texts come from strangers).
The cells here and in ``page.js`` must agree (the browser test reads both).

What it deliberately does not know: HTTP, and how the model is kept.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

__all__ = ["EMPTY", "dialect_cell", "paint", "publishes_cell", "when"]

EMPTY: Final = {
    "connectors": "No connectors are configured.",
    "channels": "No channels yet: a connector's channels appear once it has connected and "
    "registered them.",
    "agents": "No agents are configured.",
    "traffic": "Nothing has come in or gone out yet.",
    "refusals": "No refusals: every request of the connectors was taken.",
}
"""What a table with no rows says instead (the script writes the same)."""

Row = Mapping[str, Any]
Cell = tuple[object, str]  # the text, and the cell's class ("" for none)


def when(at: object) -> str:
    """A moment as ``2026-12-05 11:45:50 UTC`` (a date, not only a time: the page may stay
    open for days); empty for none."""
    if not isinstance(at, int | float) or isinstance(at, bool) or at <= 0:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def dialect_cell(row: Row) -> str:
    """The dialect (``mcpl-0.5``), with the manifest's version only when it says more."""
    dialect = str(row.get("dialect") or "")
    version = str(row.get("protocol_version") or "")
    if not version or version in dialect:
        return dialect
    return f"{dialect} ({version})" if dialect else version


def publishes_cell(row: Row) -> str:
    """The agents' publishes through a connector by outcome, or ``0`` for none."""
    counts = row.get("publishes") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "0"


def _connector(c: Row) -> tuple[dict[str, str], list[Cell]]:
    return {"data-connector": str(c["id"])}, [
        (c["id"], ""),
        (c["state"], f"state state-{c['state']}"),
        (c.get("pid"), "pid"),
        (dialect_cell(c), "dialect"),
        (c.get("channels"), "channels"),
        (c.get("restarts"), "restarts"),
        (c.get("messages_in"), "messages-in"),
        (publishes_cell(c), "out"),
        (c.get("refusals"), ""),
        (c.get("last_exit"), "last-exit"),
        (_dated(c.get("last_error_at"), c.get("last_error")), "text"),
        (_dated(c.get("last_refusal_at"), c.get("last_refusal")), "text"),
    ]


def _dated(at: object, text: object) -> str:
    return f"{when(at)} {text}".strip() if text else ""


_WANTED: Final = {"open": "open", "tuned-out": "open", "closed": "closed"}


def _channel(ch: Row) -> tuple[dict[str, str], list[Cell]]:
    attributes = {"data-channel": f"{ch['connector']}:{ch['id']}"}
    wanted = _WANTED.get(str(ch.get("desired")))
    if wanted is not None and wanted != ch.get("confirmed"):
        attributes["class"] = "mismatch"
    return attributes, [
        (ch["connector"], ""),
        (ch["id"], ""),
        (ch.get("label"), ""),
        (ch.get("direction"), ""),
        (ch.get("desired"), "desired"),
        (ch.get("confirmed"), "confirmed"),
    ]


def _agent(a: Row) -> tuple[dict[str, str], list[Cell]]:
    return {}, [(a["handle"], ""), (a.get("sessions"), ""), (when(a.get("last_active")), "")]


def _traffic(m: Row) -> tuple[dict[str, str], list[Cell]]:
    way = "→ " + str(m.get("outcome") or "") if m.get("direction") == "out" else "←"
    return {"class": f"traffic-{m.get('direction')}"}, [
        (when(m.get("at")), ""),
        (way.strip(), ""),
        (m.get("connector"), ""),
        (m.get("channel"), ""),
        (m.get("author"), ""),
        (m.get("text"), "text"),
    ]


def _refusal(r: Row) -> tuple[dict[str, str], list[Cell]]:
    return {}, [
        (when(r.get("at")), ""),
        (r.get("connector"), ""),
        (r.get("kind"), ""),
        (r.get("method"), ""),
        (r.get("reason"), "text"),
        (r.get("count"), ""),
    ]


def _rows(
    name: str,
    rows: Iterable[Row],
    render: Callable[[Row], tuple[dict[str, str], list[Cell]]],
    columns: int,
) -> str:
    out = []
    for row in rows:
        attributes, cells = render(row)
        shown = "".join(f' {k}="{html.escape(v)}"' for k, v in attributes.items())
        tds = "".join(
            f"<td{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>"
            f"{html.escape('' if text is None else str(text))}</td>"
            for text, cls in cells
        )
        out.append(f"<tr{shown}>{tds}</tr>")
    if not out:
        out.append(
            f'<tr class="empty"><td colspan="{columns}">{html.escape(EMPTY[name])}</td></tr>'
        )
    return "".join(out)


def _store(store: Row) -> str:
    mib = 1048576
    total, wal = store["total_bytes"] / mib, store["wal_bytes"] / mib
    text = (
        f"{store['path']} · {total:.2f} MiB (WAL {wal:.2f}) · backlog {store['write_backlog']}"
        f" · seq {store['latest_seq']}"
    )
    if not store.get("open", True):
        text += " · CLOSED"
    if store.get("storage_error"):
        text += f" · REFUSING WRITES: {store['storage_error']}"
    return text


def paint(snapshot: Row, template: str) -> str:
    """``template`` (page.html) with its ``<!--name-->`` marks replaced by ``snapshot``'s
    tables, badges and store line, each value escaped."""
    traffic: Row = snapshot["traffic"]
    channels: Sequence[Row] = snapshot["channels"]
    total = int(snapshot.get("channels_total", len(channels)))
    shown = f"({len(channels)} of {total} shown)" if total > len(channels) else f"({total})"
    ready = "ready" if snapshot["ready"] else "not ready: " + "; ".join(snapshot["not_ready"])
    marks = {
        "ready": html.escape(ready),
        "ready-class": "ok" if snapshot["ready"] else "bad",
        "summary": html.escape(
            f"up {round(snapshot['uptime'])} s · in {traffic['messages_in']} · out "
            f"{traffic['publishes_out']} · refusals {traffic['refusals']}"
        ),
        "connectors": _rows("connectors", snapshot["connectors"], _connector, 12),
        "channels-total": html.escape(shown),
        "channels": _rows("channels", channels, _channel, 6),
        "agents": _rows("agents", snapshot["agents"], _agent, 3),
        "store": html.escape(_store(snapshot["store"])),
        "traffic": _rows("traffic", list(reversed(snapshot["recent_traffic"])), _traffic, 6),
        "refusals": _rows("refusals", list(reversed(snapshot["recent_refusals"])), _refusal, 6),
    }
    page = template
    for name, value in marks.items():
        page = page.replace(f"<!--{name}-->", value)
    return page
