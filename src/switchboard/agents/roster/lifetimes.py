"""How long each agent lives: :class:`Lifetimes`, task agents, and the configured agents'
directory entries.

At start-up the tasks a previous run left end and each configured agent claims its address
as a new incarnation; task agents start and end on the agents' requests (through the port) or
by their deadline, idle timeout or turn limit; an agent that ends leaves the roster, its
address is released and its parent is told (docs/agents.md, "Lifetimes and task agents"). The
timer is cheap when nothing is due.

What it deliberately does not know: MCP, HTTP, how mail is stored or routed, and how sessions
are counted.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import anyio
import structlog

from switchboard.agents.desk.desk import AgentDesk
from switchboard.agents.roster.roster import (
    SYSTEM_SENDER,
    Identity,
    IdentityKind,
    Roster,
    token_digest,
)
from switchboard.directory import (
    DirectoryError,
    DirectoryStore,
    Entry,
    HeldByAnotherOwner,
    InvalidName,
    NotFound,
    validate_address,
)
from switchboard.refusals.refusal import Refusal
from switchboard.store.interface import LifetimeRecords

__all__ = [
    "SYSTEM_SENDER",
    "TASK_TAG",
    "TICK_SECONDS",
    "EndReason",
    "EndedAgent",
    "Lifetimes",
    "MailDrop",
    "Presence",
    "SpawnedTask",
    "result_text",
]

log = structlog.get_logger(__name__)

EndReason = Literal[
    "deadline",
    "idle-timeout",
    "turn-limit",
    "idle-ttl",
    "finished",
    "restart",
    "ended-by-parent",
    "parent-ended",
]
"""Why an agent ended."""

TICK_SECONDS: Final = 1.0
"""How often :meth:`Lifetimes.run` looks for agents whose time is up."""

TASK_TAG: Final = "task"
"""The directory tag of every task agent."""


_MARK: Final = "switchboard"
"""The metadata key saying who put an entry there: ``configured`` or ``task``."""
_PAGE: Final = 500


class Presence(Protocol):
    """What lifetimes read of the agents' sessions (the attachments part)."""

    def count(self, name: str) -> int:
        """How many sessions of the agent ``name`` are attached now."""
        ...

    def last_active(self, name: str) -> float | None:
        """When a session of ``name`` last did something (host clock), or None: never."""
        ...


class MailDrop(Protocol):
    """Where a task's result is deposited (the mail part)."""

    async def deposit(self, sender: str, to: str, text: str) -> object:
        """Deposit ``text`` from ``sender`` (a name, or ``switchboard``) for address ``to``."""
        ...


@dataclass(frozen=True, slots=True)
class SpawnedTask:
    """A task agent just started.

    Attributes:
        handle: Its address, ``@name``.
        token: Its bearer token (also the owner token of its address); shown only here.
        parent: The handle of the agent that started it (its result goes there).
        deadline: Unix seconds at which it ends, or None.
        idle_timeout: Seconds without activity after which it ends, or None.
        turn_limit: How many turns it may take, or None.
        home: Its home channel's name, or None.
    """

    handle: str
    token: str
    parent: str
    deadline: float | None
    idle_timeout: float | None
    turn_limit: int | None
    home: str | None


@dataclass(frozen=True, slots=True)
class EndedAgent:
    """An agent that ended.

    Attributes:
        handle: Its address (now released).
        kind: ``configured`` or ``task``.
        reason: Why it ended.
        told: The handle its result (or end reason) was mailed to, or None when none was
            (not a task, or the parent could not be reached).
    """

    handle: str
    kind: IdentityKind
    reason: EndReason
    told: str | None = None


def result_text(handle: str, reason: EndReason, result: str | None) -> str:
    """The mail a task's parent gets when the task ``handle`` ends: a first line that marks it
    as the task's result and says why it ended, then the result (or that there is none)."""
    head = f"[task result] {handle} ended: {reason}"
    if result is None or not result.strip():
        return f"{head}\n(no result was given)"
    return f"{head}\n{result}"


def _handle(name: str) -> str:
    return name if name.startswith("@") else f"@{name}"


def _name(handle: str) -> str:
    return handle[1:] if handle.startswith("@") else handle


class Lifetimes:
    """When each agent ends, and how.

    What it knows (docs/agents.md, "Lifetimes and task agents"):

    - **Start-up** (:meth:`Lifetimes.restore`). Task agents left in the directory by a previous run
      end with reason ``restart`` (their address is released and their parent is told by mail from
      ``switchboard``). Then each configured identity claims its directory entry ``@name`` (kind
      agent, holder itself, its tags and description, no TTL) under the host's owner token: a random
      secret made once and kept in a tiny table of the store's file (:data:`RECORDS_TABLE`), so a
      restart reclaims with the same token. An entry held by another token is an operator conflict:
      logged as an ERROR and taken over (removed with the directory's force path, then claimed).
      Every start is a new incarnation of each configured identity: its count is kept in the same
      table (so it survives the address being released), shown in the entry's metadata
      (``{"incarnation": n}``) and set on :attr:`Identity.incarnation
      <switchboard.agents.roster.roster.Identity.incarnation>`.
    - **Task agents** (:meth:`Lifetimes.start_task`). Any agent may start one: the task claims its
      ``@handle`` under a fresh owner token (which is also its bearer token; only digests are kept),
      joins the roster as kind ``task`` with the caller as its parent, and the token is handed out
      once. A task ends at its ``deadline``, after ``idle_timeout`` seconds without activity, when
      it has taken ``turn_limit`` turns and would begin another, when it calls ``task_finish``
      (``finished``), when its parent ends it (``ended-by-parent``), or when its parent ends
      (``parent-ended``).
    - **Idle agents.** A configured agent with ``idle_ttl`` ends (``idle-ttl``) once no session has
      been attached for that long. The default-delivery agent never ends this way: untargeted
      traffic would have nowhere to go (its ``idle_ttl`` is ignored, with a WARNING at start).
    - **Ending** (:meth:`Lifetimes.end`): a task's result, or its end reason when it gave none, is
      mailed to its parent from the task itself (marked by its first line as the task's result);
      then the identity leaves the roster (its token proves nothing any more), its directory address
      is released, its desk is dropped, an ``agent_ended`` INFO line gives the reason, and its own
      tasks end (``parent-ended``).
    - **The timer** (:meth:`Lifetimes.run`) ticks about once a second; a tick
      (:meth:`Lifetimes.tick`) reads the clock once and looks at each live identity (a few
      comparisons each), so it is cheap when nothing is due. Time is the host's clock; activity and
      attachment come from the attachments part (:class:`Presence`).

    Args:
        roster: The live identities (tasks are added and ended ones removed here).
        directory: The directory of addresses.
        desks: The host's per-agent desks by name (an ended agent's desk is dropped).
        mail: Where a task's result is deposited.
        attachments: Who is attached, and when each agent was last active.
        records: Where the owner token and the incarnation counts are kept.
        clock: Unix seconds (the host's clock; tests pass a fake one).
        instance: In a cluster, this instance's id. A task lives on the instance that started
            it (its token is known only there): its entry is marked with that id, and at
            start-up only this instance's own leftovers end; another instance's tasks end by
            :meth:`sweep` once that instance is gone. None (one process): every task left in
            the directory is a leftover.
    """

    def __init__(
        self,
        *,
        roster: Roster,
        directory: DirectoryStore,
        desks: MutableMapping[str, AgentDesk],
        mail: MailDrop,
        attachments: Presence,
        records: LifetimeRecords,
        clock: Callable[[], float] = time.time,
        instance: str | None = None,
    ) -> None:
        self._instance = instance
        self._roster = roster
        self._directory = directory
        self._desks = desks
        self._mail = mail
        self._attachments = attachments
        self._clock = clock
        self._records = records
        self._owner: str | None = None
        #: When each live agent's lifetime clock started (start-up, or its spawn).
        self._since: dict[str, float] = {}
        self._ending: set[str] = set()

    # -- start-up -----------------------------------------------------------------------------

    def _entries(self) -> Iterator[Entry]:
        offset = 0
        while True:
            page = self._directory.list(prefix="@", kind="agent", limit=_PAGE, offset=offset)
            yield from page.entries
            offset += len(page.entries)
            if not page.entries or offset >= page.total:
                return

    async def restore(self) -> None:
        """End the tasks a previous run left, then claim each configured agent's address as
        a new incarnation (see :class:`Lifetimes`). Called once, before serving."""
        now = self._clock()
        configured = [i for i in self._roster if i.kind == "configured"]
        leftovers = [e for e in self._entries() if self._leftover(e)]
        for entry in leftovers:
            await self._end_leftover(entry)
        seen: dict[str, int] = {}
        valid: list[Identity] = []
        for identity in configured:
            try:
                validate_address(identity.handle)
            except InvalidName:
                log.warning(
                    "agent_not_listed",
                    agent=identity.handle,
                    reason="its name is not a directory address (@[a-z][a-z0-9-]*)",
                )
                continue
            valid.append(identity)
            try:
                shown = self._directory.lookup(identity.handle).metadata.get("incarnation")
            except NotFound:
                continue
            if isinstance(shown, int) and not isinstance(shown, bool):
                seen[identity.name] = shown
        owner, counts = self._records.start([i.name for i in valid], seen)
        self._owner = owner
        for identity in configured:
            self._since[identity.name] = now
            identity.incarnation = counts.get(identity.name, 1)
            if identity.default_delivery and identity.idle_ttl is not None:
                log.warning(
                    "idle_ttl_ignored",
                    agent=identity.handle,
                    reason="the default-delivery agent never ends by idle_ttl",
                )
        for identity in valid:
            self._claim_configured(identity, owner)

    def _leftover(self, entry: Entry) -> bool:
        """Whether ``entry`` is a task this instance's previous run left (see the class)."""
        if entry.metadata.get(_MARK) != "task":
            return False
        started_by = entry.metadata.get("instance")
        return self._instance is None or started_by is None or started_by == self._instance

    async def sweep(self, gone: Callable[[str], bool]) -> list[str]:
        """End (reason ``restart``, the parent told) every task another instance started when
        ``gone(instance)`` says that instance is gone; the handles ended. Racing sweeps and a
        restart under the same id end each task once: only the one whose forced unregister
        finds the entry tells the parent."""
        ended: list[str] = []
        for entry in list(self._entries()):
            started_by = entry.metadata.get("instance")
            if (
                entry.metadata.get(_MARK) == "task"
                and isinstance(started_by, str)
                and started_by != self._instance
                and gone(started_by)
                and await self._end_leftover(entry)
            ):
                ended.append(entry.address)
        return ended

    def _claim_configured(self, identity: Identity, owner: str) -> None:
        directory = self._directory
        address = identity.handle
        try:
            old = directory.lookup(address)
        except NotFound:
            old = None
        metadata: dict[str, Any] = {
            **(old.metadata if old is not None else {}),
            _MARK: "configured",
            "incarnation": identity.incarnation,
        }
        fields: dict[str, Any] = {
            "token": owner,
            "holder": address,
            "tags": identity.tags,
            "description": identity.description,
            "metadata": metadata,
        }
        try:
            try:
                directory.claim(address, **fields)
            except HeldByAnotherOwner:
                log.error(
                    "agent_address_conflict",
                    agent=address,
                    reason="another owner token holds the configured agent's address; "
                    "Switchboard takes it over (check who else claims it)",
                )
                directory.unregister(address, force=True)
                directory.claim(address, **fields)
            # A claim marks the entry online; it is online only while a session is attached.
            directory.set_online(address, self._attachments.count(identity.name) > 0, force=True)
        except DirectoryError as exc:
            log.error("agent_not_listed", agent=address, reason=str(exc))
            return
        log.info(
            "agent_started", agent=address, kind="configured", incarnation=identity.incarnation
        )

    async def _end_leftover(self, entry: Entry) -> bool:
        """End a task a previous run left in the directory (reason ``restart``); False when
        its entry was gone already (someone else ended it)."""
        try:
            self._directory.unregister(entry.address, force=True)
        except NotFound:
            return False
        parent = entry.metadata.get("parent")
        told = None
        if isinstance(parent, str) and parent:
            text = result_text(entry.address, "restart", None)
            told = await self._tell(SYSTEM_SENDER, parent, text, entry.address)
        log.info("agent_ended", agent=entry.address, kind="task", reason="restart", told=told)
        return True

    # -- task agents --------------------------------------------------------------------------

    def live_task(self, name: str) -> Identity | None:
        """The live task agent ``name`` (a handle's ``@`` is ignored), or None when there is
        none or it is ending."""
        identity = self._roster.get(name)
        if identity is None or identity.kind != "task" or identity.name in self._ending:
            return None
        return identity

    def taken(self, address: str) -> bool:
        """Whether a live (or ending) agent, or the host's own mail, has ``address``'s name."""
        name = _name(address)
        return name in self._roster or name == SYSTEM_SENDER or name in self._ending

    def start_task(
        self,
        parent: str,
        address: str,
        *,
        description: str = "",
        deadline_seconds: float | None = None,
        idle_timeout_seconds: float | None = None,
        turn_limit: int | None = None,
        home: str | None = None,
    ) -> SpawnedTask:
        """Start the task agent at ``address`` (a valid agent address nobody live has) for the
        agent named ``parent``: claim the address under a fresh token, which is handed back
        and kept nowhere else, and add the task to the roster.

        Raises:
            DirectoryError: the directory refused the claim (``NameTaken``: another owner
                holds it); nothing was started.
        """
        name = _name(address)
        now = self._clock()
        deadline = now + deadline_seconds if deadline_seconds is not None else None
        parent_handle = _handle(parent)
        token = secrets.token_urlsafe(32)
        metadata: dict[str, object] = {_MARK: "task", "parent": parent_handle}
        if deadline is not None:
            metadata["deadline"] = deadline
        if self._instance is not None:
            metadata["instance"] = self._instance
        self._directory.claim(
            address,
            token=token,
            holder=address,
            tags=(TASK_TAG,),
            description=description,
            metadata=metadata,
        )
        # Online only once the task's worker attaches (the claim marked it online).
        self._directory.set_online(address, False, force=True)
        identity = Identity(
            name=name,
            handle=address,
            home=home,
            description=description,
            tags=(TASK_TAG,),
            kind="task",
            parent=_name(parent),
            deadline=deadline,
            idle_timeout=idle_timeout_seconds,
            turn_limit=turn_limit,
            token_digest=token_digest(token),
        )
        self._roster.add(identity)
        self._desks.pop(name, None)
        self._since[name] = now
        log.info(
            "agent_started",
            agent=address,
            kind="task",
            parent=parent_handle,
            deadline=deadline,
            idle_timeout=idle_timeout_seconds,
            turn_limit=turn_limit,
        )
        return SpawnedTask(
            handle=address,
            token=token,
            parent=parent_handle,
            deadline=deadline,
            idle_timeout=idle_timeout_seconds,
            turn_limit=turn_limit,
            home=home,
        )

    # -- ending -------------------------------------------------------------------------------

    async def end(
        self, name: str, reason: EndReason, *, result: str | None = None
    ) -> EndedAgent | None:
        """End the live agent ``name`` for ``reason`` (see :class:`Lifetimes`); None when it
        is not live or is already ending."""
        identity = self._roster.get(name)
        if identity is None or identity.name in self._ending:
            return None
        name = identity.name
        self._ending.add(name)
        try:
            told = None
            if identity.kind == "task" and identity.parent is not None:
                text = result_text(identity.handle, reason, result)
                told = await self._tell(name, _handle(identity.parent), text, identity.handle)
            self._roster.remove(name)
            self._desks.pop(name, None)
            self._since.pop(name, None)
            try:
                self._directory.unregister(identity.handle, force=True)
            except (NotFound, InvalidName):
                pass
            except DirectoryError as exc:
                log.warning("agent_address_not_released", agent=identity.handle, reason=str(exc))
            log.info(
                "agent_ended",
                agent=identity.handle,
                kind=identity.kind,
                reason=reason,
                incarnation=identity.incarnation,
                told=told,
            )
        finally:
            self._ending.discard(name)
        for child in [i for i in self._roster if i.kind == "task" and i.parent == name]:
            await self.end(child.name, "parent-ended")
        return EndedAgent(identity.handle, identity.kind, reason, told)

    async def _tell(self, sender: str, parent: str, text: str, task: str) -> str | None:
        """Mail ``text`` to ``parent``; the parent's handle, or None when it was refused."""
        try:
            await self._mail.deposit(sender, parent, text)
        except Refusal as exc:
            log.warning("task_result_undeliverable", agent=task, parent=parent, reason=exc.message)
            return None
        except Exception as exc:  # the store failed: the task ends all the same
            log.error("task_result_not_stored", agent=task, parent=parent, error=str(exc))
            return None
        return parent

    # -- the timer ----------------------------------------------------------------------------

    def _idle_since(self, name: str, now: float) -> float:
        """Since when ``name`` has been idle: its last activity, its start, or (first seen
        by a tick without a start-up) now."""
        active = self._attachments.last_active(name)
        since = self._since.setdefault(name, now)
        return since if active is None else max(active, since)

    def due(self, *, tasks: bool = True, configured: bool = True) -> list[tuple[str, EndReason]]:
        """The live agents whose time is up now, and why (of the kinds asked for)."""
        now = self._clock()
        out: list[tuple[str, EndReason]] = []
        for identity in self._roster:
            name = identity.name
            if name in self._ending or not (tasks if identity.kind == "task" else configured):
                continue
            if identity.kind == "task":
                desk = self._desks.get(name)
                turns = desk.turn.number if desk is not None else 0
                if identity.deadline is not None and now >= identity.deadline:
                    out.append((name, "deadline"))
                elif identity.turn_limit is not None and turns > identity.turn_limit:
                    out.append((name, "turn-limit"))
                elif (
                    identity.idle_timeout is not None
                    and now - self._idle_since(name, now) >= identity.idle_timeout
                ):
                    out.append((name, "idle-timeout"))
            elif (
                identity.idle_ttl is not None
                and not identity.default_delivery
                and self._attachments.count(name) == 0
                and now - self._idle_since(name, now) >= identity.idle_ttl
            ):
                out.append((name, "idle-ttl"))
        return out

    async def tick(self, *, tasks: bool = True, configured: bool = True) -> list[EndedAgent]:
        """End every agent (of the kinds asked for) whose time is up; what ended."""
        ended: list[EndedAgent] = []
        for name, reason in self.due(tasks=tasks, configured=configured):
            done = await self.end(name, reason)
            if done is not None:
                ended.append(done)
        return ended

    async def run(
        self,
        interval: float = TICK_SECONDS,
        *,
        tasks: bool = True,
        configured: bool = True,
        gone: Callable[[str], bool] | None = None,
    ) -> None:
        """Tick every ``interval`` seconds until cancelled (for the kinds asked for; with
        ``gone``, each tick first sweeps the tasks of instances that are gone)."""
        while True:
            await anyio.sleep(interval)
            try:
                if gone is not None:
                    await self.sweep(gone)
                await self.tick(tasks=tasks, configured=configured)
            except Exception:
                log.exception("lifetimes_tick_failed")
