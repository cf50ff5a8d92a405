"""At-least-once delivery of every agent's inbox: :class:`InboxDelivery`.

Each agent's acknowledged position is durable (its cursor); a read returns what lies above it
and moves nothing, and messages stay owed until a later read acknowledges them, by ``after`` or
by being the same reader's next read (docs/tools.md, "Delivery"). Why: an agent that restarts or
loses an answer gets everything unacknowledged again, flagged ``redelivered``, and a cancelled
read consumes nothing. A cancel that lost its race with the answer takes the read back
(:meth:`InboxDelivery.take_back`) while it is still its reader's latest: the page comes again.

What it deliberately does not know: MCP (a reader is any weak-referenceable object), turns,
and how tune-outs divert traffic.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import anyio
import structlog

from switchboard.agents.inbox.backlogs import NOTICE_KIND
from switchboard.agents.inbox.read import InboxPage, InboxReader
from switchboard.refusals.refusal import Refusal, RefusalKind
from switchboard.store import MessageStoreProtocol, StoredMessage

__all__ = ["DIRECT_READER", "InboxDelivery", "InboxRead", "PageBudget", "Reader"]

log = structlog.get_logger(__name__)

_PENDING = 64
"""How many reads' carried tune-out backlogs are remembered for an explicit ``after``."""


class Reader:
    """A reader of an inbox that is not an MCP connection (host code, tests); any
    weak-referenceable object serves as a reader."""

    __slots__ = ("__weakref__", "name")

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Reader({self.name!r})"


DIRECT_READER = Reader("direct")
"""The reader of host calls that name none: consecutive such reads acknowledge each other."""


@dataclass(frozen=True, slots=True)
class InboxRead:
    """One inbox read.

    Attributes:
        messages: Owed tune-out backlogs first, then messages above the acknowledged position.
        cursor: The token to acknowledge this read with: the highest seq it sorted (shown or
            withheld by a tune-out); the acknowledged position when it sorted nothing.
        more: More messages are waiting above ``cursor``.
        redelivered: One flag per message: a read handed it out before.
        acknowledged: The acknowledged position after this read's own acknowledgement.
    """

    messages: list[StoredMessage]
    cursor: int
    more: bool
    redelivered: tuple[bool, ...]
    acknowledged: int


@dataclass(frozen=True, slots=True)
class PageBudget:
    """How much one read may hand out: ``max_bytes`` in all, each message costing ``size(m)``
    (the reader's measure of what the message adds to its answer)."""

    max_bytes: int
    size: Callable[[StoredMessage], int]


@dataclass(frozen=True, slots=True)
class _Handed:
    """What one read handed out: its token, the epochs whose backlogs it carried, and the
    acknowledged position it read from (``base``; equal to ``token`` when it carried only
    backlogs, so its token is also the token of the read before it), and the request it
    answered (its reader's id for it, or None)."""

    token: int
    notices: tuple[str, ...]
    base: int
    request: Hashable | None = None


class _AgentInbox:
    """The delivery state of one agent (see :class:`InboxDelivery`)."""

    __slots__ = ("carried", "handed", "lock", "pending")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.handed: weakref.WeakKeyDictionary[object, _Handed] = weakref.WeakKeyDictionary()
        self.pending: deque[_Handed] = deque(maxlen=_PENDING)
        self.carried: set[str] = set()


class InboxDelivery:
    """Reads agents' inboxes at least once.

    What it knows (docs/tools.md, "Delivery"):

    - **Owed until acknowledged.** Each agent has an acknowledged position, durable in the store
      (its cursor): every message at or below it is done with. A read returns what lies above it and
      moves nothing; the messages stay owed until the agent acknowledges the read.
    - **Acknowledging.** A read that passes ``after`` (the ``cursor`` token of an earlier answer)
      acknowledges everything up to it, explicitly. A read that passes no ``after`` acknowledges
      what the previous read *of the same reader* returned: a reader is an MCP connection, so an
      agent that reads on over one connection never sees the same page twice, while a new connection
      (the agent restarted or reconnected) gets everything unacknowledged again. A read that returns
      nothing acknowledges its own position at once (there is nothing to lose). A token older than
      the acknowledged position acknowledges nothing new. A read that carried only tune-out backlogs
      shares its token with the read before it, so that token acknowledges those backlogs only from
      the reader the read was handed to.
    - **Nothing consumed by a read that did not finish.** A read that is cancelled (its client went
      away, its call was cancelled or timed out) records nothing, so nothing is acknowledged on its
      account.
    - **Redeliveries are marked.** The highest seq any read of the agent handed out is durable too
      (the store's delivered mark); a message at or below it, or a tune-out backlog carried before,
      is a redelivery, and the answer flags it per message.
    - **Tune-out backlogs** (:mod:`.backlogs`) follow the same rule: they are recorded as delivered
      only when the read that carried them is acknowledged.
    - **Pages within a budget.** A read given a :class:`PageBudget` is cut short at a message
      boundary (a tune-out backlog, its notice with its messages, counts as one) before anything is
      recorded, so its cursor acknowledges only what it returned; it always returns at least one.
    """

    def __init__(self, store: MessageStoreProtocol, inbox: InboxReader) -> None:
        self._store = store
        self._inbox = inbox
        self._agents: dict[str, _AgentInbox] = {}

    async def read(
        self,
        agent: str,
        *,
        after: int | None = None,
        reader: object = DIRECT_READER,
        wait_seconds: float = 0.0,
        limit: int = 50,
        budget: PageBudget | None = None,
        request: Hashable | None = None,
    ) -> InboxRead:
        """Acknowledge (``after``, else ``reader``'s previous read), then read what is owed,
        cut at a message boundary to ``budget`` when one is given. ``request`` names the call
        this read answers, for :meth:`take_back`.

        Raises:
            Refusal: ``unknown-cursor`` when ``after`` is negative or beyond the newest stored
                message; nothing is acknowledged then.
        """
        store = self._store
        if after is not None and not 0 <= after <= store.latest_seq:
            raise Refusal(
                RefusalKind.UNKNOWN_CURSOR,
                f"no inbox read handed out the cursor {after}: the newest message is "
                f"{store.latest_seq}, so nothing was acknowledged or read",
                after=after,
                latest=store.latest_seq,
            )
        state = self._agents.setdefault(agent, _AgentInbox())
        async with state.lock:
            acked = await self._acknowledge(agent, state, after, reader)
            delivered = await store.get_delivered(agent)
            page = await self._inbox.read(
                agent, after=acked, fresh_after=delivered, wait_seconds=wait_seconds, limit=limit
            )
            cut = False
            if budget is not None:
                page, cut = _within(page, budget, acked)
            # Nothing below this line awaits before the answer is formed, except the durable
            # marks: a read cancelled before them has recorded nothing.
            redelivered = tuple(self._redelivered(page.messages, state.carried, delivered))
            if not page.messages:
                if page.cursor > acked:
                    await store.set_cursor(agent, page.cursor)
                    acked = page.cursor
                    await self._inbox.acknowledge(agent, acked, ())
                return InboxRead([], page.cursor, store.latest_seq > page.cursor, (), acked)
            if page.cursor > delivered:
                await store.set_delivered(agent, page.cursor)
            handed = _Handed(page.cursor, page.notices, acked, request)
            state.handed[reader] = handed
            if page.notices:
                state.pending.append(handed)
                state.carried.update(page.notices)
            more = cut or store.latest_seq > page.cursor
            return InboxRead(page.messages, page.cursor, more, redelivered, acked)

    def take_back(self, agent: str, reader: object, request: Hashable) -> bool:
        """The call ``request`` of ``reader`` was cancelled after its read answered: forget the
        read's record if it is still ``reader``'s latest, so the next read acknowledges nothing
        on its account and hands its page out again (flagged redelivered).

        Synchronous: a cancel is taken back before the reader's next read can acknowledge.

        Returns:
            Whether a record was taken back.
        """
        state = self._agents.get(agent)
        handed = None if state is None else state.handed.get(reader)
        if state is None or handed is None or handed.request != request:
            return False
        del state.handed[reader]
        log.info("inbox_read_taken_back", agent=agent, cursor=handed.token)
        return True

    async def _acknowledge(
        self, agent: str, state: _AgentInbox, after: int | None, reader: object
    ) -> int:
        """Acknowledge what this read acknowledges; return the acknowledged position."""
        store = self._store
        acked = await store.get_cursor(agent)
        previous = state.handed.pop(reader, None)
        notices: Iterable[str] = ()
        if after is not None:
            target = after
            notices = [
                n for h in state.pending if _acknowledged_by(h, after, previous) for n in h.notices
            ]
        elif previous is not None:
            target = previous.token
            notices = previous.notices
        else:
            return acked
        notices = list(dict.fromkeys(notices))
        if target > acked:
            await store.set_cursor(agent, target)
            acked = target
        if notices:
            kept = [h for h in state.pending if not set(h.notices) <= set(notices)]
            state.pending.clear()
            state.pending.extend(kept)
        await self._inbox.acknowledge(agent, acked, notices)
        log.debug("inbox_acknowledged", agent=agent, cursor=acked, explicit=after is not None)
        return acked

    @staticmethod
    def _redelivered(
        messages: list[StoredMessage], carried: set[str], delivered: int
    ) -> Iterable[bool]:
        for m in messages:
            epoch = _backlog_epoch(m)
            yield epoch in carried if epoch is not None else m.seq <= delivered


def _acknowledged_by(handed: _Handed, after: int, previous: _Handed | None) -> bool:
    """Whether an explicit ``after`` acknowledges the backlogs ``handed`` carried.

    A token above ``handed``'s came from a later read, which carried every backlog still owed
    again. Its own token proves it was received only when it is unique: when the read sorted
    something new (``token > base``). A read that carried only backlogs shares its token with
    the read before it, so that token acknowledges its backlogs only from the reader it was
    handed to (``previous``); from another reader (the agent restarted, its answer was lost)
    the backlogs are owed again.
    """
    if handed.token < after:
        return True
    return handed.token == after and (handed.token > handed.base or handed is previous)


def _within(page: InboxPage, budget: PageBudget, acked: int) -> tuple[InboxPage, bool]:
    """``page`` cut to ``budget`` at a unit boundary, and whether it was cut.

    A unit is one message, or one carried tune-out backlog (its notice and its messages, which
    are acknowledged together). The first unit is kept whatever it costs, so every read makes
    progress. A cut page's cursor is the seq of its last plain message (the acknowledged
    position when it kept only backlogs): acknowledging it acknowledges nothing it left out.
    """
    carried = set(page.notices)
    units: list[list[StoredMessage]] = []
    unit_epoch: str | None = None
    for m in page.messages:
        epoch = _backlog_epoch(m)
        if epoch is not None and epoch in carried and epoch == unit_epoch:
            units[-1].append(m)
            continue
        unit_epoch = epoch if epoch is not None and epoch in carried else None
        units.append([m])
    spent, kept = 0, 0
    for unit in units:
        cost = sum(budget.size(m) for m in unit)
        if kept and spent + cost > budget.max_bytes:
            break
        spent += cost
        kept += 1
    if kept == len(units):
        return page, False
    messages = [m for unit in units[:kept] for m in unit]
    epochs = {_backlog_epoch(m) for m in messages}
    notices = tuple(n for n in page.notices if n in epochs)
    plain = [m.seq for m in messages if _backlog_epoch(m) not in carried]
    cursor = plain[-1] if plain else acked
    return InboxPage(messages, cursor, notices), True


def _backlog_epoch(m: StoredMessage) -> str | None:
    """The tune-out epoch whose backlog carries ``m`` (a notice or a withheld message)."""
    meta = m.metadata
    if not meta:
        return None
    if meta.get("kind") == NOTICE_KIND and m.author_id == "switchboard":
        epoch = meta.get("epochId")
        return epoch if isinstance(epoch, str) else None
    stamp = meta.get("tuneOut")
    if isinstance(stamp, dict) and isinstance(stamp.get("epochId"), str):
        return str(stamp["epochId"])
    return None
