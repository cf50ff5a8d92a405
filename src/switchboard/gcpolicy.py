"""The cyclic garbage collector's policy for a long-running server (``switchboard run``).

What it knows: Python's :mod:`gc` module and one environment variable. Nothing of Switchboard.

A host ingesting messages allocates many short-lived containers (each decoded JSON message is
a few dicts and lists). With Python's stock thresholds (700 allocations for a young
collection) a collection runs every few batches and finds the batches still in flight alive:
it traverses them, promotes them, and every few hundred batches a full collection walks the
whole heap, modules and registry included. Issue #14's profile put this at 30% of the main
thread; in ``bench/bench_ingest.py`` the policy cut host CPU per message by about a quarter.
The policy, applied by ``switchboard run`` once the
modules are imported and the config read, before the host is built:

1. ``gc.collect()`` then ``gc.freeze()``: everything alive after start-up (modules, models,
   the config) moves to the permanent generation, which no collection walks again;
2. thresholds raised to :data:`SERVER_THRESHOLDS`: a young collection every 50,000 net
   allocations, so most of what a batch allocated is already freed when one runs.

Garbage with cycles is still collected, later; memory stays flat (the soak in
``bench/bench_ingest.py --soak`` measures it). ``SWITCHBOARD_GC=stock`` leaves Python's
defaults untouched (to compare, or if a deployment prefers them).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from typing import Final

__all__ = ["ENV_VAR", "SERVER_THRESHOLDS", "apply_server_policy"]

#: Young, middle and old generation thresholds of the server policy.
SERVER_THRESHOLDS: Final = (50_000, 20, 100)

#: The environment variable that turns the policy off (``stock``).
ENV_VAR: Final = "SWITCHBOARD_GC"


def apply_server_policy(environ: Mapping[str, str] | None = None) -> bool:
    """Freeze the start-up heap and raise the collector's thresholds, unless
    ``SWITCHBOARD_GC=stock``.

    Returns:
        True if the policy was applied, False if the environment asked for the stock collector.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    if env.get(ENV_VAR, "").strip().lower() == "stock":
        return False
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_THRESHOLDS)
    return True
