"""A real Synapse homeserver on loopback for the Matrix bridge's tests.

What this module knows:

- how to get Synapse: a virtualenv of its own with a pinned ``matrix-synapse`` from PyPI
  (its Twisted dependency tree would clash with ours), created once and cached under
  ``~/.cache/switchboard-tests/`` (``SWITCHBOARD_TEST_CACHE`` overrides) keyed by the Synapse
  and Python versions, behind a file lock so two test runs never install at once;
- a test configuration: SQLite, one client listener on a free loopback port, no federation
  (no federation listener, an empty federation whitelist, no trusted key servers, so nothing
  leaves the machine), a registration shared secret, rate limits raised out of the way;
- starting it as a subprocess in its own process group, waiting for
  ``/_matrix/client/versions`` under :func:`anyio.fail_after`, stopping it (SIGTERM, then
  SIGKILL), and starting it again on the same database and port;
- registering users through the shared-secret admin API (``/_synapse/admin/v1/register``,
  HMAC-SHA1 over nonce, user, password and admin flag).

When Synapse cannot be installed or started, :class:`SynapseUnavailable` is raised and the
fixture turns it into ``pytest.fail``: a missing homeserver fails the tests, never skips them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import anyio

__all__ = [
    "SYNAPSE_VERSION",
    "MatrixUser",
    "Synapse",
    "SynapseUnavailable",
    "ensure_synapse",
    "free_port",
]

SYNAPSE_VERSION: Final = "1.163.2"
SERVER_NAME: Final = "localhost"
_START_WITHIN: Final = 120.0  # a first start migrates a fresh SQLite schema; be generous
_STOP_WITHIN: Final = 30.0
_LIMIT: Final = {"per_second": 100000, "burst_count": 100000}


class SynapseUnavailable(RuntimeError):
    """Synapse could not be installed or started; the message says why."""


def cache_root() -> Path:
    """Where installed test servers are kept between runs."""
    configured = os.environ.get("SWITCHBOARD_TEST_CACHE")
    base = Path(configured) if configured else Path.home() / ".cache" / "switchboard-tests"
    return base


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_synapse() -> tuple[Path, float | None]:
    """The Python of a virtualenv holding the pinned Synapse, installing it on first use.

    Returns:
        The interpreter's path and, when this call installed Synapse, how long that took.

    Raises:
        SynapseUnavailable: the virtualenv or the install failed (pip's output attached).
    """
    try:
        return _ensure_synapse()
    except OSError as exc:
        raise SynapseUnavailable(f"the cache {cache_root()} cannot be used: {exc}") from exc


def _ensure_synapse() -> tuple[Path, float | None]:
    tag = f"synapse-{SYNAPSE_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    venv = cache_root() / tag
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    with _locked(cache_root() / f"{tag}.lock"):
        if marker.exists() and python.exists():
            return python, None
        started = time.monotonic()
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"matrix-synapse=={SYNAPSE_VERSION}",
            ],
        ]
        for argv in steps:
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=1200, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise SynapseUnavailable(f"{' '.join(argv)} failed: {exc}") from exc
            if done.returncode != 0:
                raise SynapseUnavailable(
                    f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-4000:]}"
                )
        marker.write_text(f"{SYNAPSE_VERSION}\n")
        return python, time.monotonic() - started


@dataclass(frozen=True, slots=True)
class MatrixUser:
    """A registered account: its id, password and an access token of its own device."""

    user_id: str
    password: str
    access_token: str
    device_id: str

    @property
    def localpart(self) -> str:
        return self.user_id[1:].split(":", 1)[0]


class Synapse:
    """One homeserver: its files under ``root``, its port, and its process while running."""

    def __init__(self, python: Path, root: Path, port: int | None = None) -> None:
        self.python = python
        self.root = root
        self.port = port or free_port()
        self.secret = secrets.token_hex(16)
        self.process: subprocess.Popen[bytes] | None = None
        self._names = 0
        root.mkdir(parents=True, exist_ok=True)
        self._write_config()

    @property
    def url(self) -> str:
        """The client-server API base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / "homeserver.log"

    def _write_config(self) -> None:
        root = self.root
        log_config = {
            "version": 1,
            "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
            "handlers": {
                "file": {
                    "class": "logging.FileHandler",
                    "filename": str(self.log_path),
                    "formatter": "plain",
                }
            },
            "root": {"level": "WARNING", "handlers": ["file"]},
            "disable_existing_loggers": False,
        }
        # YAML is a superset of JSON, so the configuration is written as JSON.
        (root / "log.yaml").write_text(json.dumps(log_config))
        config: dict[str, Any] = {
            "server_name": SERVER_NAME,
            "public_baseurl": f"{self.url}/",
            "pid_file": str(root / "homeserver.pid"),
            "listeners": [
                {
                    "port": self.port,
                    "bind_addresses": ["127.0.0.1"],
                    "type": "http",
                    "tls": False,
                    "x_forwarded": False,
                    "resources": [{"names": ["client"], "compress": False}],
                }
            ],
            "database": {"name": "sqlite3", "args": {"database": str(root / "homeserver.db")}},
            "log_config": str(root / "log.yaml"),
            "media_store_path": str(root / "media"),
            "signing_key_path": str(root / "signing.key"),
            "registration_shared_secret": self.secret,
            "macaroon_secret_key": secrets.token_hex(16),
            "form_secret": secrets.token_hex(16),
            "report_stats": False,
            "enable_registration": False,
            "enable_metrics": False,
            "use_presence": False,
            "url_preview_enabled": False,
            "trusted_key_servers": [],
            "suppress_key_server_warning": True,
            "federation_domain_whitelist": [],
            "rc_message": _LIMIT,
            "rc_registration": _LIMIT,
            "rc_login": {"address": _LIMIT, "account": _LIMIT, "failed_attempts": _LIMIT},
            "rc_joins": {"local": _LIMIT, "remote": _LIMIT},
            "rc_joins_per_room": _LIMIT,
            "rc_invites": {"per_room": _LIMIT, "per_user": _LIMIT, "per_issuer": _LIMIT},
            "rc_admin_redaction": _LIMIT,
            "rc_room_creation": _LIMIT,
            "rc_profile": _LIMIT,
            "rc_presence": {"per_user": _LIMIT},
        }
        (root / "homeserver.yaml").write_text(json.dumps(config))

    def start(self) -> None:
        """Start the server and wait until its client API answers (outside an event loop).

        Raises:
            SynapseUnavailable: it exited or did not answer in time (its log attached).
        """
        anyio.run(self.start_async)

    async def start_async(self) -> None:
        """:meth:`start` from inside an event loop."""
        if self.process is not None:
            raise RuntimeError("Synapse is already running")
        output = (self.root / "stdout.log").open("ab")
        try:
            # Popen returns at once; the server outlives this call until stop().
            self.process = subprocess.Popen(  # noqa: ASYNC220
                [str(self.python), "-m", "synapse.app.homeserver", "-c", "homeserver.yaml"],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise SynapseUnavailable(f"Synapse could not be started: {exc}") from exc
        finally:
            output.close()
        try:
            await self._wait_answering()
        except BaseException as exc:
            await anyio.to_thread.run_sync(self.stop)
            raise SynapseUnavailable(f"Synapse did not start: {exc}\n{self.log_tail()}") from exc

    async def _wait_answering(self) -> None:
        process = self.process
        assert process is not None
        timeout = aiohttp.ClientTimeout(total=5.0)
        async with aiohttp.ClientSession(timeout=timeout) as client:
            with anyio.fail_after(_START_WITHIN):
                while True:
                    if process.poll() is not None:
                        raise SynapseUnavailable(f"it exited with code {process.returncode}")
                    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                        async with client.get(f"{self.url}/_matrix/client/versions") as answer:
                            if answer.status == 200:
                                return
                    await anyio.sleep(0.2)

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL if it lingers)."""
        process = self.process
        if process is None:
            return
        self.process = None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=_STOP_WITHIN)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=_STOP_WITHIN)

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's log and output, for a failure message."""
        parts = []
        for path in (self.log_path, self.root / "stdout.log"):
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(parts)

    def fresh_name(self, prefix: str) -> str:
        """A localpart no other user of this server has."""
        self._names += 1
        return f"{prefix}{self._names}{secrets.token_hex(3)}"

    async def register(
        self, localpart: str, *, displayname: str | None = None, admin: bool = False
    ) -> MatrixUser:
        """Register ``localpart`` through the shared-secret admin API."""
        password = secrets.token_urlsafe(12)
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        timeout = aiohttp.ClientTimeout(total=30.0)
        async with aiohttp.ClientSession(timeout=timeout, raise_for_status=True) as client:
            async with client.get(endpoint) as answer:
                nonce = (await answer.json())["nonce"]
            mac = hmac.new(self.secret.encode(), digestmod=hashlib.sha1)
            for part in (nonce, localpart, password):
                mac.update(part.encode())
                mac.update(b"\x00")
            mac.update(b"admin" if admin else b"notadmin")
            body: dict[str, Any] = {
                "nonce": nonce,
                "username": localpart,
                "password": password,
                "admin": admin,
                "mac": mac.hexdigest(),
            }
            if displayname is not None:
                body["displayname"] = displayname
            async with client.post(endpoint, json=body) as answer:
                account = await answer.json()
        return MatrixUser(
            user_id=account["user_id"],
            password=password,
            access_token=account["access_token"],
            device_id=account["device_id"],
        )
