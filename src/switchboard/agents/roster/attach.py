"""Which agents have a session attached right now: :class:`Attachments`.

Transports attach and detach sessions; an agent with at least one is online in the directory,
and every request it makes touches its last-seen (docs/agents.md, "Identities").

In a cluster the directory's online flag is the cluster's word, not one instance's: the
counts go to a :class:`SharedPresence` (injected by cluster mode), which marks the directory.

What it deliberately does not know: MCP, HTTP, stdio, other instances, and what an attach means
to mail or lifetimes (they watch it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Protocol

import structlog

from switchboard.agents.roster.roster import Roster
from switchboard.directory import DirectoryError, DirectoryStore, InvalidName, NotFound

__all__ = ["TOUCH_WRITE_EVERY", "Attachments", "SharedPresence"]

log = structlog.get_logger(__name__)

#: Seconds between two last-seen writes a :meth:`Attachments.touch` makes for one agent.
TOUCH_WRITE_EVERY: Final = 5.0


class SharedPresence(Protocol):
    """Where an instance of a cluster shares its agents' session counts; it keeps the
    directory's online flag as the whole cluster has it (an agent is online while any live
    instance has a session of it)."""

    def counted(self, handle: str, count: int) -> None:
        """This instance now has ``count`` sessions of the agent ``handle`` (``@name``).

        Called on the event loop at every attach and detach: it must not block.
        """
        ...

    def attached(self, handle: str) -> bool:
        """Whether the last look at the cluster found a session of ``handle`` on a live
        instance (this one included)."""
        ...

    def seen(self, handle: str) -> float | None:
        """When (Unix seconds) ``handle`` last attached, detached or did something on any
        instance, as last looked up; None: not known."""
        ...


class _Anywhere:
    """The attachments as the whole cluster has them, for what must not act on one instance's
    view (an agent attached elsewhere is not idle). Without a shared presence it is exactly the
    local view."""

    __slots__ = ("_local",)

    def __init__(self, local: Attachments) -> None:
        self._local = local

    def count(self, name: str) -> int:
        local = self._local
        n = local.count(name)
        shared = local._shared
        if n or shared is None:
            return n
        # Attached elsewhere: at least one session, which is all a reader of this view asks.
        return int(shared.attached(local._handle(_key(name))))

    def last_active(self, name: str) -> float | None:
        local = self._local
        active = local.last_active(name)
        shared = local._shared
        if shared is None:
            return active
        seen = shared.seen(local._handle(_key(name)))
        if seen is None or (active is not None and active >= seen):
            return active
        return seen


class Attachments:
    """Counts each agent's sessions and keeps its directory entry's presence (module docstring).

    What it knows (docs/agents.md, "Identities"):

    - **Sessions per agent.** A transport calls :meth:`Attachments.attach` when a session of an
      agent starts (an MCP session over streamable HTTP, or the one stdio session) and
      :meth:`Attachments.detach` when it ends; several sessions of one agent are counted.
    - **Online and last-seen in the directory.** The first session marks the agent's directory entry
      (``@name``) online, the end of the last one marks it offline; both update last-seen. An agent
      without a directory entry is counted all the same (nothing is written for it).
    - **Activity.** :meth:`Attachments.touch` records a tool call or request. It is cheap: it keeps
      the time in memory and writes the directory's last-seen at most once every
      :data:`TOUCH_WRITE_EVERY` seconds per agent.
    - **Listeners.** :meth:`Attachments.watch` registers a callable told the agent's name on each
      attach (the mail part delivers held mail then), :meth:`Attachments.watch_gone` one told when
      its last session detaches (its open turn is aborted). A listener that raises is logged and
      the others are still told.

    Args:
        roster: the live identities (for the handle of a name).
        directory: where ``@name`` is marked online/offline and last-seen is kept.
        clock: Unix seconds, for :meth:`last_active` and the touch write interval.
        touch_every: seconds between two directory writes of :meth:`touch` for one agent.
    """

    __slots__ = (
        "_active",
        "_clock",
        "_counts",
        "_directory",
        "_gone",
        "_listeners",
        "_roster",
        "_shared",
        "_touch_every",
        "_written",
    )

    def __init__(
        self,
        roster: Roster,
        directory: DirectoryStore,
        *,
        clock: Callable[[], float] = time.time,
        touch_every: float = TOUCH_WRITE_EVERY,
    ) -> None:
        self._roster = roster
        self._directory = directory
        self._clock = clock
        self._touch_every = touch_every
        self._counts: dict[str, int] = {}
        self._active: dict[str, float] = {}
        self._written: dict[str, float] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._gone: list[Callable[[str], None]] = []
        self._shared: SharedPresence | None = None

    def share(self, shared: SharedPresence) -> None:
        """From now, tell ``shared`` every count instead of marking the directory here (cluster
        mode; call before any session attaches)."""
        self._shared = shared

    def attach(self, name: str) -> None:
        """A session of agent ``name`` started: count it, mark the agent online, tell listeners."""
        name = _key(name)
        now = self._clock()
        self._counts[name] = self._counts.get(name, 0) + 1
        self._active[name] = now
        self._written[name] = now
        if self._shared is not None:
            self._shared.counted(self._handle(name), self._counts[name])
        else:
            self._mark(name, online=True)
        log.debug("agent_attached", agent=name, sessions=self._counts[name])
        for listener in list(self._listeners):
            try:
                listener(name)
            except Exception as exc:  # a listener's failure is its own
                log.exception("attach_listener_failed", agent=name, error=str(exc))

    def detach(self, name: str) -> None:
        """A session of agent ``name`` ended; after its last one, mark the agent offline."""
        name = _key(name)
        now = self._clock()
        left = max(self._counts.get(name, 0) - 1, 0)
        self._active[name] = now
        self._written[name] = now
        if self._shared is not None:
            self._shared.counted(self._handle(name), left)
        if left:
            self._counts[name] = left
        else:
            self._counts.pop(name, None)
            if self._shared is None:
                self._mark(name, online=False)
            for listener in list(self._gone):
                try:
                    listener(name)
                except Exception as exc:  # a listener's failure is its own
                    log.exception("detach_listener_failed", agent=name, error=str(exc))
        log.debug("agent_detached", agent=name, sessions=left)

    def touch(self, name: str) -> None:
        """Agent ``name`` did something (a request, a tool call): note the time.

        The directory's last-seen is written at most once per ``touch_every`` seconds.
        """
        name = _key(name)
        now = self._clock()
        self._active[name] = now
        if now - self._written.get(name, float("-inf")) < self._touch_every:
            return
        self._written[name] = now
        self._write(name, lambda handle: self._directory.touch(handle, force=True))

    def count(self, name: str) -> int:
        """How many sessions of agent ``name`` are attached."""
        return self._counts.get(_key(name), 0)

    def last_active(self, name: str) -> float | None:
        """Unix seconds of agent ``name``'s last attach, detach or touch; None: never."""
        return self._active.get(_key(name))

    def attached(self) -> list[str]:
        """The names of the agents with at least one session attached, sorted."""
        return sorted(self._counts)

    @property
    def anywhere(self) -> _Anywhere:
        """These attachments as the whole cluster has them (``count`` and ``last_active``
        count sessions on other instances too); without a shared presence, the same as
        these."""
        return _Anywhere(self)

    def watch(self, listener: Callable[[str], None]) -> None:
        """Tell ``listener`` the agent's name on every :meth:`attach`."""
        self._listeners.append(listener)

    def watch_gone(self, listener: Callable[[str], None]) -> None:
        """Tell ``listener`` the agent's name when its last session detaches."""
        self._gone.append(listener)

    def _mark(self, name: str, *, online: bool) -> None:
        self._write(name, lambda handle: self._directory.set_online(handle, online, force=True))

    def _handle(self, name: str) -> str:
        identity = self._roster.get(name)
        return identity.handle if identity is not None else f"@{name}"

    def _write(self, name: str, write: Callable[[str], object]) -> None:
        handle = self._handle(name)
        try:
            write(handle)
        except (NotFound, InvalidName):
            return  # not listed (yet): only the count is kept
        except DirectoryError as exc:
            log.warning("agent_presence_not_written", agent=handle, error=str(exc))


def _key(name: str) -> str:
    return name[1:] if name.startswith("@") else name
