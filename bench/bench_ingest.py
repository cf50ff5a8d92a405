"""Benchmark of what users run: ``switchboard run`` ingesting from one stdio connector.

Measures, in ONE run, interleaved round by round (issue #14):

* incoming messages/s, 1 and 16 requests in flight: ``switchboard run --config FILE`` spawned
  as a user does (stdio connector, default settings, the store on disk in a temporary folder,
  the agent's stdio left open), against a minimal asyncio host of our own (stdlib ``json`` over
  the child's stdin/stdout, no validation, no storage). Both drive the same connector program,
  ``ingest_connector.py``: 100 channels, ~220 B messages in batches of 50. After each
  Switchboard round the SQLite file is opened and its messages counted: every one must be there.
  With ``MCPL_HARNESS_DIR`` naming a locally built mcpl-harness (the TypeScript reference host,
  built by hand, never committed), each round also runs that host on the same connector through
  our driver ``harness_driver.mjs`` (``node`` on PATH, or ``NODE``), and its row and ratios are
  printed too.
* confirmed publishes/s, 32 in flight: ``board.publisher.publish`` in process (as ``bench_host.py``
  does) against a bare asyncio loop sending the same ``channels/publish`` requests to the same
  connector over the same stdio transport. Each side runs in a fresh child process with the
  collector policy of ``switchboard run`` (see :func:`publishes_in_child`).
* registering 100,000 channels in one ``channels/register`` request, from the request leaving
  the connector to its result arriving, through ``switchboard run`` and the minimal host.

Medians and ranges of ``--rounds`` rounds, and the ratios. ``--soak SECONDS --rate N`` instead
runs ``switchboard run`` at a steady N msgs/s and prints its RSS and the batch round trip's p99
every 10 s. ``--stock-gc`` adds a Switchboard row with ``SWITCHBOARD_GC=stock`` (or runs the
soak that way). ``--quick`` is a small run for a smoke test.

Run: ``python bench/bench_ingest.py [--rounds 5] [--messages 200000] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baseline_loop import answer_everything

__all__ = ["main"]

HERE = Path(__file__).parent
CONNECTOR = str(HERE / "ingest_connector.py")
HARNESS_DRIVER = str(HERE / "harness_driver.mjs")
REFERENCE = "reference host"
BATCH = 50
CHANNELS = 100


async def _wait_file(path: Path, proc: asyncio.subprocess.Process, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            return path.read_text()
        if proc.returncode is not None:
            raise RuntimeError(f"the host exited ({proc.returncode}) before {path} was written")
        await asyncio.sleep(0.01)
    raise TimeoutError(f"{path} never appeared")


def _connector_argv(mode: str, out: Path, **opts: object) -> list[str]:
    argv = [sys.executable, CONNECTOR, mode, str(out)]
    for key, value in opts.items():
        argv += [f"--{key}", str(value)]
    return argv


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- the minimal host -----------------------------------------------------------------------


async def minimal_host(
    connector: list[str], out: Path, drive: Callable[..., Any] | None = None, timeout: float = 600
) -> tuple[dict[str, Any], float]:
    """Serve ``connector`` with a bare asyncio JSON-RPC loop (stdlib json, nothing checked or
    stored) until it writes ``out``; returns what it wrote and the host's CPU seconds."""
    proc = await asyncio.create_subprocess_exec(
        *connector, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 28
    )
    assert proc.stdin and proc.stdout
    w, r = proc.stdin, proc.stdout
    loop = asyncio.get_running_loop()
    answers: dict[Any, asyncio.Future[Any]] = {}
    registered = asyncio.Event()
    cpu0 = time.process_time()

    def send(obj: dict[str, Any]) -> None:
        w.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    async def read() -> None:
        await answer_everything(r, json.loads, send, answers, registered)

    async def call(i: Any, method: str, params: dict[str, Any]) -> Any:
        fut: asyncio.Future[Any] = loop.create_future()
        answers[i] = fut
        send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return await fut

    reading = asyncio.create_task(read())
    await call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    grant = ["channels.register", "channels.incoming", "channels.publish"]
    await call(2, "featureSets/update", {"effectiveCapabilities": grant})
    await registered.wait()
    if connector[2] == "incoming":
        await _wait_file(out.with_suffix(".start"), proc, timeout)
        cpu0 = time.process_time()
    result = json.loads(await _wait_file(out, proc, timeout))
    if drive is not None:
        result = await drive(call)
    cpu = time.process_time() - cpu0
    w.close()
    reading.cancel()
    try:
        await asyncio.wait_for(proc.wait(), 10)
    except TimeoutError:
        proc.kill()
        await proc.wait()
    return result, cpu


# -- switchboard run ------------------------------------------------------------------------


def _write_config(tmp: Path, connector: list[str], settings: str = "") -> Path:
    command = ", ".join(json.dumps(part) for part in connector)
    config = tmp / "switchboard.toml"
    config.write_text(
        f"[store]\npath = {json.dumps(str(tmp / 'store.sqlite'))}\n\n"
        f'[[connectors]]\nid = "bench"\ncommand = [{command}]\nrestart = false\n{settings}'
    )
    return config


def stored_messages(path: Path) -> int:
    """How many messages the store file holds."""
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT coalesce(sum(count), 0) FROM batches").fetchone()
    return int(count)


async def switchboard_run(
    tmp: Path,
    connector: list[str],
    out: Path,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    during: Callable[[int], Any] | None = None,
    settings: str = "",
) -> tuple[dict[str, Any], float, int]:
    """Spawn ``switchboard run`` serving ``connector`` until it writes ``out``; then stop it.

    ``settings`` are extra TOML lines of the connector's table (``max_channels = ...``).

    Returns what the connector wrote, the host's CPU seconds while the connector sent (for an
    ``incoming`` connector, from its start marker), and the messages found in the store.
    """
    config = _write_config(tmp, connector, settings)
    stderr = (tmp / "switchboard.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "switchboard",
        "run",
        "--config",
        str(config),
        stdin=asyncio.subprocess.PIPE,  # the agent's MCP stdio, open and idle
        stdout=asyncio.subprocess.DEVNULL,
        stderr=stderr,
        env={**os.environ, **(env or {})},
    )
    try:
        if during is not None:
            await during(proc.pid)
        start = out.with_suffix(".start")
        if connector[2] == "incoming":
            await _wait_file(start, proc, timeout)
        cpu0 = _cpu_seconds(proc.pid)
        text = await _wait_file(out, proc, timeout)
        cpu = _cpu_seconds(proc.pid) - cpu0
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.wait()
        stderr.close()
    return json.loads(text.splitlines()[-1]), cpu, stored_messages(tmp / "store.sqlite")


# -- the reference host (mcpl-harness) -----------------------------------------------------


def _harness_node(harness_dir: str) -> str:
    """The node binary to run the driver with, after checking the harness is built."""
    engine = Path(harness_dir) / "dist" / "src" / "session.js"
    if not engine.is_file():
        raise SystemExit(
            f"MCPL_HARNESS_DIR={harness_dir}: {engine} is missing; build the harness first"
        )
    node = os.environ.get("NODE") or shutil.which("node")
    if node is None:
        raise SystemExit("MCPL_HARNESS_DIR is set but node is not on PATH (or set NODE)")
    return node


async def reference_host(
    node: str, harness_dir: str, connector: list[str], out: Path, timeout: float = 600
) -> tuple[dict[str, Any], float]:
    """Serve ``connector`` with the mcpl-harness host engine (through ``harness_driver.mjs``)
    until it writes ``out``; returns what it wrote and the host's CPU seconds from the
    connector's start marker to ``out`` (the node process, all its threads)."""
    proc = await asyncio.create_subprocess_exec(
        node,
        HARNESS_DRIVER,
        str(out),
        "--",
        *connector,
        stdin=asyncio.subprocess.DEVNULL,
        env={**os.environ, "MCPL_HARNESS_DIR": harness_dir},
    )
    try:
        await _wait_file(out.with_suffix(".start"), proc, timeout)
        cpu0 = _cpu_seconds(proc.pid)
        text = await _wait_file(out, proc, timeout)
        await asyncio.wait_for(proc.wait(), 10)
        # The driver may exit (and be reaped) before /proc could be read again, so it writes
        # its own CPU time on the way out.
        usage = json.loads(Path(f"{out}.cpu").read_text())
        cpu = (usage["user"] + usage["system"]) / 1e6 - cpu0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return json.loads(text), cpu


# -- publishes ------------------------------------------------------------------------------


async def publishes_bare(tmp: Path, total: int, window: int) -> float:
    out = tmp / "pub-bare.json"

    async def drive(call: Callable[..., Any]) -> dict[str, Any]:
        next_id = [100]
        params = {
            "conversationId": "",
            "channelId": "bench:c0",
            "content": [{"type": "text", "text": "hello"}],
        }

        async def worker(n: int) -> None:
            for _ in range(n):
                next_id[0] += 1
                reply = await call(next_id[0], "channels/publish", params)
                assert reply["result"]["delivered"] is True

        started = time.perf_counter()
        await asyncio.gather(*(worker(total // window) for _ in range(window)))
        return {"rate": total // window * window / (time.perf_counter() - started)}

    result, _ = await minimal_host(
        _connector_argv("publish", out, channels=CHANNELS), out, drive=drive
    )
    return float(result["rate"])


async def publishes_switchboard(tmp: Path, total: int, window: int) -> float:
    import anyio

    from switchboard.app.board import Switchboard
    from switchboard.config import Config, ConnectorConfig, StoreConfig
    from switchboard.connections.session import SessionState
    from switchboard.refusals.outcome import PublishStatus
    from switchboard.runtime.logs import configure

    configure("INFO")
    out = tmp / "pub-sb.json"
    config = Config(
        connectors=[
            ConnectorConfig(
                id="bench",
                command=_connector_argv("publish", out, channels=CHANNELS),
                restart=False,
            )
        ],
        store=StoreConfig(path=str(tmp / "pub.sqlite")),
    )
    async with Switchboard.started(config) as board:
        deadline = time.monotonic() + 60
        while (
            not out.exists()
            or board.sessions.get("bench") is None
            or (board.sessions["bench"].state is not SessionState.READY)
        ):
            if time.monotonic() > deadline:
                raise TimeoutError("the publish connector never became ready")
            await anyio.sleep(0.005)
        per = total // window
        started = time.perf_counter()

        async def worker() -> None:
            for _ in range(per):
                outcome = await board.publisher.publish("bench:c0", "hello", server_id="bench")
                assert outcome.status is PublishStatus.DELIVERED, outcome

        async with anyio.create_task_group() as tg:
            for _ in range(window):
                tg.start_soon(worker)
        return per * window / (time.perf_counter() - started)


async def publishes_in_child(tmp: Path, side: str, total: int, window: int) -> float:
    """Publishes/s of ``side`` (``switchboard`` or ``bare``), measured in a fresh Python process.

    Each side gets a process of its own, with the collector policy ``switchboard run`` applies
    (:func:`switchboard.runtime.gcpolicy.apply_server_policy`), the same for both. Measured inside
    this long-lived bench process instead, both sides paid for its heap (every full collection
    walks what earlier rounds left) and Switchboard, which allocates more per publish, paid
    more: that read 0.31-0.40 where fresh processes read 0.45-0.59 on the same code.
    """
    argv = [sys.executable, __file__, "--publish-child", side, "--publishes", str(total)]
    argv += ["--window", str(window), "--child-dir", str(tmp)]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the {side} publish child exited {proc.returncode}")
    return float(out.decode().strip().splitlines()[-1])


async def _publish_child(args: argparse.Namespace) -> int:
    # Imported before the policy freezes the start-up heap, as ``switchboard run`` does.
    import switchboard.app  # noqa: F401
    from switchboard.runtime.gcpolicy import apply_server_policy

    apply_server_policy()
    run = publishes_switchboard if args.publish_child == "switchboard" else publishes_bare
    rate = await run(Path(args.child_dir), args.publishes, args.window)
    print(rate)
    return 0


# -- the run --------------------------------------------------------------------------------


def _fmt(values: list[float], unit: str = "") -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:,.0f}{unit}" if med >= 100 else f"{med:.3f}{unit}"
    lo, hi = min(values), max(values)
    if med >= 100:
        return f"{med:,.0f}{unit} ({lo:,.0f}-{hi:,.0f})"
    return f"{med:.3f}{unit} ({lo:.3f}-{hi:.3f})"


async def bench(args: argparse.Namespace) -> int:
    rows: dict[str, list[float]] = {}
    failures: list[str] = []

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    variants: list[tuple[str, dict[str, str]]] = [("switchboard", {})]
    if args.stock_gc:
        variants.append(("switchboard, stock gc", {"SWITCHBOARD_GC": "stock"}))
    harness_dir = os.environ.get("MCPL_HARNESS_DIR", "")
    node = _harness_node(harness_dir) if harness_dir and not args.register_only else ""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        n = 0

        def fresh() -> Path:
            nonlocal n
            n += 1
            sub = root / f"run{n}"
            sub.mkdir()
            return sub

        for rnd in range(args.rounds):
            for window in () if args.register_only else (1, 16):
                opts = {"messages": args.messages, "window": window, "channels": CHANNELS}
                sub = fresh()
                out = sub / "min.json"
                got, cpu = await minimal_host(_connector_argv("incoming", out, **opts), out)
                add(f"minimal W={window}", got["messages"] / got["seconds"])
                add(f"minimal cpu W={window}", cpu / got["messages"] * 1e6)
                add(f"minimal rtt W={window}", got["rtt_median_us"])
                for label, env in variants:
                    sub = fresh()
                    out = sub / "sb.json"
                    got, cpu, stored = await switchboard_run(
                        sub, _connector_argv("incoming", out, **opts), out, env=env
                    )
                    add(f"{label} W={window}", got["messages"] / got["seconds"])
                    add(f"{label} cpu W={window}", cpu / got["messages"] * 1e6)
                    add(f"{label} rtt W={window}", got["rtt_median_us"])
                    if stored != got["messages"] or got["accepted"] != got["messages"]:
                        failures.append(
                            f"round {rnd + 1}, {label} W={window}: sent {got['messages']}, "
                            f"accepted {got['accepted']}, stored {stored}"
                        )
                if node:
                    sub = fresh()
                    out = sub / "ref.json"
                    argv = _connector_argv("incoming", out, **opts)
                    got, cpu = await reference_host(node, harness_dir, argv, out)
                    add(f"{REFERENCE} W={window}", got["messages"] / got["seconds"])
                    add(f"{REFERENCE} cpu W={window}", cpu / got["messages"] * 1e6)
                    add(f"{REFERENCE} rtt W={window}", got["rtt_median_us"])
                    if got["accepted"] != got["messages"]:
                        failures.append(
                            f"round {rnd + 1}, {REFERENCE} W={window}: sent {got['messages']}, "
                            f"accepted {got['accepted']}"
                        )
            if args.ingest_only:
                print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
                continue
            if not args.register_only:
                sub = fresh()
                for side in ("bare", "switchboard"):
                    rate = await publishes_in_child(sub, side, args.publishes, 32)
                    add(f"publish {side}", rate)
            sub = fresh()
            opts = {"channels": args.register}
            out = sub / "reg-min.json"
            got, _ = await minimal_host(_connector_argv("register", out, **opts), out)
            add("register minimal", got["seconds"])
            out = sub / "reg-sb.json"
            # The default max_channels (10,000) would refuse 90% of them: raise it, as a user
            # registering that many channels must.
            got, _, _ = await switchboard_run(
                sub,
                _connector_argv("register", out, **opts),
                out,
                settings=f"max_channels = {max(args.register, 1)}\n",
            )
            add("register switchboard", got["seconds"])
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    if args.register_only:
        print(
            f"register {args.register:,} channels in one request (s), {args.rounds} round(s): "
            f"switchboard {_fmt(rows['register switchboard'])}, "
            f"minimal host {_fmt(rows['register minimal'])}"
        )
        return 0
    print(
        f"ingest: {args.messages:,} messages of ~220 B, batches of {BATCH}, {CHANNELS} channels, "
        f"{args.rounds} interleaved round(s); medians (range)"
    )
    print(f"{'host':28} {'W=1 msgs/s':>26} {'W=16 msgs/s':>26} {'rtt W=1':>16} {'cpu W=16':>20}")
    labels = ["minimal", *(v for v, _ in variants), *([REFERENCE] if node else [])]
    for label in labels:
        print(
            f"{label:28} {_fmt(rows[f'{label} W=1']):>26} {_fmt(rows[f'{label} W=16']):>26} "
            f"{_fmt(rows[f'{label} rtt W=1'], ' us'):>16} "
            f"{_fmt(rows[f'{label} cpu W=16'], ' us/msg'):>20}"
        )
    for window in (1, 16):
        sb = statistics.median(rows[f"switchboard W={window}"])
        base = statistics.median(rows[f"minimal W={window}"])
        print(f"ratio switchboard / minimal host at W={window}: {sb / base:.2f}")
        if args.stock_gc:
            stock = statistics.median(rows[f"switchboard, stock gc W={window}"])
            print(f"ratio switchboard / switchboard with stock gc at W={window}: {sb / stock:.2f}")
        if node:
            ref = statistics.median(rows[f"{REFERENCE} W={window}"])
            print(f"ratio switchboard / {REFERENCE} at W={window}: {sb / ref:.2f}")
    if args.ingest_only:
        return _store_check(failures)
    pub = statistics.median(rows["publish switchboard"])
    bare = statistics.median(rows["publish bare"])
    print(
        f"confirmed publishes/s, 32 in flight: switchboard {_fmt(rows['publish switchboard'])}, "
        f"bare loop {_fmt(rows['publish bare'])}"
    )
    print(f"ratio switchboard / bare loop for publishes: {pub / bare:.2f}")
    print(
        f"register {args.register:,} channels in one request (s): "
        f"switchboard {_fmt(rows['register switchboard'])}, "
        f"minimal host {_fmt(rows['register minimal'])}"
    )
    return _store_check(failures)


def _store_check(failures: list[str]) -> int:
    if failures:
        print("STORE CHECK FAILED: " + "; ".join(failures))
        return 1
    print("store check: every message accepted and stored, in every round")
    return 0


async def soak(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out = tmp / "soak.jsonl"
        argv = _connector_argv(
            "soak", out, seconds=args.soak, rate=args.rate, channels=CHANNELS, every=10
        )
        gc_note = " (SWITCHBOARD_GC=stock)" if args.stock_gc else ""
        rate = f"{args.rate:,.0f} msgs/s"
        print(f"soak: {args.soak:.0f} s at {rate} through switchboard run{gc_note}")
        print(f"{'t (s)':>6} {'RSS MB':>8} {'accepted':>10} {'p50 ms':>8} {'p99 ms':>8}")
        seen = [0]

        async def watch(pid: int) -> None:
            async def loop() -> None:
                started = time.monotonic()
                while True:
                    await asyncio.sleep(10)
                    lines = out.read_text().splitlines() if out.exists() else []
                    fresh = [json.loads(x) for x in lines[seen[0] :]]
                    seen[0] = len(lines)
                    last = fresh[-1] if fresh else {}
                    if last.get("done"):
                        return
                    p50, p99 = last.get("p50_ms"), last.get("p99_ms")
                    print(
                        f"{time.monotonic() - started:6.0f} {_rss_mb(pid):8.1f} "
                        f"{last.get('accepted', 0):>10,} "
                        f"{p50 if p50 is None else round(p50, 2)!s:>8} "
                        f"{p99 if p99 is None else round(p99, 2)!s:>8}",
                        flush=True,
                    )

            asyncio.get_running_loop().create_task(loop())

        deadline = args.soak + 120

        config_tmp = tmp / "sb"
        config_tmp.mkdir()
        env = {"SWITCHBOARD_GC": "stock"} if args.stock_gc else {}
        got, cpu, stored = await _soak_run(config_tmp, argv, out, watch, deadline, env)
        print(f"accepted {got['accepted']:,}, stored {stored:,}, host CPU {cpu:.1f} s")
        return 0 if stored == got["accepted"] else 1


async def _soak_run(
    tmp: Path,
    argv: list[str],
    out: Path,
    watch: Callable[[int], Any],
    timeout: float,
    env: dict[str, str],
) -> tuple[dict[str, Any], float, int]:
    config = _write_config(tmp, argv)
    stderr = (tmp / "switchboard.log").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "switchboard", "run", "--config", str(config),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=stderr,
        env={**os.environ, **env},
    )  # fmt: skip
    try:
        await watch(proc.pid)
        deadline = time.monotonic() + timeout
        while True:
            text = out.read_text() if out.exists() else ""
            if '"done"' in text:
                break
            if proc.returncode is not None or time.monotonic() > deadline:
                raise RuntimeError("the soak did not finish")
            await asyncio.sleep(0.5)
        cpu = _cpu_seconds(proc.pid)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.wait()
        stderr.close()
    return json.loads(text.splitlines()[-1]), cpu, stored_messages(tmp / "store.sqlite")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--publishes", type=int, default=60_000)
    p.add_argument("--register", type=int, default=100_000, help="channels registered at once")
    p.add_argument(
        "--stock-gc",
        action="store_true",
        help="also run switchboard with Python's stock collector settings (SWITCHBOARD_GC=stock)",
    )
    p.add_argument("--ingest-only", action="store_true", help="leave out publishes, register")
    p.add_argument("--register-only", action="store_true", help="only the registration rounds")
    p.add_argument("--quick", action="store_true", help="a small run for a smoke test")
    p.add_argument("--soak", type=float, metavar="SECONDS", help="a steady soak instead")
    p.add_argument("--rate", type=float, default=2000.0, help="msgs/s of the soak")
    p.add_argument("--publish-child", choices=["switchboard", "bare"], help=argparse.SUPPRESS)
    p.add_argument("--window", type=int, default=32, help=argparse.SUPPRESS)
    p.add_argument("--child-dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.publish_child:
        return asyncio.run(_publish_child(args))
    if args.quick:
        args.rounds, args.messages, args.publishes, args.register = 1, 2_500, 320, 1_000
    if args.soak:
        return asyncio.run(soak(args))
    return asyncio.run(bench(args))


if __name__ == "__main__":
    raise SystemExit(main())
