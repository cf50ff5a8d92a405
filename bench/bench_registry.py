"""Benchmark of the channel registry: register time, memory per channel, lookup medians.

Run: ``python bench/bench_registry.py``. Every figure below comes from this one run:

- register 100,000 channels in 100 batches of 1,000 through ``ChannelRegistry.register``
  (descriptors built beforehand, outside the timing), best of three runs from an empty
  registry, once with the cyclic garbage collector running and once paused during the timed
  loop (as :mod:`timeit` does by default); a dict insert per channel is timed for scale;
- memory per channel with tracemalloc: the registry plus the descriptors it retains (a second,
  untimed build, because tracing slows allocation);
- the median of single lookups by id, qualified name, raw id, label and DM name, each over
  up to 800 different names (80 DM names at 1k), at 1,000 and at 100,000 channels, measured
  in alternation, and their ratio: *warm* (each name's fastest of five passes, the steady
  cost of the structure) and *cold* (each name's first lookup, which adds the cache misses of
  a larger registry). The targets are checked on the warm figures.

The data is shaped like a Discord fleet: four connections, 100 guilds, ids
``discord:<guild>:<channel>`` with snowflakes, labels ``#topic-n (Guild Name)``, addresses
with the raw ``channelId``, and one DM in ten with recipient metadata.
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from switchboard.channels import ChannelRegistry

BATCHES = 100
BATCH = 1_000
SERVERS = ("discord-main", "discord-eu", "discord-us", "discord-labs")
TOPICS = ("general", "random", "dev", "ops", "announcements", "help", "music", "art")
LOOKUPS = 800  # distinct names measured per kind; a 1k registry has 900 plain channels
WARMUP = 100
PASSES = 5

REGISTER_TARGET_S = 0.3
MEMORY_TARGET_B = 1024
MEDIAN_TARGET_US = 3.0
RATIO_TARGET = 1.5


@dataclass(frozen=True, slots=True)
class Descriptor:
    """A channel descriptor as the protocol layer would hand it over."""

    id: str
    type: str
    label: str
    direction: str
    address: Mapping[str, object] | None
    metadata: Mapping[str, object] | None
    initially_open: bool | None


Batch = tuple[str, list[Descriptor]]


def build(batches: int, seed: int = 7) -> list[Batch]:
    """``batches`` batches of ``BATCH`` descriptors, one guild per batch."""
    rng = random.Random(seed)
    out: list[Batch] = []
    for b in range(batches):
        server = SERVERS[b % len(SERVERS)]
        guild = 800_000_000_000_000_000 + b * 7_919
        guild_name = f"Guild {b}"
        items: list[Descriptor] = []
        for n in range(BATCH):
            snowflake = str(1_100_000_000_000_000_000 + rng.getrandbits(56))
            channel_id = f"discord:{guild}:{snowflake}"
            if n % 10 == 9:
                user = f"user{b}_{n}"
                items.append(
                    Descriptor(
                        channel_id,
                        "discord",
                        f"DM: {user}",
                        "bidirectional",
                        {"channelId": snowflake},
                        {"channelType": "dm", "recipientName": user, "recipientId": str(n)},
                        None,
                    )
                )
            else:
                label = f"#{TOPICS[n % len(TOPICS)]}-{n} ({guild_name})"
                items.append(
                    Descriptor(
                        channel_id,
                        "discord",
                        label,
                        "bidirectional",
                        {"channelId": snowflake},
                        None,
                        None,
                    )
                )
        out.append((server, items))
    return out


def register_all(registry: ChannelRegistry, data: Sequence[Batch]) -> None:
    for server, items in data:
        registry.register(server, items)


def lookup_times(lookup: Callable[[str], object], names: Sequence[str]) -> list[int]:
    """The time of ``lookup(name)`` for each name in turn, each call timed alone."""
    clock = time.perf_counter_ns
    samples: list[int] = []
    for name in names:
        t0 = clock()
        lookup(name)
        samples.append(clock() - t0)
    return samples


def raw_of(descriptor: Descriptor) -> str:
    assert descriptor.address is not None
    return str(descriptor.address["channelId"])


def lookup_names(
    registry: ChannelRegistry, data: Sequence[Batch]
) -> dict[str, tuple[Callable[[str], object], list[str]]]:
    """Per kind of name: the lookup and ``WARMUP + LOOKUPS`` distinct registered names."""
    rng = random.Random(11)
    descriptors = [(server, d) for server, items in data for d in items]
    picked = rng.sample(descriptors, len(descriptors))
    plain = [(s, d) for s, d in picked if not d.metadata][: WARMUP + LOOKUPS]
    dms = [(s, d) for s, d in picked if d.metadata][: WARMUP + LOOKUPS]
    return {
        "id": (registry.by_id, [d.id for _, d in plain]),
        "qualified": (registry.by_qualified_name, [f"{s}:{d.id}" for s, d in plain]),
        "raw id": (registry.by_raw_id, [raw_of(d) for _, d in plain]),
        "label": (registry.by_label, [d.label.upper() for _, d in plain]),
        "DM name": (registry.by_dm_name, [f"@{d.label[4:]}" for _, d in dms]),
    }


Medians = dict[str, tuple[float, float]]


def lookup_medians(
    small: ChannelRegistry, small_data: Sequence[Batch], big: ChannelRegistry, data: Sequence[Batch]
) -> tuple[Medians, Medians]:
    """Per kind of name and registry: (cold median, warm median) over distinct names.

    Cold: the first lookup of each name (after a warm-up on other names, so the interpreter's
    specialized code is warm but the measured keys are not). Warm: the same names again,
    ``PASSES`` times; each name's fastest pass counts, which drops preemption noise. The two
    registries are measured in alternation, so both see the same machine load. The warm figure
    is the steady-state cost of the structure; the cold one adds the cache misses of touching
    a key for the first time, which grow with the memory the registry spans.
    """
    sides = (lookup_names(small, small_data), lookup_names(big, data))
    out: tuple[Medians, Medians] = ({}, {})
    for kind in sides[0]:
        runs: list[list[list[int]]] = [[], []]
        measured: list[list[str]] = []
        for names in sides:
            lookup, keys = names[kind]
            split = min(WARMUP, len(keys) // 5)
            lookup_times(lookup, keys[:split])
            measured.append(keys[split:])
        for _ in range(1 + PASSES):
            for side, names in enumerate(sides):
                runs[side].append(lookup_times(names[kind][0], measured[side]))
        for side, names in enumerate(sides):
            cold = statistics.median(runs[side][0])
            warm = statistics.median(min(t) for t in zip(*runs[side][1:], strict=True))
            out[side][kind] = (cold, warm)
            lookup = names[kind][0]
            for key in names[kind][1]:  # checked last, so the cold lookups were the first
                found = lookup(key)
                assert isinstance(found, tuple), kind
                assert len(found) == 1, f"{kind}: {key!r}"
    return out


def timed_register(data: Sequence[Batch], *, pause_gc: bool) -> tuple[float, ChannelRegistry]:
    """Seconds to register ``data`` into an empty registry, and the registry.

    With ``pause_gc`` the cyclic collector is off during the timed loop, as :mod:`timeit`
    does by default; without it, the collector runs as it would in a live process (its full
    collections then also traverse the pre-built descriptors).
    """
    registry = ChannelRegistry()
    elapsed = seconds_of(lambda: register_all(registry, data), pause_gc=pause_gc)
    assert len(registry) == BATCHES * BATCH
    return elapsed, registry


def seconds_of(work: Callable[[], object], *, pause_gc: bool = True) -> float:
    """Seconds ``work()`` takes, after a full collection, with the collector paused meanwhile
    when ``pause_gc``."""
    gc.collect()
    if pause_gc:
        gc.disable()
    try:
        t0 = time.perf_counter_ns()
        work()
        return (time.perf_counter_ns() - t0) / 1e9
    finally:
        gc.enable()


def reference_ms(data: Sequence[Batch]) -> float:
    """For scale: milliseconds to insert every descriptor into one dict by id (best of 3)."""
    best = float("inf")
    for _ in range(3):
        table: dict[str, Descriptor] = {}
        t0 = time.perf_counter_ns()
        for _server, items in data:
            for descriptor in items:
                table[descriptor.id] = descriptor
        best = min(best, (time.perf_counter_ns() - t0) / 1e6)
    return best


def memory_per_channel() -> tuple[float, float]:
    """Bytes per channel: (descriptors alone, registry + descriptors it retains)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    data = build(BATCHES)
    with_lists = tracemalloc.get_traced_memory()[0]
    list_bytes = sys.getsizeof(data) + sum(sys.getsizeof(items) for _, items in data)
    registry = ChannelRegistry()
    register_all(registry, data)
    del data
    gc.collect()
    total = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    count = len(registry)
    return (with_lists - base - list_bytes) / count, total / count


def mark(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def main() -> None:
    data = build(BATCHES)
    reference = reference_ms(data)
    runs: dict[bool, list[float]] = {False: [], True: []}
    big: ChannelRegistry | None = None
    for _ in range(3):  # independent runs, each from an empty registry, alternating modes
        for pause_gc in (False, True):
            seconds, registry = timed_register(data, pause_gc=pause_gc)
            runs[pause_gc].append(seconds)
            big = registry
    assert big is not None
    small_data = data[:1]
    small = ChannelRegistry()
    register_all(small, small_data)
    small_medians, big_medians = lookup_medians(small, small_data, big, data)
    del big, data
    descriptor_b, total_b = memory_per_channel()

    print(f"register {BATCHES * BATCH:,} channels in {BATCHES} batches of {BATCH:,} (best of 3)")
    print(f"  for scale: one dict insert per channel takes {reference:6.1f} ms on this machine")
    for pause_gc, label in ((False, "gc running"), (True, "gc paused (timeit)")):
        best = min(runs[pause_gc])
        print(
            f"  time, {label:<18} {best:7.3f} s   target <= {REGISTER_TARGET_S} s: "
            f"{mark(best <= REGISTER_TARGET_S)}"
        )
    print(f"  descriptors alone       {descriptor_b:8.0f} B/channel")
    print(
        f"  registry + descriptors  {total_b:8.0f} B/channel   target <= {MEMORY_TARGET_B} B: "
        f"{mark(total_b <= MEMORY_TARGET_B)}"
    )
    print()
    print(
        f"lookup medians over up to {LOOKUPS} distinct names per kind (single calls, "
        f"perf_counter_ns; warm = fastest of {PASSES} passes, cold = first lookup of each name)"
    )
    print(
        f"  {'kind':<10} {'warm 1k':>8} {'warm 100k':>9} {'ratio':>6}   "
        f"{'cold 1k':>8} {'cold 100k':>9} {'ratio':>6}  targets (µs; warm)"
    )
    for kind in big_medians:
        (c_lo, w_lo), (c_hi, w_hi) = small_medians[kind], big_medians[kind]
        ratio, cold_ratio = w_hi / w_lo, c_hi / c_lo
        checks = [f"ratio<={RATIO_TARGET}x {mark(ratio <= RATIO_TARGET)}"]
        if kind in ("id", "qualified"):
            checks.insert(0, f"<={MEDIAN_TARGET_US} {mark(w_hi / 1e3 <= MEDIAN_TARGET_US)}")
        print(
            f"  {kind:<10} {w_lo / 1e3:8.3f} {w_hi / 1e3:9.3f} {ratio:5.2f}x   "
            f"{c_lo / 1e3:8.3f} {c_hi / 1e3:9.3f} {cold_ratio:5.2f}x  {', '.join(checks)}"
        )


if __name__ == "__main__":
    main()
