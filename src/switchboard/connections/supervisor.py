"""Keep every configured connector connected: spawn or dial, restart with backoff and jitter.

When a connection ends its registrations leave the registry at once, and the connector is
tried again after a delay that doubles up to ``backoff_max``, with jitter so that connectors
that died together do not come back in lock step; a permanent failure (a missing program, a URL
that cannot be dialed) is logged once and not retried. Every connection gets a fresh session
from the :class:`SessionFactory`, which makes it the server's owner in the map the rest of the
host reads.

What it deliberately does not know: what a session does with its link, and agents.
"""

from __future__ import annotations

import math
import random
import signal
import time
from collections.abc import Callable, MutableMapping

import anyio
import structlog

from switchboard.channels import ChannelRegistry
from switchboard.config import ConnectorConfig
from switchboard.connections.inference import InferenceAgents
from switchboard.connections.links import open_link, permanent_failure
from switchboard.connections.session import ConnectorSession
from switchboard.events import (
    ConnectorExited,
    ConnectorFailed,
    ConnectorLogs,
    ConnectorRestartScheduled,
    ConnectorStarted,
    EventBus,
)
from switchboard.store import MessageStoreProtocol
from switchboard.transport import LinkClosedError

__all__ = ["HEALTHY_AFTER", "SessionFactory", "Supervisor", "backoff_delay", "exit_status"]

log = structlog.get_logger(__name__)

#: A connection that lasted this long counts as healthy and resets the backoff.
HEALTHY_AFTER = 30.0


def exit_status(link: object) -> tuple[int | None, str | None]:
    """``(exit code, signal name)`` of a stdio link's ended child; ``(None, None)`` otherwise.

    A child ended by a signal has a negative return code; its name (``SIGKILL``) is returned
    instead of the code.
    """
    code = getattr(link, "returncode", None)
    if not isinstance(code, int):
        return None, None
    if code >= 0:
        return code, None
    try:
        return None, signal.Signals(-code).name
    except ValueError:
        return None, f"signal {-code}"


def _only(exc: BaseException) -> BaseException:
    """The one failure of a task group is that failure (not "unhandled errors in a
    TaskGroup")."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _failure_text(exc: BaseException) -> str:
    """What went wrong, said once."""
    exc = _only(exc)
    return str(exc) or repr(exc)


def _failed(exc: BaseException, link: object) -> dict[str, str]:
    """The fields of ``connector_failed``: the error, and how the child ended (:func:`_died`).
    When the link closed because the child exited, the child's exit is the error."""
    died = _died(link)
    if isinstance(_only(exc), LinkClosedError) and "exited" in died:
        return {"error": died.pop("exited"), **died}
    return {"error": _failure_text(exc), **died}


def _died(link: object) -> dict[str, str]:
    """What a stdio connector that ended said about it: its exit status and the last lines of
    its stderr (a Python connector's ``No module named ...``); empty for a child still running
    or a dialed link. The warning carries them because the INFO ``connector_stderr`` lines are
    easy to miss, and the link error alone ("closed before the response to 'initialize'")
    names the symptom, not the cause."""
    code, signame = exit_status(link)
    if code is None and signame is None:
        return {}
    how = f"with status {code}" if signame is None else f"by {signame}"
    said: dict[str, str] = {"exited": f"the connector's process exited {how}"}
    tail = getattr(link, "stderr_tail", "")
    if isinstance(tail, str) and tail:
        said["stderr"] = tail
    if code != 0 or signame is not None:
        said["next"] = (
            "run the connector's command by hand to see the whole error; "
            "`switchboard check --config FILE` checks that it can start"
        )
    return said


def backoff_delay(failures: int, initial: float, maximum: float, rng: random.Random) -> float:
    """The delay before attempt ``failures + 1``: exponential, capped, with 50-100 % jitter."""
    base: float = min(maximum, initial * float(2 ** min(failures, 30)))
    return base * rng.uniform(0.5, 1.0)


class SessionFactory:
    """Makes each connection's session and makes it the server's current one.

    Args:
        sessions: The current session of each server (the map the host reads).
        registry: The channel registry every session registers into.
        store: The message store every session writes accepted messages to.
        events: Where every session tells what happened.
        clock: The host clock.
        logs: The host's per-server rate-limited log of what connectors cause; None: each
            session keeps its own.
        inference: Who answers the connectors' inference (the agent side); None: nobody.
    """

    __slots__ = ("_clock", "_events", "_inference", "_logs", "_registry", "_sessions", "_store")

    def __init__(
        self,
        *,
        sessions: MutableMapping[str, ConnectorSession],
        registry: ChannelRegistry,
        store: MessageStoreProtocol,
        events: EventBus,
        clock: Callable[[], float] = time.time,
        logs: ConnectorLogs | None = None,
        inference: InferenceAgents | None = None,
    ) -> None:
        self._sessions = sessions
        self._inference = inference
        self._logs = logs
        self._registry = registry
        self._store = store
        self._events = events
        self._clock = clock

    def session(self, config: ConnectorConfig) -> ConnectorSession:
        """A new session for one connection of ``config``, now the server's current one."""
        session = ConnectorSession(
            config,
            registry=self._registry,
            store=self._store,
            events=self._events,
            clock=self._clock,
            noted=None if self._logs is None else self._logs.of(config.id),
            inference=self._inference,
        )
        self._sessions[config.id] = session
        return session


class Supervisor:
    """Runs one supervision loop per connector config inside the caller's task group.

    When a connection ends, its registrations are dropped from the registry at once (a dead
    connector's channels are not offered to agents); a restarted connector registers again and is
    taken back. The delay before the next attempt doubles after each failure up to ``backoff_max``,
    with jitter so that several connectors that died together do not come back in lock step; a
    connection that stayed up for :data:`HEALTHY_AFTER` seconds resets the count. The warning that a
    connection ended or failed says when the next try is (``retry_in``). A permanent failure (a
    missing program or ``cwd``, a URL that cannot be dialed:
    :func:`~switchboard.connections.links.permanent_failure`) is not retried: it is logged once as
    an ERROR (``connector_stopped``, naming the path) and that connector stays stopped while the
    host and the other connectors go on. Each end is told as
    :class:`~switchboard.events.ConnectorExited`, each planned reconnect as
    :class:`~switchboard.events.ConnectorRestartScheduled`. Once the host is stopping
    (:meth:`Supervisor.stop`, or the supervision task is cancelled) an ending connection is a clean
    stop: no warning, and no restart.

    Every connection gets a fresh :class:`~switchboard.connections.session.ConnectorSession` from
    the :class:`SessionFactory`, which also makes it the server's current session in the map the
    rest of the host reads (``board.sessions``); a link served outside supervision
    (``Switchboard.serve_link``) takes its session from the same factory.
    """

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        sessions: SessionFactory,
        events: EventBus,
        rng: random.Random | None = None,
    ) -> None:
        self._registry = registry
        self._sessions = sessions
        self._events = events
        self._rng = rng or random.Random()
        self._stopping = False
        self.attempts: dict[str, int] = {}
        self._restarting: set[str] = set()

    def stop(self) -> None:
        """Mark the host as stopping: connections that end from now on are not restarted."""
        self._stopping = True

    def restarting(self, server_id: str) -> bool:
        """Whether ``server_id``'s connection ended and it waits to be started again."""
        return server_id in self._restarting

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called or the calling task is being cancelled."""
        return self._stopping or anyio.current_effective_deadline() == -math.inf

    async def supervise(self, config: ConnectorConfig) -> None:
        """Connect, serve, and reconnect ``config`` until cancelled (or once, if restart=false)."""
        failures = 0
        slog = log.bind(server_id=config.id)
        while True:
            session = self._sessions.session(config)
            self.attempts[config.id] = self.attempts.get(config.id, 0) + 1
            started = time.monotonic()
            opened: object = None
            permanent = False
            try:
                async with open_link(config) as link:
                    opened = link
                    pid = getattr(link, "pid", None)
                    self._events.emit(
                        ConnectorStarted(
                            config.id,
                            pid if isinstance(pid, int) else None,
                            link.description,
                            tuple(config.command or ()),
                        )
                    )
                    await session.run(link)
                ended: tuple[str, dict[str, str]] | None = ("connector_link_ended", _died(link))
            except Exception as exc:  # a failed spawn/dial or a broken handshake
                # The child's own exit says more than the link's "closed before the answer".
                ended = ("connector_failed", _failed(exc, opened))
                if permanent_failure(exc):
                    ended = None
                    if not self.stopping:
                        slog.error(
                            "connector_stopped",
                            error=str(exc),
                            retry=False,
                            next="fix the config or install what it names, then restart "
                            "switchboard; the other connectors go on",
                        )
                    permanent = True
                    self._events.emit(ConnectorFailed(config.id, str(exc) or repr(exc)))
            finally:
                removed = self._registry.remove_server(config.id)
                code, signame = exit_status(opened)
                self._events.emit(ConnectorExited(config.id, removed, code, signame))
            if permanent or self.stopping:
                return
            if not config.restart:
                if ended is not None:
                    slog.warning(ended[0], retry_in=None, **ended[1])
                return
            if time.monotonic() - started >= HEALTHY_AFTER:
                failures = 0
            delay = backoff_delay(failures, config.backoff_initial, config.backoff_max, self._rng)
            if ended is not None:
                slog.warning(ended[0], retry_in=round(delay, 2), **ended[1])
            failures += 1
            self._events.emit(ConnectorRestartScheduled(config.id, delay, failures))
            self._restarting.add(config.id)
            try:
                await anyio.sleep(delay)
            finally:
                self._restarting.discard(config.id)
