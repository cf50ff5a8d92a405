"""What a host check gets: the host command, a fresh host process, and the kit's connector.

:class:`HostTarget` is a host named by a command template whose ``{connector}`` or ``{url}``
element the kit fills in; :class:`HostContext` starts that host for one check, with the kit's
connector on the other end, and stops it afterwards.

What it deliberately does not know: what the check does, or how its verdict is reported.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.abc
from anyio.streams.stapled import MultiListener

from switchboard.transport import tcp_link_from_stream

from ..common.options import SuiteOptions
from ..common.outcomes import fail
from ..common.registry import CheckRegistry
from ..common.stderr import watching_stderr
from ..common.transcript import RecordingLink, Transcript
from .agent_connector import connector_argv
from .session import ACCEPTED, CHANNELS_ONLY, KitConnector

__all__ = [
    "CHANNELS",
    "CONNECTOR_PLACEHOLDER",
    "GENERAL",
    "HANDSHAKE",
    "HOOKS",
    "HOST_CHECKS",
    "MANIFEST",
    "POLICY",
    "PUSH",
    "REQUESTS",
    "SECTIONS",
    "STREAMING",
    "URL_PLACEHOLDER",
    "HostContext",
    "HostTarget",
]

CONNECTOR_PLACEHOLDER: Final = "{connector}"
URL_PLACEHOLDER: Final = "{url}"

# How long an ended host gets after SIGTERM before SIGKILL.
_SHUTDOWN_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class HostTarget:
    """A host under test, given as a command template.

    Attributes:
        command: the host's argv; one element is, or contains, ``{connector}`` (the host
            spawns the kit's connector) or ``{url}`` (the host dials the kit).
        env: variables merged over this process's environment for the host.
        cwd: the host's working directory.
    """

    command: tuple[str, ...]
    env: Mapping[str, str] | None = field(default=None, compare=False)
    cwd: str | None = None

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("the host command cannot be empty")
        if not any(
            CONNECTOR_PLACEHOLDER in part or URL_PLACEHOLDER in part for part in self.command
        ):
            raise ValueError(
                f"the host command must contain {CONNECTOR_PLACEHOLDER} or {URL_PLACEHOLDER}"
            )

    @classmethod
    def of(cls, target: HostTarget | Sequence[str]) -> HostTarget:
        """Accept a target or a command list.

        Raises:
            ValueError: an empty command, or one without ``{connector}`` or ``{url}``.
        """
        if isinstance(target, HostTarget):
            return target
        if isinstance(target, str):
            raise ValueError("give the host command as a list of arguments")
        return cls(command=tuple(target))

    def argv(self, connector: Sequence[str], url: str = "") -> list[str]:
        """The host's argv with the connector's argv and the kit's URL substituted."""
        out: list[str] = []
        for part in self.command:
            if part == CONNECTOR_PLACEHOLDER:
                out.extend(connector)
            else:
                part = part.replace(URL_PLACEHOLDER, url)
                out.append(part.replace(CONNECTOR_PLACEHOLDER, shlex.join(connector)))
        return out

    def describe(self) -> str:
        """The target as a person would write it."""
        return shlex.join(self.command)


async def _end(process: anyio.abc.Process) -> None:
    """End the host and everything it started (its process group)."""
    if process.returncode is None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        with anyio.move_on_after(_SHUTDOWN_GRACE):
            await process.wait()
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        await process.wait()


class HostContext:
    """The context a host check runs in.

    What it knows:

    - :class:`HostTarget`, a host named by a command template in which the element ``{connector}``
      stands for the argv of the kit's connector (several elements; an element that merely
      *contains* ``{connector}`` gets the argv joined by spaces, shell-quoted), or in which
      ``{url}`` stands for ``tcp://127.0.0.1:PORT``, the kit's own listener, for a host that dials
      its connectors rather than spawning them (URL mode: no relay in between);
    - how one check launches the host: a TCP listener on 127.0.0.1 (port 0), the host process
      started in its own session with the relay argv substituted, the first connection the relay
      makes (within the start timeout), wrapped so every frame lands in the check's transcript, with
      a :class:`~.session.KitConnector` serving it; every line the host writes to stderr kept in the
      transcript's stderr tail (a failed check shows it, as the server suite does for a connector:
      :mod:`..common.stderr`); and on exit the process group ended;
    - the host suite's registry (:data:`HOST_CHECKS`) and its report sections, in order.

    Args:
        target: the host under test.
        options: the suite's timing.
        transcript: where every frame of this check is recorded.
        check_id: the check's id (passed to the relay for its logs).
    """

    def __init__(
        self,
        target: HostTarget,
        options: SuiteOptions,
        transcript: Transcript,
        check_id: str = "",
    ) -> None:
        self.target = target
        self.options = options
        self.transcript = transcript
        self.check_id = check_id

    @asynccontextmanager
    async def launch(
        self,
        advertisement: Mapping[str, Any] | None = CHANNELS_ONLY,
        *,
        hold_policy: bool = False,
        receipt: Mapping[str, Any] = ACCEPTED,
        extra_fields: Mapping[str, Any] | None = None,
        hold_hooks: bool = False,
    ) -> AsyncIterator[KitConnector]:
        """Start a fresh host, accept its connector connection, and serve it as the kit.

        The keyword arguments are those of :class:`~.session.KitConnector`.

        Raises:
            CheckFailed: the host never started the connector within the start timeout.
            OSError: the host command could not be started.
        """
        connection = self.transcript.new_connection()
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        async with listener:
            port = listener.extra(anyio.abc.SocketAttribute.local_port)
            argv = self.target.argv(
                connector_argv(port, self.check_id), url=f"tcp://127.0.0.1:{port}"
            )
            env = None if self.target.env is None else {**os.environ, **self.target.env}
            process = await anyio.open_process(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self.target.cwd,
                start_new_session=True,
            )
            transcript = self.transcript

            def on_stderr(line: str) -> None:
                transcript.note_stderr(connection, line)

            def make_kit(link: RecordingLink) -> KitConnector:
                return KitConnector(
                    link,
                    self.options,
                    advertisement,
                    hold_policy=hold_policy,
                    receipt=receipt,
                    extra_fields=extra_fields,
                    hold_hooks=hold_hooks,
                )

            try:
                assert process.stderr is not None
                async with (
                    watching_stderr(process.stderr, on_stderr, stop=lambda: _end(process)),
                    self._serve(listener, connection, make_kit) as kit,
                ):
                    yield kit
            finally:
                with anyio.CancelScope(shield=True):
                    await process.aclose()

    @asynccontextmanager
    async def _serve(
        self,
        listener: MultiListener[anyio.abc.SocketStream],
        connection: int,
        make_kit: Callable[[RecordingLink], KitConnector],
    ) -> AsyncIterator[KitConnector]:
        """Accept the host's connector connection and serve it as the kit while in use."""
        stream: anyio.abc.SocketStream | None = None
        accept = listener.listeners[0]
        assert isinstance(accept, anyio.abc.SocketListener)
        with anyio.move_on_after(self.options.start_timeout):
            stream = await accept.accept()
        if stream is None:
            fail(f"the host did not start the connector within {self.options.start_timeout:g} s")
        raw = tcp_link_from_stream(stream, description=f"host#{connection}")
        link = RecordingLink(raw, self.transcript, connection)
        kit = make_kit(link)
        async with anyio.create_task_group() as tg:
            tg.start_soon(kit.peer.run)
            try:
                yield kit
            finally:
                with anyio.CancelScope(shield=True):
                    await kit.peer.aclose()
                tg.cancel_scope.cancel()


HANDSHAKE: Final = "Handshake and policy"
POLICY: Final = "Grant"
REQUESTS: Final = "Requests and robustness"
PUSH: Final = "Feature sets and push events"
HOOKS: Final = "Hooks and inference"
CHANNELS: Final = "Channels"
STREAMING: Final = "Publishing and streaming"
MANIFEST: Final = "Manifest changes"
GENERAL: Final = "General"

SECTIONS: Final = (HANDSHAKE, POLICY, REQUESTS, PUSH, HOOKS, CHANNELS, STREAMING, MANIFEST, GENERAL)

HOST_CHECKS: Final[CheckRegistry[HostContext]] = CheckRegistry("host")
"""Every check of the host suite, in report order once all check modules are imported."""
