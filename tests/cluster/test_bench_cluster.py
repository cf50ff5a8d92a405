"""The cluster benchmark runs end to end in its quick form and prints its ratio lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_cluster.py"

pytestmark = pytest.mark.slow


def test_the_quick_cluster_bench_prints_the_owner_tail_and_pinned_figures() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    out = done.stdout
    assert "ratio owner CPU per message N=2 / N=1:" in out
    assert "tail cost per cluster message by N (" in out
    assert "ratio pinned aggregate N=2 / N=1:" in out
