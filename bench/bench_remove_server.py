"""Benchmark: dropping a connection's channels at once (``ChannelRegistry.remove_server``).

Run: ``python bench/bench_remove_server.py [--rounds N]``. When a connector exits, or a
manifest change revokes its ``channels.register``, the host drops every channel it registered
in one call on the event loop. This bench times that call against dropping the same channels
through ``ChannelRegistry.change(removed=...)``, which unindexes them one at a time, in
alternating rounds from freshly built registries (the collector paused while timed, as
:mod:`timeit` does), and prints medians and their ratio for two cases:

- *one of four*: the Discord-shaped fleet of ``bench_registry.py`` (100,000 channels over four
  connections, labels ``#topic-n (Guild n)`` whose bare keys many channels share, one DM in
  ten), one connection of 25,000 channels dropped while the other three stay;
- *the last*: one connection of 100,000 plain channels (ids ``bench:cN``, labels ``#cN``, as
  ``bench/ingest_connector.py`` registers them), dropped when it is the only one.

Both paths must leave the same registry behind; the bench checks it on every round.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence

from bench_registry import SERVERS, Batch, Descriptor, build, register_all, seconds_of
from switchboard.channels import ChannelRegistry

Drop = Callable[[ChannelRegistry, str], object]


def plain_fleet(channels: int) -> list[Batch]:
    """One connection of ``channels`` plain channels, in batches of 1,000."""
    items = [
        Descriptor(f"bench:c{i}", "bench", f"#c{i}", "bidirectional", None, None, None)
        for i in range(channels)
    ]
    return [("bench", items[i : i + 1_000]) for i in range(0, channels, 1_000)]


def drop_at_once(registry: ChannelRegistry, server: str) -> object:
    return registry.remove_server(server)


def drop_one_by_one(registry: ChannelRegistry, server: str) -> object:
    ids = [entry.ref.channel_id for entry in registry.server_entries(server)]
    return registry.change(server, removed=ids)


def timed(data: Sequence[Batch], server: str, drop: Drop) -> tuple[float, list[object]]:
    """Seconds ``drop`` takes on a registry freshly filled with ``data``, and what is left."""
    registry = ChannelRegistry()
    register_all(registry, data)
    registry.index_labels()
    elapsed = seconds_of(lambda: drop(registry, server))
    left: list[object] = [registry.statistics()]
    left += [
        (e.ref, e.registration)
        for s in sorted(registry.servers())
        for e in registry.server_entries(s)
    ]
    assert registry.server_entries(server) == []
    return elapsed, left


def compare(name: str, data: Sequence[Batch], server: str, rounds: int) -> None:
    times: dict[str, list[float]] = {"at once": [], "one by one": []}
    for n in range(rounds):
        order = [("at once", drop_at_once), ("one by one", drop_one_by_one)]
        if n % 2:
            order.reverse()
        left: list[list[object]] = []
        for label, drop in order:
            seconds, rest = timed(data, server, drop)
            times[label].append(seconds)
            left.append(rest)
        assert left[0] == left[1], "the two paths left different registries"
    fast = statistics.median(times["at once"])
    slow = statistics.median(times["one by one"])
    dropped = sum(len(items) for s, items in data if s == server)
    print(
        f"{name}: {dropped:,} channels dropped; remove_server {fast * 1e3:.1f} ms "
        f"({min(times['at once']) * 1e3:.1f}-{max(times['at once']) * 1e3:.1f}), one by one "
        f"{slow * 1e3:.1f} ms ({min(times['one by one']) * 1e3:.1f}-"
        f"{max(times['one by one']) * 1e3:.1f}); ratio one by one / at once {slow / fast:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds per case")
    parser.add_argument("--quick", action="store_true", help="a small run for a smoke test")
    args = parser.parse_args()
    batches, channels = (8, 4_000) if args.quick else (100, 100_000)
    rounds = 1 if args.quick else args.rounds
    print(f"medians of {rounds} alternating round(s); the collector paused while timed")
    compare("one of four connections", build(batches), SERVERS[0], rounds)
    compare("the last connection", plain_fleet(channels), "bench", rounds)


if __name__ == "__main__":
    main()
