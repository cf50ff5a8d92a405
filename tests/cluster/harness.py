"""Real ``switchboard run`` instances of one cluster, for the end-to-end and fault tests.

Each instance is a process of its own (in its own process group, so ``kill -9`` of the group
takes its connector children with it, as the loss of a machine does) with the same connectors
and agents; only ``instance_id`` and the HTTP port differ. The connectors are the fake
platform of ``platform_connector.py``, whose acknowledgements are the oracle. Nothing is
mocked: the instances share a real PostgreSQL database and a real NATS server.
"""

from __future__ import annotations

import bisect
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import anyio
import httpx2
import orjson
import psycopg

from switchboard.cluster.pg.message_store import PgMessageStore
from switchboard.cluster.pg.schema import connect, migrate

PLATFORM = str(Path(__file__).with_name("platform_connector.py"))
#: The operator's token: with agents' tokens, the status surface on the agents' listener needs
#: one of its own.
STATUS_TOKEN = "operator-token-0123456789abcdefghijklmn"
OPERATOR = {"Authorization": f"Bearer {STATUS_TOKEN}"}


def _toml(value: object) -> str:
    """A TOML string or array (JSON's forms of them are TOML's too)."""
    return orjson.dumps(value).decode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def eventually(check: Callable[[], Any], within: float, what: str) -> Any:
    """Wait (polling, bounded) until ``check()`` gives something true; return it."""
    with anyio.fail_after(within):
        while True:
            value = check()
            if value:
                return value
            await anyio.sleep(0.05)
    raise AssertionError(what)  # pragma: no cover - fail_after raises first


async def eventually_async(check: Callable[[], Awaitable[Any]], within: float, what: str) -> Any:
    """:func:`eventually` for a check that has to await (an HTTP request)."""
    with anyio.fail_after(within):
        while True:
            value = await check()
            if value:
                return value
            await anyio.sleep(0.1)
    raise AssertionError(what)  # pragma: no cover - fail_after raises first


@dataclass
class Instance:
    name: str
    port: int
    config: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Cluster:
    """N instances of one cluster (see the module docstring)."""

    folder: Path
    database: str
    nats_url: str
    prefix: str
    connectors: Sequence[str]
    names: Sequence[str]
    ttl: float = 2.0
    rate: float = 25.0
    agents: Mapping[str, str] = field(default_factory=dict)
    #: Each agent's home channel (by handle), where it has one.
    homes: Mapping[str, str] = field(default_factory=dict)
    #: The agent with the role ``default_delivery`` (needed with several agents).
    default_delivery: str | None = None
    #: Each connector's ``request_timeout`` (None: the default).
    request_timeout: float | None = None
    #: ``[cluster] hold`` and ``settle`` (None: the defaults).
    hold: float | None = None
    settle: float | None = None
    instances: dict[str, Instance] = field(default_factory=dict)

    def __post_init__(self) -> None:
        with connect(self.database) as conn:
            migrate(conn)
        self.platform = self.folder / "platform"
        self.platform.mkdir(parents=True, exist_ok=True)
        for name in self.names:
            config = self.folder / f"{name}.toml"
            instance = Instance(name, free_port(), config, self.folder / f"{name}.log")
            config.write_text(self._config(instance))
            self.instances[name] = instance

    def _config(self, instance: Instance) -> str:
        q = _toml
        text = f'log_level = "INFO"\n[store]\nbackend = "postgres"\nurl = {q(self.database)}\n'
        text += (
            f"[cluster]\nnats_url = {q(self.nats_url)}\ninstance_id = {q(instance.name)}\n"
            f"lease_ttl = {self.ttl}\nsubject_prefix = {q(self.prefix)}\n"
        )
        if self.hold is not None:
            text += f"hold = {self.hold}\n"
        if self.settle is not None:
            text += f"settle = {self.settle}\n"
        text += f'[agent]\ntransport = "http"\nhost = "127.0.0.1"\nport = {instance.port}\n'
        text += f"[status]\ntoken = {q(STATUS_TOKEN)}\n"
        for handle, token in self.agents.items():
            text += f"[[agents]]\nhandle = {q(handle)}\ntoken = {q(token)}\n"
            if handle in self.homes:
                text += f"home = {q(self.homes[handle])}\n"
            if handle == self.default_delivery:
                text += 'roles = ["default_delivery"]\n'
        for sid in self.connectors:
            argv = [sys.executable, PLATFORM, sid, str(self.platform), str(self.rate)]
            text += (
                f"[[connectors]]\nid = {q(sid)}\ncommand = {q(argv)}\nrestart = true\n"
                "backoff_initial = 0.05\nbackoff_max = 0.2\n"
            )
            if self.request_timeout is not None:
                text += f"request_timeout = {self.request_timeout}\n"
        return text

    # -- processes

    def start(self, name: str) -> None:
        instance = self.instances[name]
        instance.log = open(instance.log_path, "ab")  # noqa: SIM115 - kept for the process
        instance.process = subprocess.Popen(
            [sys.executable, "-m", "switchboard", "run", "--config", str(instance.config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=instance.log,
            start_new_session=True,
        )

    def kill9(self, name: str) -> None:
        """The machine dies: the instance and its connectors, at once."""
        process = self.instances[name].process
        assert process is not None
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def signal(self, name: str, sig: signal.Signals) -> None:
        """Send ``sig`` to the instance's process only (not its connectors)."""
        process = self.instances[name].process
        assert process is not None
        os.kill(process.pid, sig)

    async def terminate(self, name: str, within: float = 20.0) -> None:
        process = self.instances[name].process
        assert process is not None
        process.send_signal(signal.SIGTERM)
        await eventually(lambda: process.poll() is not None, within, f"{name} to stop")

    def close(self) -> None:
        for instance in self.instances.values():
            process = instance.process
            if process is not None and process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGCONT)
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(10)
            if instance.log is not None:
                instance.log.close()

    # -- what the cluster says

    async def status(self, name: str) -> dict[str, Any] | None:
        try:
            async with httpx2.AsyncClient(timeout=2, headers=OPERATOR) as http:
                answer = await http.get(self.instances[name].url + "/status")
        except httpx2.HTTPError:
            return None
        return orjson.loads(answer.content) if answer.status_code == 200 else None

    def leases(self) -> dict[str, tuple[str | None, int, float]]:
        """Each lease: owner, epoch, seconds until it expires (the database's clock)."""
        with psycopg.connect(self.database) as conn:
            rows = conn.execute(
                "SELECT server_id, owner, epoch, extract(epoch FROM expires_at - now())::float8"
                " FROM connector_leases"
            ).fetchall()
        return {r[0]: (r[1], int(r[2]), float(r[3])) for r in rows}

    def live(self, name: str) -> bool:
        """Whether ``name`` heartbeat within the lease (the database's clock)."""
        with psycopg.connect(self.database) as conn:
            row = conn.execute(
                "SELECT heartbeat_at > now() - make_interval(secs => %s) FROM instances"
                " WHERE id = %s",
                (self.ttl, name),
            ).fetchone()
        return bool(row and row[0])

    def owners(self) -> dict[str, str]:
        """The live owner of each connector now (those with one)."""
        return {
            sid: owner
            for sid, (owner, _, left) in self.leases().items()
            if owner is not None and left > 0 and sid in self.connectors
        }

    def acked(self, sid: str) -> list[tuple[int, float]]:
        """What the platform was told was accepted: (message number, wall time), in order."""
        try:
            text = (self.platform / f"{sid}.acked").read_text()
        except FileNotFoundError:
            return []
        return [(int(line.split()[0]), float(line.split()[1])) for line in text.splitlines()]

    def acked_by(self, sid: str, pid: int) -> list[tuple[int, float]]:
        """What the connector process ``pid`` was told was accepted: (message number, wall
        time)."""
        try:
            text = (self.platform / f"{sid}.acked").read_text()
        except FileNotFoundError:
            return []
        rows = [line.split() for line in text.splitlines()]
        return [(int(r[0]), float(r[1])) for r in rows if len(r) > 2 and int(r[2]) == pid]

    def acked_after(self, sid: str, t: float) -> list[tuple[int, float]]:
        return [a for a in self.acked(sid) if a[1] > t]

    async def stored(self) -> list[tuple[str, str]]:
        """Every stored (server id, message id), in seq order."""
        store = await PgMessageStore.open(self.database)
        try:
            await store.poll_head()
            out: list[tuple[str, str]] = []
            after = 0
            while True:
                page = await store.read(after, limit=2000)
                if not page:
                    return out
                out.extend((m.server_id, m.message_id) for m in page)
                after = page[-1].seq
        finally:
            await store.aclose()

    async def stored_epochs(self) -> dict[tuple[str, str], tuple[int, int | None]]:
        """Each stored (server id, message id): its seq and the lease epoch its batch was
        committed under."""
        with psycopg.connect(self.database) as conn:
            batches = conn.execute(
                "SELECT first_seq, count, epoch FROM batches ORDER BY first_seq"
            ).fetchall()
        starts = [int(b[0]) for b in batches]
        store = await PgMessageStore.open(self.database)
        out: dict[tuple[str, str], tuple[int, int | None]] = {}
        try:
            await store.poll_head()
            after = 0
            while page := await store.read(after, limit=2000):
                for m in page:
                    first, count, epoch = batches[bisect.bisect_right(starts, m.seq) - 1]
                    assert first <= m.seq < first + count
                    out[(m.server_id, m.message_id)] = (m.seq, epoch)
                after = page[-1].seq
        finally:
            await store.aclose()
        return out

    def log_text(self, name: str) -> str:
        return self.instances[name].log_path.read_text(errors="replace")


class MakeCluster(Protocol):
    """Makes a :class:`Cluster` of ``connectors`` and instances ``names`` (``options`` are its
    other fields), on the shared NATS unless ``nats_url`` names another; closed on leaving."""

    def __call__(
        self,
        connectors: Sequence[str],
        names: Sequence[str],
        *,
        nats_url: str | None = None,
        **options: Any,
    ) -> AbstractContextManager[Cluster]: ...


def cluster_maker(folder: Path, database: str, shared_nats: str, prefix: str) -> MakeCluster:
    """Clusters in a test's folder, database and subject prefix (the ``make_cluster`` fixture)."""

    @contextmanager
    def make(
        connectors: Sequence[str],
        names: Sequence[str],
        *,
        nats_url: str | None = None,
        **options: Any,
    ) -> Iterator[Cluster]:
        nats = shared_nats if nats_url is None else nats_url
        cluster = Cluster(folder, database, nats, prefix, connectors, names, **options)
        try:
            yield cluster
        finally:
            cluster.close()

    return make


def audit(cluster: Cluster, stored: list[tuple[str, str]]) -> tuple[int, int, dict[str, int]]:
    """(acknowledged but not stored, stored more than once, acknowledged per connector)."""
    counts: dict[tuple[str, str], int] = {}
    for key in stored:
        counts[key] = counts.get(key, 0) + 1
    twice = sum(1 for c in counts.values() if c > 1)
    lost = 0
    per: dict[str, int] = {}
    for sid in cluster.connectors:
        acked = cluster.acked(sid)
        per[sid] = len(acked)
        lost += sum(1 for n, _ in acked if (sid, f"{sid}-{n}") not in counts)
    return lost, twice, per


def now() -> float:
    return time.time()
