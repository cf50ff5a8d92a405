"""The collector's server policy: start-up heap frozen, thresholds raised, ``stock`` opts out.

Each case runs in a fresh interpreter, so the test process's own collector is left alone.
"""

from __future__ import annotations

import json
import subprocess
import sys

from switchboard.gcpolicy import SERVER_THRESHOLDS

_PROBE = """
import gc, json, sys
from switchboard.gcpolicy import apply_server_policy
applied = apply_server_policy({"SWITCHBOARD_GC": sys.argv[1]})
print(json.dumps({"applied": applied, "frozen": gc.get_freeze_count(),
                  "thresholds": list(gc.get_threshold()), "enabled": gc.isenabled()}))
"""


def _probe(setting: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, setting], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_policy_freezes_the_start_up_heap_and_raises_the_thresholds() -> None:
    state = _probe("")
    assert state["applied"] is True
    assert isinstance(state["frozen"], int)
    assert state["frozen"] > 1000
    assert state["thresholds"] == list(SERVER_THRESHOLDS)
    assert state["enabled"] is True


def test_stock_leaves_pythons_collector_as_it_was() -> None:
    state = _probe("Stock")
    assert state["applied"] is False
    assert state["frozen"] == 0
    assert state["thresholds"] == [700, 10, 10]
