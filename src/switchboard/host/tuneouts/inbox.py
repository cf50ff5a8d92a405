"""The inbox side of tune-outs: diversion, wakes, owed backlogs and the reader's view.

What this module knows (channel-registry.md §6; docs/tools.md, "tune_out"):

- **Diversion.** A tune-out diverts, from its owner's inbox, the channel traffic its scope
  covers that the store committed after the epoch began (a sequence number above
  ``started_at_sequence``), and, once it ended, up to its ``end_seq``. The messages stay in the
  store: the backlog is a query of it, never a copy. The check per message is O(1): the book's
  ``diverts(ref, agent)`` plus the owner's few ended epochs whose range its cursor has not
  passed. Push events are never diverted.
- **Wakes.** Over MCP an agent is woken by an inbox read that returns something for it. A read
  in which a tune-out withheld a message that addresses the owner (its tags include
  ``chat:addressed`` or a tag implying it) is one wake of that epoch; the first wake past the
  epoch's wake budget ends it, in that very read. A read never returns just because diverted
  traffic arrived: with ``wait_seconds`` it keeps waiting. A message is counted as a wake
  once: a read that sorts it again (a redelivery) does not count it again.
- **Delivery.** Every ended epoch's backlog is owed to its owner and comes first in the
  owner's next inbox read: a notice (``message_id`` ``tuneout-ended:<epochId>``, tag
  ``switchboard:tuneout-ended``, ``metadata.kind`` ``tuneout-ended``) whose text says why it
  ended and what arrived, followed by the latest ``backlog_cap`` withheld messages (stamped
  ``metadata.tuneOut.epochId``). Past the cap the notice carries the reader's digest and says
  how many were held back. A delivery is recorded when the agent acknowledges the read that
  carried it (:meth:`TuneOutInbox.acknowledge`), never before: until then every read carries
  it again, and if recording fails it stays owed for the next read.
- **The reader's view**: the messages an epoch in effect has withheld so far, in pages.
- **Stopping.** :meth:`TuneOutInbox.end_waits` (the host is stopping) answers every read that
  waits for messages at once, with what it has, and no read waits after it.
- **Routing.** Given an :class:`InboxRouter`, a message not routed to the reading agent
  (docs/agents.md, "Routing") is skipped before any of this: it is neither shown, withheld nor
  a wake, and the cursor passes it. A backlog holds only what is routed to the epoch's owner.

What it deliberately does not know: MCP and tool results, the decisions themselves
(:mod:`~switchboard.host.tuneouts.host`), and agents' turns.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from logging import DEBUG
from typing import Protocol, overload

import anyio
import structlog

from switchboard.channels import ChannelRef, ChannelRegistry, Source, TuneOutBook
from switchboard.channels.lifecycle.decisions import ScopeKind
from switchboard.channels.tuneouts.delivery import deliver_backlog
from switchboard.channels.tuneouts.epochs import ActiveTuneOut
from switchboard.host.refusal import Refusal
from switchboard.host.tuneouts.records import Settled, diverts_at_all, is_addressed
from switchboard.logging import enabled_for
from switchboard.store import MessageStore, StoredMessage

__all__ = [
    "NOTICE_KIND",
    "NOTICE_TAG",
    "BacklogPage",
    "InboxPage",
    "InboxRouter",
    "InboxTuneOuts",
    "TuneOutInbox",
]

log = structlog.get_logger(__name__)

NOTICE_KIND = "tuneout-ended"
NOTICE_TAG = "switchboard:tuneout-ended"
_PAGE = 500


@dataclass(frozen=True, slots=True)
class InboxPage:
    """What one inbox read returns: owed backlogs first, then new messages; the position it
    sorted up to (``cursor``), and the epochs whose backlogs it carries (``notices``)."""

    messages: list[StoredMessage]
    cursor: int
    notices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BacklogPage:
    """A page of an epoch's withheld messages; ``cursor`` is where the next page starts."""

    messages: list[StoredMessage]
    cursor: int
    more: bool


class _Tail(Sequence[StoredMessage]):
    """A backlog known by its length and its last messages (what ``deliver_backlog`` reads)."""

    def __init__(self, total: int, last: list[StoredMessage]) -> None:
        self._total = total
        self._last = last

    def __len__(self) -> int:
        return self._total

    @overload
    def __getitem__(self, index: int) -> StoredMessage: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[StoredMessage]: ...
    def __getitem__(self, index: int | slice) -> StoredMessage | Sequence[StoredMessage]:
        first = self._total - len(self._last)
        if isinstance(index, slice):
            start, stop, step = index.indices(self._total)
            if start < first or step != 1:
                raise IndexError("only the kept tail of the backlog can be read")
            return self._last[start - first : stop - first]
        if not first <= index < self._total:
            raise IndexError("only the kept tail of the backlog can be read")
        return self._last[index - first]

    def __iter__(self) -> Iterator[StoredMessage]:
        return iter(self._last)


def _ref(message: StoredMessage) -> ChannelRef:
    return ChannelRef(message.server_id, message.channel_id)


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


class InboxRouter(Protocol):
    """Which messages are routed to which agent
    (:class:`~switchboard.host.agents.routing.Router` provides it)."""

    def reader(self, agent: str) -> Callable[[StoredMessage], bool]: ...


def _everything(message: StoredMessage) -> bool:
    return True


class InboxTuneOuts(Protocol):
    """What an inbox read needs of the tune-outs
    (:class:`~switchboard.host.tuneouts.host.TuneOutHost` provides it)."""

    @property
    def store(self) -> MessageStore: ...

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


class TuneOutInbox:
    """Reads inboxes through the tune-outs (see the module docstring)."""

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
        for settled in owed:
            out += await self._delivery(settled)
            carried[settled.epoch_id] = None
        return out

    async def _delivery(self, settled: Settled) -> list[StoredMessage]:
        epoch = settled.epoch
        last, total = await self._scan_tail(settled)
        shown = self._host.registry.names.quoted_shown(epoch.scope.ref)
        held = ActiveTuneOut(epoch, Source.AGENT_TOOL)  # deliver_backlog reads the epoch only
        delivery = deliver_backlog(
            held, settled.reason, _Tail(total, last), shown=shown, digest=settled.digest
        )
        note = delivery.note
        if settled.replaced:
            note += " You started a new tune-out in its place, which is in effect now."
        ref = epoch.scope.ref
        channel = ref.channel_id if epoch.scope.kind is ScopeKind.CHANNEL else ""
        notice = StoredMessage(
            seq=settled.end_seq,
            server_id=ref.server_id,
            channel_id=channel,
            message_id=f"{NOTICE_KIND}:{epoch.epoch_id}",
            thread_id=None,
            author_id="switchboard",
            author_name="Switchboard",
            timestamp=_iso(settled.ended_at),
            content=[{"type": "text", "text": note}],
            metadata={
                "kind": NOTICE_KIND,
                "epochId": epoch.epoch_id,
                "reason": settled.reason.value,
                "scope": epoch.scope.to_json(),
                "withheld": total,
                "delivered": len(delivery.messages),
                "heldBack": delivery.held_back,
                "replaced": settled.replaced,
            },
            tags=[NOTICE_TAG],
            received_at=settled.ended_at,
        )
        stamp = {"epochId": epoch.epoch_id}
        raw = [
            dataclasses.replace(m, metadata={**(m.metadata or {}), "tuneOut": stamp})
            for m in delivery.messages
        ]
        return [notice, *raw]

    async def _scan_tail(self, settled: Settled) -> tuple[list[StoredMessage], int]:
        """The last ``backlog_cap`` messages an ended epoch withheld from its owner (those
        routed to it), and how many it did."""
        store = self._host.store
        kept: deque[StoredMessage] = deque(maxlen=settled.epoch.backlog_cap)
        total = 0
        routed = _everything if self._router is None else self._router.reader(settled.epoch.owner)
        after, end = settled.start_seq, settled.end_seq
        while after < end:
            page = await store.read(after, min(_PAGE, end - after))
            if not page:
                break
            for m in page:
                if m.seq <= end and settled.withheld(m) and routed(m):
                    total += 1
                    kept.append(m)
            after = page[-1].seq
        return list(kept), total

    async def backlog(self, held: ActiveTuneOut, after_seq: int, limit: int) -> BacklogPage:
        """Up to ``limit`` messages the epoch in effect has withheld with seq above
        ``after_seq``, for its reader (or owner)."""
        store = self._host.store
        scope = held.epoch.scope
        after = max(after_seq, held.epoch.started_at_sequence or 0)
        end = store.latest_seq
        found: list[StoredMessage] = []
        routed = _everything if self._router is None else self._router.reader(held.epoch.owner)
        while after < end and len(found) < limit:
            page = await store.read(after, min(_PAGE, end - after))
            if not page:
                break
            for m in page:
                after = m.seq
                if diverts_at_all(m) and scope.covers(_ref(m)) and routed(m):
                    found.append(m)
                    if len(found) >= limit:
                        break
        return BacklogPage(found, after, after < end)
