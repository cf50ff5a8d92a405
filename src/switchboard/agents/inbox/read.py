"""Every agent's inbox read: routing, tune-out diversion, wakes and owed backlogs.

:class:`InboxReader` reads what lies above an agent's acknowledged position: what is not routed
to it is skipped, what a tune-out diverts is withheld (an O(1) check per message), a withheld
message that addresses the owner wakes its tune-out, and owed backlogs come first
(docs/agents.md, "Routing"; channel-registry.md §6). When the host stops,
:meth:`InboxReader.end_waits` answers every read waiting for messages at once.

What it deliberately does not know: MCP, acknowledgement and cursors (:mod:`.delivery`), turns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from logging import DEBUG
from typing import Protocol

import anyio
import structlog

from switchboard.agents.inbox.backlogs import everything, owed_delivery
from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.refusals.refusal import Refusal
from switchboard.runtime.logs import enabled_for
from switchboard.store import MessageStoreProtocol, StoredMessage
from switchboard.tuneouts.records import Settled, diverts_at_all, is_addressed
from switchboard.tuneouts.rules.epochs import TuneOutBook

__all__ = ["InboxPage", "InboxReader", "InboxRouter", "InboxTuneOuts"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class InboxPage:
    """What one inbox read returns: owed backlogs first, then new messages; the position it
    sorted up to (``cursor``), and the epochs whose backlogs it carries (``notices``)."""

    messages: list[StoredMessage]
    cursor: int
    notices: tuple[str, ...] = ()


class InboxRouter(Protocol):
    """Which messages are routed to which agent
    (:class:`~switchboard.agents.inbox.routing.Router` provides it)."""

    def reader(self, agent: str) -> Callable[[StoredMessage], bool]: ...


def _ref(message: StoredMessage) -> ChannelRef:
    return ChannelRef(message.server_id, message.channel_id)


class InboxTuneOuts(Protocol):
    """What an inbox read needs of the tune-outs
    (:class:`~switchboard.tuneouts.host.TuneOutHost` provides it)."""

    @property
    def store(self) -> MessageStoreProtocol: ...

    @property
    def registry(self) -> ChannelRegistry: ...

    @property
    def book(self) -> TuneOutBook: ...

    async def expire_due(self) -> list[Settled]: ...

    async def wake(self, epoch_id: str) -> Settled | None: ...

    def owed(self, owner: str) -> Iterator[Settled]: ...

    def withholding(self, owner: str) -> tuple[Settled, ...]: ...

    async def mark_delivered(self, epoch_ids: Iterable[str]) -> None: ...

    def read_upto(self, agent: str, seq: int) -> None: ...

    def sorted_upto(self, agent: str) -> int: ...

    def forget_passed(self, owner: str, cursor: int) -> None: ...


class InboxReader:
    """Reads every agent's inbox.

    What it knows (docs/agents.md, "Routing"; channel-registry.md §6):

    - **Routing.** A message not routed to the reading agent is skipped before anything else: it is
      neither shown, withheld nor a wake, and the cursor passes it.
    - **Diversion.** A tune-out diverts, from its owner's inbox, the channel traffic its scope
      covers that the store committed after the epoch began (a seq above ``started_at_sequence``)
      and, once it ended, up to its ``end_seq``. The check per message is O(1): the book's
      ``diverts(ref, agent)`` plus the owner's few ended epochs whose range its cursor has not
      passed. Push events and mail are never diverted.
    - **Wakes.** A read in which a tune-out withheld a message that addresses the owner is one wake
      of that epoch (counted once per message, never on a redelivery); the first wake past the
      epoch's budget ends it in that very read. Diverted traffic alone never ends a wait.
    - **Owed backlogs** (:mod:`.backlogs`) come first; they are recorded as delivered only when the
      agent acknowledges the read that carried them (:meth:`InboxReader.acknowledge`).
    - **Stopping.** :meth:`InboxReader.end_waits` (the host is stopping) answers every read that
      waits for messages at once, with what it has, and no read waits after it.
    """

    def __init__(self, host: InboxTuneOuts, *, router: InboxRouter | None = None) -> None:
        self._host = host
        # Which messages are routed to which agent (docs/agents.md, "Routing"); None: all.
        self._router = router
        # The scopes of the reads waiting for messages now, and whether waiting has ended.
        self._waits: set[anyio.CancelScope] = set()
        self._ended = False

    def end_waits(self) -> None:
        """The host is stopping: every read waiting for messages returns now with what it has
        (nothing, or a backlog it carries), and no later read waits."""
        self._ended = True
        for scope in list(self._waits):
            scope.cancel()

    async def read(
        self,
        agent: str,
        *,
        after: int,
        fresh_after: int = 0,
        wait_seconds: float = 0.0,
        limit: int = 50,
    ) -> InboxPage:
        """Read ``agent``'s inbox past ``after`` (its acknowledged position), diverting what its
        tune-outs withhold. Nothing is acknowledged or recorded as delivered here: see
        :meth:`acknowledge`.

        The caller holds the agent's inbox lock. Owed backlogs come first and do not count
        against ``limit``. With ``wait_seconds``, a read that finds nothing for the agent
        (only diverted traffic, or nothing) waits for more until the time is up. A message at
        or below ``fresh_after`` (handed out before, by this process or an earlier one) or
        already sorted in this process counts no wake.
        """
        host, store = self._host, self._host.store
        cursor = after
        with suppress(Refusal):  # logged; the epochs stay and the next read retries
            await host.expire_due()
        carried: dict[str, None] = {}
        notices = await self._deliver(agent, carried)
        visible: list[StoredMessage] = []
        deadline = anyio.current_time() + wait_seconds
        while True:
            if store.latest_seq <= cursor:
                remaining = deadline - anyio.current_time()
                if notices or remaining <= 0 or self._ended:
                    break
                if not await self._wait(agent, cursor, remaining):
                    break
            batch = await store.read(cursor, limit)
            if not batch:
                break
            cursor = batch[-1].seq
            fresh = max(fresh_after, host.sorted_upto(agent))
            woken = self._partition(agent, batch, visible, fresh)
            host.read_upto(agent, cursor)
            if woken and await self._wake(woken):
                notices += await self._deliver(agent, carried)
            if notices or visible:
                break
        return InboxPage(notices + visible, cursor, tuple(carried))

    async def _wait(self, agent: str, cursor: int, seconds: float) -> bool:
        """Wait up to ``seconds`` for a message above ``cursor``; False when none came (the
        time ran out, or :meth:`end_waits` ended the wait)."""
        if enabled_for(DEBUG):
            log.debug("inbox_waiting", agent=agent, seconds=round(seconds, 3))
        with anyio.CancelScope() as scope:
            self._waits.add(scope)
            try:
                return await self._host.store.wait_for_new(cursor, seconds)
            finally:
                self._waits.discard(scope)
        return False  # ended by end_waits

    async def acknowledge(self, agent: str, cursor: int, notices: Iterable[str]) -> None:
        """``agent`` has what a read handed it up to ``cursor``, and the backlogs of the
        epochs ``notices``: record those as delivered (a failure leaves them owed) and forget
        the delivered epochs whose range lies at or below ``cursor``."""
        epoch_ids = list(notices)
        if epoch_ids:
            with suppress(Refusal):  # logged; still owed, the next read hands them over
                await self._host.mark_delivered(epoch_ids)
        self._host.forget_passed(agent, cursor)

    def _partition(
        self, agent: str, batch: list[StoredMessage], visible: list[StoredMessage], fresh: int
    ) -> dict[str, None]:
        """Append what ``agent`` sees to ``visible``; return the epochs woken, in order, by
        messages above ``fresh`` (a message sorted before never wakes again)."""
        host = self._host
        book = host.book
        ended = host.withholding(agent)
        if self._router is not None:  # not routed to the agent: skipped, the cursor passes it
            batch = list(filter(self._router.reader(agent), batch))
        if not len(book) and not ended:
            visible.extend(batch)
            return {}
        woken: dict[str, None] = {}
        for m in batch:
            if not diverts_at_all(m):
                visible.append(m)
                continue
            held = book.diverts(_ref(m), agent)
            if held is not None and m.seq > (held.epoch.started_at_sequence or 0):
                if m.seq > fresh and is_addressed(m.tags):
                    woken[held.epoch.epoch_id] = None
                continue
            if not any(s.withheld(m) for s in ended):
                visible.append(m)
        return woken

    async def _wake(self, woken: dict[str, None]) -> bool:
        """Count one wake of each epoch; True when a wake ended one."""
        ended = False
        for epoch_id in woken:
            with suppress(Refusal):  # logged; the wake is not counted
                ended = await self._host.wake(epoch_id) is not None or ended
        return ended

    async def _deliver(self, agent: str, carried: dict[str, None]) -> list[StoredMessage]:
        """The notices and raw backlogs owed to ``agent`` that this read does not carry yet;
        their epochs are added to ``carried`` (recorded as delivered only on acknowledgement)."""
        owed = [s for s in self._host.owed(agent) if s.epoch_id not in carried]
        out: list[StoredMessage] = []
        host = self._host
        for settled in owed:
            owner = settled.epoch.owner
            routed = everything if self._router is None else self._router.reader(owner)
            out += await owed_delivery(host.store, host.registry, settled, routed)
            carried[settled.epoch_id] = None
        return out
