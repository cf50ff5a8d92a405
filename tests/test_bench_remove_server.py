"""The remove-server benchmark runs in its quick form: both ways of dropping a connection's
channels leave the same registry, and it prints a ratio for each case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_remove_server.py"


def test_the_quick_bench_drops_both_fleets_both_ways_and_prints_their_ratios() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("one of four connections: 2,000 channels") for line in lines)
    assert any(line.startswith("the last connection: 4,000 channels") for line in lines)
    assert sum("ratio one by one / at once" in line for line in lines) == 2
