"""Benchmark of cluster mode: how the cost of a message scales with the number of instances.

On a 2-core machine the instances, PostgreSQL, NATS and the load share the CPU, so this shows
the *shape* of scaling, not a speed-up. Every figure comes from real ``switchboard run``
processes on one fresh PostgreSQL database and the NATS server, fed by the fake platform of
the fault tests (tests/cluster/platform_connector.py), and CPU is read from ``/proc``.

* **Owner cost (T1)**: N = 1, 2, 4 instances with N connectors, each at the same rate; the CPU
  an owner spends per message it ingests (its own process, connectors not counted). Gate:
  N=4 at most 1.15x N=1: being one of many costs an owner nothing that grows with N.
* **Tail cost (T2)**: in the same runs, one more instance that owns no connector (it joins
  last; hysteresis keeps connectors where they are) with an agent session attached: its CPU
  per cluster message. By default the agent is a *bystander* (``--tail-agent bystander``: a
  second roster agent takes the untargeted traffic), so the figure is what following the
  cluster costs: the head hints, the reads, decoding and routing every batch. Gate: at most
  5 µs, flat in N. ``--tail-agent recipient`` has every message pushed to the agent (delivery
  on top); ``none`` attaches no session.

Every CPU figure is the loaded window's less an idle window of the same length (connectors
paused with SIGSTOP): what an instance spends per second anyway (heartbeats, renewals, the 1 s
polls) is not a cost per message. CPU is the scheduler's on-CPU time of every thread
(``/proc/PID/task/*/schedstat``, ns), or clock ticks where schedstats are missing.
* **Pinned (T4)**: N=1 against N=2 with each instance pinned to a core of its own
  (``taskset``), connectors sending as fast as answered: aggregate messages a second, and the
  CPU PostgreSQL's own backends took per message (their ``/proc`` entries).

The tail is measured twice: at ``--rate`` requests of ``--batch`` messages, and at the same
messages a second in commits ``--batched`` times bigger (what a follower pays per announcement
and per read is shared by the messages of a commit, so the two show its shape).

Run: ``python bench/bench_cluster.py [--seconds 8] [--rate 40] [--batch 10] [--batched 10]
[--tail-agent bystander|recipient|none] [--head-interval S] [--quick]``; the gate's figures
(docs/operations.md, "The tail now"): ``--rate 12.5 --batch 100 --batched 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from psycopg import sql

from switchboard.cluster.pg.schema import connect, migrate

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = str(ROOT / "tests" / "cluster" / "platform_connector.py")
ADMIN = os.environ.get("SWITCHBOARD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
NATS = os.environ.get("SWITCHBOARD_TEST_NATS", "nats://127.0.0.1:4222")
TOKEN = "bench-agent-token-0123456789abcdefghijkl"
STATUS_TOKEN = "bench-operator-token-0123456789abcdefgh"
TICK = os.sysconf("SC_CLK_TCK")
SCHEDSTAT = Path("/proc/self/schedstat").exists()


def cpu(pid: int) -> float:
    """CPU seconds of ``pid`` so far (0 once it is gone): the scheduler's on-CPU time of each
    of its threads (``/proc/PID/task/*/schedstat``, in ns), or, without schedstats, user +
    system time in clock ticks (``/proc/PID/stat``)."""
    if SCHEDSTAT:
        total = 0
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            return 0.0
        for task in tasks:
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended meanwhile
        return total / 1e9
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Run:
    """One cluster on a fresh database: instances, their connectors, the platform files."""

    def __init__(
        self,
        folder: Path,
        connectors: int,
        rate: float,
        batch: int,
        bystander: bool = False,
        head_interval: float | None = None,
    ) -> None:
        self.folder = folder
        self.head_interval = head_interval
        self.bystander = bystander
        self.name = f"sbbench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.name)))
        self.url = ADMIN.rsplit("/", 1)[0] + "/" + self.name
        with connect(self.url) as conn:
            migrate(conn)
        self.prefix = f"bench{uuid.uuid4().hex[:8]}"
        self.sids = [f"c{i + 1}" for i in range(connectors)]
        self.rate, self.batch = rate, batch
        (folder / "platform").mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}

    def config(self, name: str, port: int) -> Path:
        q = lambda v: '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
        text = f'log_level = "WARNING"\n[store]\nbackend = "postgres"\nurl = {q(self.url)}\n'
        text += f"[cluster]\nnats_url = {q(NATS)}\ninstance_id = {q(name)}\nlease_ttl = 3.0\n"
        text += f"subject_prefix = {q(self.prefix)}\n"
        if self.head_interval is not None:
            text += f"head_interval = {self.head_interval}\n"
        text += f'[agent]\ntransport = "http"\nhost = "127.0.0.1"\nport = {port}\n'
        text += f"[status]\ntoken = {q(STATUS_TOKEN)}\n"
        text += f'[[agents]]\nhandle = "@reader"\ntoken = {q(TOKEN)}\n'
        if self.bystander:
            # Untargeted traffic goes to @sink (never attached): @reader, attached on the tail,
            # is routed nothing, so its instance reads, decodes and routes every batch and
            # pushes none (what following the cluster costs, apart from delivery).
            text += f'[[agents]]\nhandle = "@sink"\ntoken = {q(TOKEN[::-1])}\n'
            text += 'roles = ["receives_untargeted", "default_delivery"]\n'
        for sid in self.sids:
            argv = [
                sys.executable,
                PLATFORM,
                sid,
                str(self.folder / "platform"),
                self.rate,
                self.batch,
            ]
            text += f"[[connectors]]\nid = {q(sid)}\ncommand = [{', '.join(q(a) for a in argv)}]\n"
        path = self.folder / f"{name}.toml"
        path.write_text(text)
        return path

    def start(self, name: str, core: int | None = None) -> None:
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "switchboard",
            "run",
            "--config",
            str(self.config(name, port)),
        ]
        if core is not None:
            argv = ["taskset", "-c", str(core), *argv]
        self.ports[name] = port
        self.procs[name] = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / f"{name}.log", "ab"),  # noqa: SIM115
            start_new_session=True,
        )

    def owners(self) -> dict[str, str]:
        with psycopg.connect(self.url) as conn:
            rows = conn.execute(
                "SELECT server_id, owner FROM connector_leases"
                " WHERE owner IS NOT NULL AND expires_at > now()"
            ).fetchall()
        return {r[0]: r[1] for r in rows if r[0] in self.sids}

    def acked(self) -> dict[str, int]:
        out = {}
        for sid in self.sids:
            path = self.folder / "platform" / f"{sid}.acked"
            out[sid] = path.read_text().count("\n") if path.exists() else 0
        return out

    def backends(self) -> list[int]:
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.name,)
            ).fetchall()
        return [int(r[0]) for r in rows]

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )


async def until(check: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        await asyncio.sleep(0.1)


async def attached(port: int, stop: asyncio.Event) -> None:
    """An agent session attached to the tail instance (it lists its tools, then idles)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with (
            httpx2.AsyncClient(timeout=30, headers=headers) as http,
            Client(
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                mode="legacy",
            ) as client,
        ):
            await client.list_tools()
            await stop.wait()
    except* anyio.BrokenResourceError:
        pass  # the SDK's client closing while an answer is on its way: not measured here


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def window_cpu(pids: dict[str, int], backends: list[int]) -> tuple[dict[str, float], float]:
    return {name: cpu(pid) for name, pid in pids.items()}, sum(cpu(pid) for pid in backends)


async def measure(
    n: int,
    seconds: float,
    rate: float,
    batch: int,
    *,
    tail: bool,
    pinned: bool,
    tail_agent: str = "recipient",
    head_interval: float | None = None,
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="bench_cluster_"))
    run = Run(
        folder, n, rate, batch, bystander=tail_agent == "bystander", head_interval=head_interval
    )
    try:
        names = [f"sb-{i + 1}" for i in range(n)]
        for i, name in enumerate(names):
            run.start(name, core=i % 2 if pinned else None)
        await until(lambda: len(run.owners()) == n, 90, "every connector owned")
        await until(lambda: all(v > 0 for v in run.acked().values()), 60, "every one sending")
        stop = asyncio.Event()
        agent: asyncio.Task[None] | None = None
        if tail:
            run.start("tail")
            await until(lambda: "tail" in run.ports and _answers(run.ports["tail"]), 60, "tail up")
            if tail_agent != "none":
                agent = asyncio.create_task(attached(run.ports["tail"], stop))
        await asyncio.sleep(2)  # settle: the agent attached, connectors at their pace
        owners = run.owners()
        pids = {name: proc.pid for name, proc in run.procs.items()}
        senders = [c for pid in pids.values() for c in children(pid)]
        backends = run.backends()
        # The idle window (connectors paused): what every process spends per second anyway
        # (heartbeats, renewals, polls), taken off the loaded window's figures.
        for pid in senders:
            os.kill(pid, signal.SIGSTOP)
        await asyncio.sleep(1)
        idle0, pg_idle0 = window_cpu(pids, backends)
        await asyncio.sleep(seconds)  # the idle window
        idle1, pg_idle1 = window_cpu(pids, backends)
        for pid in senders:
            os.kill(pid, signal.SIGCONT)
        await asyncio.sleep(1)
        cpu0, pg0 = window_cpu(pids, backends)
        acked0 = run.acked()
        t0 = time.monotonic()
        await asyncio.sleep(seconds)  # the measured window
        elapsed = time.monotonic() - t0
        acked1 = run.acked()
        cpu1, pg1 = window_cpu(pids, backends)
        stop.set()
        if agent is not None:
            await asyncio.wait_for(agent, 30)
        msgs = {sid: acked1[sid] - acked0[sid] for sid in run.sids}
        total = sum(msgs.values())
        owner_msgs: dict[str, int] = {}
        for sid, owner in owners.items():
            owner_msgs[owner] = owner_msgs.get(owner, 0) + msgs[sid]

        def spent(name: str) -> float:
            """CPU seconds for the messages: the loaded window less the idle one."""
            return (cpu1[name] - cpu0[name]) - (idle1[name] - idle0[name])

        owner_cpu = sum(spent(o) for o in owner_msgs)
        return {
            "n": n,
            "total": total,
            "rate": total / elapsed,
            "owner_us": owner_cpu / max(1, sum(owner_msgs.values())) * 1e6,
            "tail_us": spent("tail") / max(1, total) * 1e6 if tail else None,
            "tail_idle": (idle1["tail"] - idle0["tail"]) / seconds if tail else None,
            # Without schedstats /proc counts CPU in clock ticks: a figure per message is then
            # known to within two ticks (the loaded window's and the idle one's).
            "resolution_us": 0.0 if SCHEDSTAT else 2 / TICK / max(1, total) * 1e6,
            "pg_us": ((pg1 - pg0) - (pg_idle1 - pg_idle0)) / max(1, total) * 1e6,
            "owners": {o: owner_msgs[o] for o in sorted(owner_msgs)},
        }
    finally:
        run.close()
        shutil.rmtree(folder, ignore_errors=True)


def _within(row: dict[str, Any]) -> str:
    """How well a figure per message is known, when CPU is counted in clock ticks."""
    return f" ± {row['resolution_us']:.1f} (clock ticks)" if row["resolution_us"] else ""


def _answers(port: int) -> bool:
    try:
        answer = httpx2.get(
            f"http://127.0.0.1:{port}/readyz",
            timeout=1,
            headers={"Authorization": f"Bearer {STATUS_TOKEN}"},
        )
        return answer.status_code in (200, 503)
    except httpx2.HTTPError:
        return False


async def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rate", type=float, default=40.0, help="requests a second per connector")
    parser.add_argument("--batch", type=int, default=10, help="messages a request")
    parser.add_argument("--quick", action="store_true", help="a short run (the smoke test)")
    parser.add_argument(
        "--tail-agent",
        choices=("bystander", "recipient", "none"),
        default="bystander",
        help="the tail's agent session: routed nothing (bystander: the gate's figure), routed "
        "every message (recipient: delivery included), or no session (none)",
    )
    parser.add_argument("--idle-tail", action="store_true", help="the same as --tail-agent none")
    parser.add_argument(
        "--head-interval",
        type=float,
        default=None,
        help="[cluster] head_interval of every instance (default: the config's default)",
    )
    parser.add_argument(
        "--batched",
        type=int,
        default=10,
        help="also run the tail at rate/B requests of batch x B messages (1: not)",
    )
    args = parser.parse_args(argv)
    tail_agent = "none" if args.idle_tail else args.tail_agent
    who = {
        "none": "no agent session",
        "bystander": "an agent attached and routed nothing",
        "recipient": "an agent attached and routed every message",
    }[tail_agent]
    seconds = 2.0 if args.quick else args.seconds
    sizes = (1, 2) if args.quick else (1, 2, 4)
    print(
        f"bench_cluster: {args.rate:g} requests/s x {args.batch} messages per connector, "
        f"{seconds:g} s windows, {os.cpu_count()} cores"
    )
    tails: list[tuple[float, int, list[dict[str, Any]]]] = []
    # The same messages a second, in commits of ``batch`` and of ``batch x factor``: what an
    # instance pays per announcement and per read is shared by the messages of one commit.
    shapes = [(args.rate, args.batch)]
    if args.batched > 1:
        shapes.append((args.rate / args.batched, args.batch * args.batched))
    for shape, (rate, batch) in enumerate(shapes):
        rows = []
        for n in sizes if shape == 0 or not args.quick else sizes[:1]:
            row = await measure(
                n,
                seconds,
                rate,
                batch,
                tail=True,
                pinned=False,
                tail_agent=tail_agent,
                head_interval=args.head_interval,
            )
            rows.append(row)
            print(
                f"{rate:g} x {batch} N={n}: {row['total']} messages ({row['rate']:.0f}/s); owner "
                f"CPU {row['owner_us']:.1f} µs/message; tail instance ({who}, no connector) "
                f"{row['tail_us']:.2f}{_within(row)} µs/cluster message (idle "
                f"{row['tail_idle'] * 100:.1f}% of a core); PostgreSQL "
                f"{row['pg_us']:.1f} µs/message; messages per owner {row['owners']}"
            )
        tails.append((rate, batch, rows))
        if shape == 0:
            base = rows[0]
            for row in rows[1:]:
                print(
                    f"ratio owner CPU per message N={row['n']} / N=1: "
                    f"{row['owner_us'] / base['owner_us']:.2f} (gate at N=4: <= 1.15)"
                )
    for rate, batch, rows in tails:
        print(
            f"tail cost per cluster message by N ({rate:g} requests/s x {batch} messages a "
            "connector, ~1 commit a request): "
            + ", ".join(f"N={r['n']} {r['tail_us']:.1f}{_within(r)} µs" for r in rows)
            + " (gate: <= 5 µs, flat)"
        )
    if shutil.which("taskset") is not None:
        pinned = []
        for n in (1, 2):
            row = await measure(n, seconds, 0.0, args.batch * 5, tail=False, pinned=True)
            pinned.append(row)
            print(
                f"pinned N={n} (taskset, one core each, as fast as answered): "
                f"{row['rate']:.0f} messages/s aggregate; owner CPU {row['owner_us']:.1f} "
                f"µs/message; PostgreSQL {row['pg_us']:.1f} µs/message"
            )
        print(f"ratio pinned aggregate N=2 / N=1: {pinned[1]['rate'] / pinned[0]['rate']:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
