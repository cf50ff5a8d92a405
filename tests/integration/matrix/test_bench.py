"""The Matrix benchmark runs end to end in its quick form and prints its figures and ratios."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .synapse import Synapse

BENCH = Path(__file__).resolve().parents[3] / "bench" / "bench_matrix.py"


@pytest.mark.slow
def test_the_quick_matrix_bench_prints_rates_latencies_and_ratios(synapse: Synapse) -> None:
    # ``synapse`` makes sure the homeserver is installed (and fails the test if it cannot be).
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    out = done.stdout
    for line in (
        "matrix (Synapse + bridge)",
        "demo connector",
        "synapse only (no bridge)",
        "ratio demo / matrix messages per second:",
        "ratio matrix / demo latency p50:",
        "ratio matrix / demo latency p99:",
    ):
        assert line in out, out
