"""Benchmark of the ``channels/register`` path's steps, before and after issue #14 item 4.

Run: ``python bench/bench_register_path.py``. In ONE run, alternating, CPU seconds, best of 5
with the cyclic collector paused:

- the registry: the bulk path (``ChannelRegistry.register``) against the path as it was, a
  per-item loop building one ``ItemResult`` per item and storing the descriptors one by one
  (kept as ``ChannelIndex._register_each``, the fallback of the bulk path), on
  ``bench_registry.py``'s Discord-shaped data (100 batches of 1,000) and on
  ``bench_ingest.py``'s plain descriptors (one batch of 100,000);
- validation of 100,000 plain descriptors: the pydantic model over the list
  (``validate_descriptors``) against ``fast_descriptors``.

It prints each pair and its ratio. The round trip through ``switchboard run`` is
``python bench/bench_ingest.py --register-only``.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).parent))

import bench_registry
from ingest_connector import channel
from switchboard.channels import (
    ChannelRef,
    ChannelRegistry,
    DescriptorLike,
    ItemResult,
    Rejected,
)
from switchboard.channels.records import INVALID_ID
from switchboard.protocol import fast_descriptors, validate_descriptors

__all__ = ["main"]

Batches = Sequence[tuple[str, Sequence[Any]]]


def _as_before(registry: ChannelRegistry, server_id: str, items: Sequence[Any]) -> object:
    """The registration path as it was: one loop over the items, one store per descriptor."""
    results: list[ItemResult] = []
    accepted: list[DescriptorLike] = []
    for item in items:
        if isinstance(item, Rejected):
            results.append(ItemResult(item.id or "", False, item.reason))
            continue
        channel_id = item.id
        if type(channel_id) is not str or not channel_id:
            results.append(ItemResult("", False, INVALID_ID))
            continue
        results.append(ItemResult(channel_id, True))
        accepted.append(item)
    first = registry._serial + 1
    registry._serial += len(accepted)
    registry._index._register_each(server_id, accepted, first)
    # the path as it was also made a ref per channel for its answer
    added = [ChannelRef(server_id, item.id) for item in accepted]
    return tuple(results), tuple(dict.fromkeys(added))


def _now(registry: ChannelRegistry, server_id: str, items: Sequence[Any]) -> object:
    return registry.register(server_id, items)


def _cpu(work: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        work()
        return time.process_time() - start
    finally:
        gc.enable()


def _registry_pair(batches: Batches) -> tuple[float, float]:
    def run(step: Callable[[ChannelRegistry, str, Sequence[Any]], object]) -> Callable[[], None]:
        def work() -> None:
            registry = ChannelRegistry()
            for server_id, items in batches:
                step(registry, server_id, items)

        return work

    before: list[float] = []
    after: list[float] = []
    for _ in range(5):
        before.append(_cpu(run(_as_before)))
        after.append(_cpu(run(_now)))
    return min(before), min(after)


def main() -> int:
    raw = orjson.loads(orjson.dumps([channel(i) for i in range(100_000)]))
    plain = fast_descriptors(raw)[0]
    cases: list[tuple[str, Batches]] = [
        ("registry, bench_registry data, 100 x 1,000", bench_registry.build(100)),
        ("registry, plain descriptors, 1 x 100,000", [("bench", plain)]),
    ]
    for name, batches in cases:
        before, after = _registry_pair(batches)
        print(
            f"{name:46} before {before * 1e3:6.0f} ms  after {after * 1e3:6.0f} ms  "
            f"ratio {after / before:.2f}"
        )
    model: list[float] = []
    fast: list[float] = []
    for _ in range(5):
        model.append(_cpu(lambda: validate_descriptors(raw)))
        fast.append(_cpu(lambda: fast_descriptors(raw)))
    print(
        f"{'validation, 100,000 plain descriptors':46} model  {min(model) * 1e3:6.0f} ms  "
        f"fast  {min(fast) * 1e3:6.0f} ms  ratio {min(fast) / min(model):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
