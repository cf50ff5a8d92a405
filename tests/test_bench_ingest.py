"""The ingest benchmark runs end to end in its quick form and prints its ratio lines.

It spawns ``switchboard run`` and the minimal host as real processes, each driving the real
connector program of the benchmark, and checks the store afterwards.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_ingest.py"


def test_the_quick_bench_prints_both_ratios_and_finds_every_message_stored() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    out = done.stdout
    assert "ratio switchboard / minimal host at W=1:" in out
    assert "ratio switchboard / minimal host at W=16:" in out
    assert "ratio switchboard / bare loop for publishes:" in out
    assert "register 1,000 channels in one request" in out
    assert "store check: every message accepted and stored" in out
