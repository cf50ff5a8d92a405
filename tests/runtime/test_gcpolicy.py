"""The server's memory policy: start-up heap frozen, collector thresholds raised, glibc's
allocator keeping large buffers in its heap; ``stock`` opts out of each.

Each case runs in a fresh interpreter, so the test process's own collector is left alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from switchboard.runtime.gcpolicy import SERVER_THRESHOLDS

_PROBE = """
import gc, json, sys
from switchboard.runtime.gcpolicy import apply_server_policy
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


# Where a 16 MiB buffer lands: inside the heap glibc grows with brk, or in a mapping of its own.
_ALLOCATOR_PROBE = """
import ctypes, json, os, sys
from switchboard.runtime.gcpolicy import apply_allocator_policy
applied = apply_allocator_policy({"SWITCHBOARD_MALLOC": sys.argv[1]})
buffer = bytearray(16 << 20)
address = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
heap = [line.split()[0] for line in open("/proc/self/maps") if line.rstrip().endswith("[heap]")]
inside = any(int(a, 16) <= address < int(b, 16) for a, b in (r.split("-") for r in heap))
print(json.dumps({"applied": applied, "in_heap": inside}))
"""


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


def _allocator_probe(setting: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _ALLOCATOR_PROBE, setting],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(not _glibc(), reason="the allocator policy sets glibc's mallopt only")
def test_under_the_allocator_policy_a_large_buffer_comes_from_the_heap_not_its_own_mapping() -> (
    None
):
    assert _allocator_probe("") == {"applied": True, "in_heap": True}


@pytest.mark.skipif(not _glibc(), reason="the allocator policy sets glibc's mallopt only")
def test_stock_malloc_leaves_glibc_mapping_a_large_buffer_of_its_own() -> None:
    assert _allocator_probe("stock") == {"applied": False, "in_heap": False}
