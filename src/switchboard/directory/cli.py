"""``switchboard agents ...``: the operator's view of the directory.

``list``, ``show``, ``remove``, ``prune``, ``export`` and ``import`` over the directory in a
given store file. The top-level CLI (``switchboard.cli``) reads the config and hands over the
store path; this module knows nothing of the config. Exit codes: 0 done, 1 the directory
refused (the message says why and what to do, with the error's stable name), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from switchboard.directory.directory import MAX_LIMIT, Directory
from switchboard.directory.entry import Entry
from switchboard.directory.errors import DirectoryError, InvalidSnapshot
from switchboard.directory.snapshot import export_snapshot, import_snapshot
from switchboard.runtime.texttable import text_table

__all__ = ["add_agents_parser", "run_agents"]


def add_agents_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``agents`` and its sub-commands to the top-level sub-parsers."""
    agents = sub.add_parser("agents", help="list and manage the directory of agents and services")
    verbs = agents.add_subparsers(dest="agents_command", required=True)

    def verb(name: str, text: str) -> argparse.ArgumentParser:
        p = verbs.add_parser(name, help=text, description=text)
        p.add_argument("--config", required=True, help="path to the TOML config file")
        return p

    ls = verb("list", "list entries, filtered and a page at a time")
    ls.add_argument("--prefix", help="only addresses starting with this")
    ls.add_argument("--tag", help="only entries with this tag")
    ls.add_argument("--kind", choices=["agent", "service"], help="only agents or only services")
    ls.add_argument("--owner", help="only addresses held by this identity (@handle)")
    ls.add_argument("--search", help="substring of address, capability, description or a tag")
    ls.add_argument("--limit", type=int, default=50, help=f"page size, 1 to {MAX_LIMIT}")
    ls.add_argument("--offset", type=int, default=0, help="entries to skip")
    ls.add_argument("--json", action="store_true", help="print the page as JSON")
    show = verb("show", "show one entry as JSON")
    show.add_argument("address")
    rm = verb("remove", "remove an entry, held or not (the operator's override)")
    rm.add_argument("address")
    prune = verb("prune", "remove agents whose last-seen is older than their TTL")
    prune.add_argument(
        "--ttl", type=float, default=None, help="seconds, for agents that have no TTL of their own"
    )
    exp = verb("export", "write the whole directory as a JSON snapshot")
    exp.add_argument("file", help="snapshot file to write, or - for stdout")
    imp = verb("import", "load a JSON snapshot; addresses already present are skipped")
    imp.add_argument("file", help="snapshot file to read, or - for stdin")


_HEADERS = ("address", "kind", "state", "holder", "tags", "description")


def _row(entry: Entry) -> list[str]:
    state = ("online" if entry.online else "offline") + ", " + ("busy" if entry.busy else "idle")
    return [
        entry.address,
        entry.kind,
        state,
        entry.holder or "-",
        ", ".join(entry.tags) or "-",
        entry.description or "",
    ]


def _write_atomically(path: str, text: str) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _run(args: argparse.Namespace, directory: Directory, out: TextIO) -> int:
    verb = args.agents_command
    if verb == "list":
        if args.search is not None:
            page = directory.search(args.search, limit=args.limit, offset=args.offset)
        else:
            page = directory.list(
                prefix=args.prefix,
                tag=args.tag,
                kind=args.kind,
                owner=args.owner,
                limit=args.limit,
                offset=args.offset,
            )
        if args.json:
            document = {
                "entries": [e.to_public() for e in page.entries],
                "total": page.total,
                "limit": page.limit,
                "offset": page.offset,
            }
            print(json.dumps(document, indent=2), file=out)
        else:
            shown = len(page.entries)
            if shown:
                print(text_table(_HEADERS, [_row(entry) for entry in page.entries]), file=out)
            first = page.offset + 1 if shown else page.offset
            counted = "entry" if page.total == 1 else "entries"
            print(f"{first}-{page.offset + shown} of {page.total} {counted}", file=out)
        return 0
    if verb == "show":
        print(json.dumps(directory.lookup(args.address).to_public(), indent=2), file=out)
        return 0
    if verb == "remove":
        removed = directory.unregister(args.address, force=True)
        print(f"removed {removed.address}", file=out)
        return 0
    if verb == "prune":
        pruned = directory.prune(default_ttl=args.ttl)
        for entry in pruned:
            print(f"pruned {entry.address}", file=out)
        print(f"{len(pruned)} pruned", file=out)
        return 0
    if verb == "export":
        text = json.dumps(export_snapshot(directory, exported_at=time.time()), indent=2) + "\n"
        if args.file == "-":
            out.write(text)
        else:
            _write_atomically(args.file, text)
            print(f"exported to {args.file}", file=out)
        return 0
    if verb == "import":
        try:
            raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text("utf-8")
        except OSError as exc:
            raise InvalidSnapshot(f"cannot read snapshot {args.file!r}: {exc}") from exc
        try:
            document = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InvalidSnapshot(f"snapshot {args.file!r} is not JSON: {exc}") from exc
        imported, skipped = import_snapshot(directory, document)
        for address in skipped:
            print(f"skipped {address} (already present)", file=out)
        print(f"{len(imported)} imported, {len(skipped)} skipped", file=out)
        return 0
    raise AssertionError(f"unknown agents command {verb!r}")  # argparse requires one


def run_agents(
    args: argparse.Namespace,
    store: str | Callable[[], Directory],
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run one ``switchboard agents`` command against the directory in the SQLite file
    ``store``, or the one ``store()`` opens (another backend's)."""
    try:
        with Directory.open(store) if isinstance(store, str) else store() as directory:
            return _run(args, directory, out)
    except DirectoryError as exc:
        err.write(f"switchboard: {exc} [{exc.name}, code {exc.code}]\n")
        return 1
