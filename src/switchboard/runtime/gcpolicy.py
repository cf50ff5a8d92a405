"""The memory policy of a long-running server (``switchboard run``): the cyclic garbage
collector's, and on glibc the allocator's.

Why: with stock thresholds a young collection runs every few ingested batches and walks the
batches still in flight, and glibc maps and faults in every large buffer afresh; both cost a
share of every message. :func:`apply_server_policy` freezes the start-up heap and raises the
collector's thresholds; :func:`apply_allocator_policy` keeps buffers under 64 MiB on the heap.
``SWITCHBOARD_GC=stock`` and ``SWITCHBOARD_MALLOC=stock`` keep the defaults.

It knows Python's :mod:`gc`, glibc's ``mallopt`` and two environment variables; nothing of
Switchboard.
"""

from __future__ import annotations

import ctypes
import gc
import os
from collections.abc import Mapping
from typing import Final

__all__ = [
    "ENV_VAR",
    "MALLOC_ENV_VAR",
    "MMAP_THRESHOLD",
    "SERVER_THRESHOLDS",
    "TRIM_THRESHOLD",
    "apply_allocator_policy",
    "apply_server_policy",
]

#: Young, middle and old generation thresholds of the server policy.
SERVER_THRESHOLDS: Final = (50_000, 20, 100)

#: The environment variable that turns the policy off (``stock``).
ENV_VAR: Final = "SWITCHBOARD_GC"

#: The environment variable that turns the allocator's policy off (``stock``).
MALLOC_ENV_VAR: Final = "SWITCHBOARD_MALLOC"

#: Allocations smaller than this come from glibc's heap, not a mapping of their own (bytes).
MMAP_THRESHOLD: Final = 64 << 20

#: Free memory at the top of glibc's heap is kept, not returned, up to this much (bytes).
TRIM_THRESHOLD: Final = 64 << 20

# mallopt parameters, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3


def apply_server_policy(environ: Mapping[str, str] | None = None) -> bool:
    """Freeze the start-up heap and raise the collector's thresholds, unless
    ``SWITCHBOARD_GC=stock``; first, :func:`apply_allocator_policy`.

    What it knows: Python's :mod:`gc` module, glibc's ``mallopt`` (through :mod:`ctypes`) and two
    environment variables. Nothing of Switchboard.

    A host ingesting messages allocates many short-lived containers (each decoded JSON message is a
    few dicts and lists). With Python's stock thresholds (700 allocations for a young collection) a
    collection runs every few batches and finds the batches still in flight alive: it traverses
    them, promotes them, and every few hundred batches a full collection walks the whole heap,
    modules and registry included. A profile of ingest put this at 30% of the main thread; in
    ``bench/bench_ingest.py`` the policy cut host CPU per message by about a quarter. The policy,
    applied by ``switchboard run`` once the modules are imported and the config read, before the
    host is built:

    1. ``gc.collect()`` then ``gc.freeze()``: everything alive after start-up (modules, models, the
       config) moves to the permanent generation, which no collection walks again;
    2. thresholds raised to :data:`SERVER_THRESHOLDS`: a young collection every 50,000 net
       allocations, so most of what a batch allocated is already freed when one runs.

    Garbage with cycles is still collected, later; memory stays flat (the soak in
    ``bench/bench_ingest.py --soak`` measures it). ``SWITCHBOARD_GC=stock`` leaves Python's defaults
    untouched (to compare, or if a deployment prefers them).

    The allocator (:func:`apply_allocator_policy`). glibc's ``malloc`` gives an allocation of more
    than 128 KiB its own memory mapping, and unmaps it when it is freed; the next one is mapped
    afresh, and the kernel faults its pages in one by one as they are first written. A large request
    (a ``channels/register`` of 100,000 channels is a 10 MB frame, its answer 4 MB, and the dicts
    and lists in between are megabytes each) paid that on every buffer: about a twelfth of its round
    trip. Under the policy an allocation below :data:`MMAP_THRESHOLD` comes from the heap, and freed
    memory at the heap's top is kept for the next one up to :data:`TRIM_THRESHOLD`. The cost is
    memory: the process keeps up to that much free heap after a peak instead of returning it at
    once. ``SWITCHBOARD_MALLOC=stock`` leaves glibc's defaults; on other C libraries (musl, macOS)
    the policy does nothing.

    Returns:
        True if the policy was applied, False if the environment asked for the stock collector.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    apply_allocator_policy(env)
    if env.get(ENV_VAR, "").strip().lower() == "stock":
        return False
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_THRESHOLDS)
    return True


def apply_allocator_policy(environ: Mapping[str, str] | None = None) -> bool:
    """Set glibc's mmap and trim thresholds to :data:`MMAP_THRESHOLD` and
    :data:`TRIM_THRESHOLD`, unless ``SWITCHBOARD_MALLOC=stock`` or the C library is not glibc.

    Returns:
        True if both thresholds were set.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    if env.get(MALLOC_ENV_VAR, "").strip().lower() == "stock":
        return False
    if not _glibc():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt answers 1 on success, 0 for a value this glibc refuses.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def _glibc() -> bool:
    """Whether this process runs on glibc (whose ``mallopt`` takes these parameters)."""
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):  # not a name this platform knows
        return False
