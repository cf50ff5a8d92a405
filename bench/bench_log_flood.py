"""How much log a hostile connector can make a host write: a flood of ``channels/changed``.

Run: ``python bench/bench_log_flood.py [--changes K] [--log-json] [--lift-rate]``.

It starts a real ``switchboard run`` (its own process, a fresh store in a temporary folder,
no agent) with one stdio connector, ``tests/integration/hostile_connector.py`` in its
``--flood`` mode: after registering one channel it sends ``K`` ``channels/changed``
Notifications (each adds a channel and removes the one before; every tenth is
``initiallyOpen`` and its open is refused), then a thousand each of stray frames (an error
with ``id: null``, a response to an unknown id, a malformed ``mcpl/manifestChanged``, a
``notifications/message``, an unknown notification), then one message, whose answer says the
host has handled everything before it. Once the host's lifecycle work has settled (no log line
for a second), it is stopped with SIGTERM.

It prints the seconds the flood took, the bytes and lines of the host's log in all, and the
lines and bytes of each event (the ten largest), at the default level (INFO). With the
connector's default limits most of the added channels are refused past
``max_registrations_per_second``; ``--lift-rate`` takes them all (and so refuses 10,000 opens).
Linux only.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import anyio
import orjson

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "integration" / "hostile_connector.py"
_CONSOLE_EVENT = re.compile(r"^\S+ \[\s*\w+\s*\] (\S+)")


def _config(folder: Path, changes: int, lifted: bool) -> Path:
    command = orjson.dumps(
        [sys.executable, str(HOSTILE), str(folder / "out.jsonl"), "1", "--flood", str(changes)]
    ).decode()
    path = folder / "switchboard.toml"
    path.write_text(
        f'log_level = "INFO"\n[store]\npath = "{folder / "sb.sqlite"}"\n'
        '[agent]\ntransport = "none"\n'
        f'[[connectors]]\nid = "h"\ncommand = {command}\nrestart = false\n'
        "request_timeout = 120\n"
        + ("max_registrations_per_second = 1000000000\n" if lifted else "")
    )
    return path


def _event(line: str, json_log: bool) -> str:
    if json_log:
        try:
            return str(json.loads(line).get("event", "?"))
        except ValueError:
            return "(not json)"
    found = _CONSOLE_EVENT.match(line)
    return found.group(1) if found else "(continued)"


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--changes", type=int, default=100_000)
    p.add_argument("--log-json", action="store_true")
    p.add_argument(
        "--lift-rate",
        action="store_true",
        help="no registration rate limit: every change is taken (every tenth channel's open "
        "refused), the most the host can be made to say",
    )
    p.add_argument("--keep-log", type=Path, default=None, help="write the host's log here")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = _config(folder, args.changes, args.lift_rate)
        options = ["--log-json"] if args.log_json else []
        command = [sys.executable, "-m", "switchboard", *options, "run", "--config", str(config)]
        raw = bytearray()
        quiet = anyio.Event()
        flooded: list[float] = []
        async with await anyio.open_process(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        ) as process:
            assert process.stderr is not None
            stderr = process.stderr
            started = time.perf_counter()

            async def pump() -> None:
                async for chunk in stderr:
                    tail = bytes(raw[-64:]) + chunk
                    raw.extend(chunk)
                    if not flooded and b"flooded" in tail:
                        flooded.append(time.perf_counter() - started)

            async def settle() -> None:
                while not flooded:
                    await anyio.sleep(0.2)
                size = -1
                while size != len(raw):  # no line for a second: the host has settled
                    size = len(raw)
                    await anyio.sleep(1.0)
                quiet.set()

            async with anyio.create_task_group() as group:
                group.start_soon(pump)
                group.start_soon(settle)
                with anyio.fail_after(1800):
                    await quiet.wait()
                process.send_signal(signal.SIGTERM)
                with anyio.fail_after(60):
                    await process.wait()
    text = raw.decode("utf-8", "replace")
    if args.keep_log is not None:
        args.keep_log.write_text(text)
    lines = text.splitlines()
    per_event: Counter[str] = Counter()
    per_event_bytes: Counter[str] = Counter()
    for line in lines:
        event = _event(line, args.log_json)
        per_event[event] += 1
        per_event_bytes[event] += len(line.encode()) + 1
    fmt = "json" if args.log_json else "console"
    limits = "no registration rate" if args.lift_rate else "default limits"
    print(
        f"{args.changes:,} channels/changed and 5,000 stray frames ({fmt} log, {limits}): "
        "the flood took "
        f"{flooded[0] if flooded else float('nan'):.1f} s; the log: {len(raw):,} bytes, "
        f"{len(lines):,} lines"
    )
    for event, size in per_event_bytes.most_common(10):
        print(f"  {event:<40} {per_event[event]:>9,} lines {size:>12,} bytes")


if __name__ == "__main__":
    anyio.run(main)
