"""Benchmark of name resolution: ids, qualified names, labels and DM names at 1k and 100k.

Run: ``python bench/bench_names.py``. Every figure below comes from this one run:

- the median time of one ``ChannelRegistry.resolve(name)`` (the general resolver, which tries
  the tiers in order, so a label or DM name first misses the earlier tiers), by id, qualified
  name, raw id, label and DM name, each over up to 800 *different* names, at 1,000 and at
  100,000 registered channels, measured in alternation; *warm* (each name's fastest of eleven
  passes: the steady cost of the structure) and *cold* (each name's first lookup, which adds
  the cache misses of a larger registry), and the 100k/1k ratio of each. The targets (ratio
  <= 1.5x for ids, qualified names, labels and DM names; <= 3 µs for an id or a qualified
  name at 100k) are checked on the warm figures, as bench_registry.py does;
- for scale, with no target: a partial DM name (``@ser3_9`` for ``user3_9``, via
  ``registry.names.match``, which builds no refusal), ``names.name_for(ref)`` and
  ``names.prose_target_for(ref)``, and the one-off build of the partial-DM table on the first
  partial lookup.

The data is bench_registry.py's Discord-shaped fleet (four connections, ids
``discord:<guild>:<snowflake>``, labels ``#topic-n (Guild Name)``, one DM in ten); the 1k
registry is its first guild. Every measured resolution is checked to return the expected
channel after timing.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench_registry import (
    BATCH,
    BATCHES,
    LOOKUPS,
    MEDIAN_TARGET_US,
    RATIO_TARGET,
    WARMUP,
    Batch,
    build,
    mark,
    raw_of,
    register_all,
)
from switchboard.channels import ChannelRef, ChannelRegistry

TARGETED = ("id", "qualified", "label", "DM name")
#: Warm passes per name. More than bench_registry.py's five: on a shared VM a name's fastest of
#: five is still often a disturbed sample, and these figures are compared at the 1.5x level.
PASSES = 11
FAST = ("id", "qualified")

Lookup = Callable[[Any], object]
Case = tuple[Lookup, list[Any], list[ChannelRef]]


def timed(lookup: Lookup, keys: Sequence[object]) -> list[int]:
    """The time of ``lookup(key)`` for each key in turn, each call timed alone.

    The cyclic garbage collector is off while timing (as ``timeit`` does): a collection set off
    by the bench's own sample list is not a cost of the lookup.
    """
    clock = time.perf_counter_ns
    samples: list[int] = []
    gc.disable()
    try:
        for key in keys:
            t0 = clock()
            lookup(key)
            samples.append(clock() - t0)
    finally:
        gc.enable()
    return samples


def cases(registry: ChannelRegistry, data: Sequence[Batch]) -> dict[str, Case]:
    """Per kind: the call, ``WARMUP + LOOKUPS`` different names, and the channel each picks."""
    rng = random.Random(13)
    pairs = [(server, d) for server, items in data for d in items]
    picked = rng.sample(pairs, len(pairs))
    plain = [(s, d) for s, d in picked if not d.metadata][: WARMUP + LOOKUPS]
    dms = [(s, d) for s, d in picked if d.metadata][: WARMUP + LOOKUPS]
    plain_refs = [ChannelRef(s, d.id) for s, d in plain]
    dm_refs = [ChannelRef(s, d.id) for s, d in dms]
    resolve, names = registry.resolve, registry.names
    return {
        "id": (resolve, [d.id for _, d in plain], plain_refs),
        "qualified": (resolve, [f"{s}:{d.id}" for s, d in plain], plain_refs),
        "raw id": (resolve, [raw_of(d) for _, d in plain], plain_refs),
        "label": (resolve, [d.label.upper() for _, d in plain], plain_refs),
        "DM name": (resolve, [f"@{d.label[4:]}" for _, d in dms], dm_refs),
        "DM partial": (names.match, [f"@{d.label[5:]}" for _, d in dms], dm_refs),
        "name_for": (names.name_for, plain_refs, plain_refs),
        "prose token": (names.prose_target_for, dm_refs, dm_refs),
    }


def check(kind: str, case: Case) -> None:
    """After timing: every measured resolution picked its expected channel."""
    lookup, keys, refs = case
    for key, ref in zip(keys, refs, strict=True):
        found = lookup(key)
        if kind in ("name_for", "prose token"):
            assert isinstance(found, str), (kind, key)
        elif kind == "DM partial":
            assert found is not None and ref in {e.ref for e in found.hits}, key  # type: ignore[attr-defined]
        else:
            assert found.ref == ref, (kind, key)  # type: ignore[attr-defined]


Medians = dict[str, tuple[float, float]]


def medians(sides: Sequence[dict[str, Case]]) -> tuple[Medians, Medians]:
    """Per kind and side: (cold median, warm median) in ns, the sides measured in turn."""
    out: tuple[Medians, Medians] = ({}, {})
    for kind in sides[0]:
        runs: list[list[list[int]]] = [[], []]
        measured: list[list[Any]] = []
        for side in sides:
            lookup, keys, _ = side[kind]
            split = min(WARMUP, len(keys) // 5)
            timed(lookup, keys[:split])
            measured.append(keys[split:])
        for _ in range(1 + PASSES):
            for i, side in enumerate(sides):
                runs[i].append(timed(side[kind][0], measured[i]))
        for i, side in enumerate(sides):
            cold = statistics.median(runs[i][0])
            warm = statistics.median(min(t) for t in zip(*runs[i][1:], strict=True))
            out[i][kind] = (cold, warm)
            check(kind, side[kind])
    return out


def main() -> None:
    data = build(BATCHES)
    big = ChannelRegistry()
    register_all(big, data)
    small_data = data[:1]
    small = ChannelRegistry()
    register_all(small, small_data)
    dm_names = big.statistics().dm_names
    t0 = time.perf_counter_ns()
    big.names.match("@zzz-build-the-partial-table")
    build_ms = (time.perf_counter_ns() - t0) / 1e6
    small.names.match("@zzz-build-the-partial-table")
    lo, hi = medians((cases(small, small_data), cases(big, data)))

    print(
        f"name resolution at {BATCH:,} and {BATCHES * BATCH:,} channels: medians over up to "
        f"{LOOKUPS} different names per kind (single calls, perf_counter_ns;"
    )
    print(f"warm = each name's fastest of {PASSES} passes, cold = each name's first lookup)")
    print(
        f"  {'kind':<12} {'warm 1k':>8} {'warm 100k':>9} {'ratio':>6}   "
        f"{'cold 1k':>8} {'cold 100k':>9} {'ratio':>6}  targets (µs; warm)"
    )
    for kind in hi:
        (c_lo, w_lo), (c_hi, w_hi) = lo[kind], hi[kind]
        ratio, cold_ratio = w_hi / w_lo, c_hi / c_lo
        checks: list[str] = []
        if kind in FAST:
            checks.append(f"<={MEDIAN_TARGET_US} {mark(w_hi / 1e3 <= MEDIAN_TARGET_US)}")
        if kind in TARGETED:
            checks.append(f"ratio<={RATIO_TARGET}x {mark(ratio <= RATIO_TARGET)}")
        print(
            f"  {kind:<12} {w_lo / 1e3:8.3f} {w_hi / 1e3:9.3f} {ratio:5.2f}x   "
            f"{c_lo / 1e3:8.3f} {c_hi / 1e3:9.3f} {cold_ratio:5.2f}x  "
            f"{', '.join(checks) or '(for scale)'}"
        )
    print(
        f"  partial-DM table built on the first partial lookup: {build_ms:.1f} ms for "
        f"{dm_names:,} DM names (once; kept up to date after that)"
    )


if __name__ == "__main__":
    main()
