"""The PostgreSQL store benchmark runs end to end in its quick form and prints its figures:
the PostgreSQL / SQLite ratios of ``switchboard run`` ingest, and the commit call's lock hold
with the ceiling it implies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_pg_store.py"


def test_the_quick_pg_bench_prints_its_ratios_and_the_commit_ceiling() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCH.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    out = done.stdout
    assert "ratio postgres / sqlite at W=16:" in out
    assert "commit call lock hold: p50" in out
    assert "ceiling implied (messages per commit / hold):" in out
    assert "store check: every message accepted and stored, in every round" in out
