"""Benchmark of a hostile connector: the host's peak memory when one registers 100,000
``initiallyOpen`` channels, and what it refused, with which reason.

Run: ``python bench/bench_hostile.py [--channels N] [--phases default,lifted]``.

Each phase starts a real ``switchboard run`` (its own process, a fresh store in a temporary
folder, the agent on stdio) with one stdio connector, ``tests/integration/hostile_connector.py``,
that registers ``N`` channels ``h:0`` .. ``h:N-1``, every one ``initiallyOpen``, in
``channels/register`` Requests of 1,000 (one after another), answers every ``channels/open``
the host sends, then sends one message. The phase ends when the host has sent an open for every
channel it accepted (or when no open came for 10 s); the host is then stopped and its peak
resident memory read from ``/proc/PID/status`` (``VmHWM``), and its stderr scanned for the
``connector_refused`` lines.

Phases:

- ``default``: the connector's limits at their defaults (``max_channels = 10000``,
  ``max_registrations_per_second = 1000``);
- ``lifted``: ``max_channels = N`` and no registration rate: every channel is accepted and
  opened, so this shows the memory of paced opens (the reconciler's bounded concurrency)
  without the cap.

The issue's figure before the limits (issue #13): 1.66 GB peak RSS for 100,000 ``initiallyOpen``
channels, 205 MB for 100,000 without ``initiallyOpen``. Target: under 300 MB, the excess
refused with a reason. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "integration" / "hostile_connector.py"
SWITCHBOARD = Path(sys.executable).with_name("switchboard")

PHASES: dict[str, str] = {
    "default": "",
    "lifted": "max_channels = {n}\nmax_registrations_per_second = 1000000000\n",
}


def _config(folder: Path, out: Path, n: int, extra: str) -> Path:
    command = orjson.dumps([sys.executable, str(HOSTILE), str(out), str(n)]).decode()
    text = (
        f'[store]\npath = "{folder / "sb.sqlite"}"\n\n'
        f'[[connectors]]\nid = "h"\ncommand = {command}\nrestart = false\n'
        f"request_timeout = 120\n{extra}"
    )
    path = folder / "switchboard.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _steps(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    lines = out.read_bytes().splitlines()
    steps = []
    for line in lines:
        try:
            steps.append(orjson.loads(line))
        except orjson.JSONDecodeError:  # a line being written
            break
    return steps


def _kib(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) if match else 0


def phase(name: str, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        folder = Path(tmp)
        out = folder / "out.jsonl"
        config = _config(folder, out, n, PHASES[name].format(n=n))
        err = (folder / "stderr.log").open("wb")
        started = time.perf_counter()
        host = subprocess.Popen(
            [str(SWITCHBOARD), "--log-level", "info", "run", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        accepted: int | None = None
        refused: Counter[str] = Counter()
        opens, last_change, registered_at = 0, time.monotonic(), None
        try:
            while True:
                if host.poll() is not None:
                    raise RuntimeError(f"switchboard exited with {host.returncode}")
                for step in _steps(out):
                    if step["step"] == "register" and accepted is None:
                        results = step["answer"]["result"]["results"]
                        accepted = sum(1 for r in results if r["accepted"])
                        refused = Counter(r["reason"] for r in results if not r["accepted"])
                        registered_at = time.perf_counter() - started
                    elif step["step"] == "opens" and step["answer"] != opens:
                        opens, last_change = step["answer"], time.monotonic()
                if accepted is not None and opens >= accepted:
                    break
                if accepted is not None and time.monotonic() - last_change > 10:
                    break
                time.sleep(0.2)
            elapsed = time.perf_counter() - started
            peak = _kib(host.pid, "VmHWM")
            current = _kib(host.pid, "VmRSS")
        finally:
            assert host.stdin is not None
            host.stdin.close()  # the agent leaves: the host shuts down
            try:
                host.wait(timeout=60)
            except subprocess.TimeoutExpired:
                host.kill()
                host.wait()
            err.close()
        log = (folder / "stderr.log").read_text(encoding="utf-8", errors="replace")
        refused_lines = sum(1 for line in log.splitlines() if "connector_refused" in line)
    return {
        "phase": name,
        "channels": n,
        "accepted": accepted,
        "refused": dict(refused),
        "opens": opens,
        "peak_rss_mb": peak / 1024,
        "rss_at_end_mb": current / 1024,
        "registered_s": registered_at,
        "elapsed_s": elapsed,
        "refusal_log_lines": refused_lines,
        "log_bytes": len(log.encode()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=100_000)
    parser.add_argument("--phases", default="default,lifted")
    args = parser.parse_args()
    if not os.path.exists("/proc/self/status"):
        sys.exit("bench_hostile needs Linux (/proc/PID/status)")
    print(f"hostile connector: {args.channels:,} initiallyOpen channels, 1,000 per register")
    for name in args.phases.split(","):
        r = phase(name, args.channels)
        print(f"\n[{name}]")
        peak, end = r["peak_rss_mb"], r["rss_at_end_mb"]
        print(f"  host peak RSS (VmHWM): {peak:.0f} MB  (at end {end:.0f} MB)")
        print(f"  accepted {r['accepted']:,}, opens sent {r['opens']:,}")
        for reason, count in r["refused"].items():
            print(f"  refused {count:,}: {reason}")
        registered, elapsed = r["registered_s"], r["elapsed_s"]
        print(f"  registrations answered after {registered:.1f} s; phase {elapsed:.1f} s")
        lines, size = r["refusal_log_lines"], r["log_bytes"]
        print(f"  connector_refused log lines: {lines}; host log {size:,} B")


if __name__ == "__main__":
    main()
