"""Tune-out backlogs in the inbox: the notice that hands one over, and the reader's view.

What this module knows (channel-registry.md §6; docs/tools.md, "tune_out"):

- **Handing over** (:func:`owed_delivery`). An ended epoch's backlog comes first in its owner's
  next inbox read: a notice (``message_id`` ``tuneout-ended:<epochId>``, tag
  ``switchboard:tuneout-ended``, ``metadata.kind`` ``tuneout-ended``) whose text says why it
  ended and what arrived (the pure rules: :mod:`switchboard.tuneouts.rules.backlogs`),
  followed by the latest ``backlog_cap`` withheld messages, stamped
  ``metadata.tuneOut.epochId``. The backlog is a query of the store, never a copy.
- **The reader's view** (:func:`withheld_page`): the messages an epoch in effect has withheld
  so far, in pages.

What it deliberately does not know: when a backlog is owed or recorded as delivered
(:mod:`.read`, :mod:`.delivery`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Protocol, overload

from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.lifecycle.rules.decisions import ScopeKind, Source
from switchboard.store import StoredMessage
from switchboard.tuneouts.records import Settled, diverts_at_all
from switchboard.tuneouts.rules.backlogs import deliver_backlog
from switchboard.tuneouts.rules.epochs import ActiveTuneOut

__all__ = [
    "NOTICE_KIND",
    "NOTICE_TAG",
    "BacklogPage",
    "Reads",
    "everything",
    "owed_delivery",
    "withheld_page",
]

NOTICE_KIND: Final = "tuneout-ended"
NOTICE_TAG: Final = "switchboard:tuneout-ended"
_PAGE = 500


class Reads(Protocol):
    """What a backlog reads of the message store."""

    @property
    def latest_seq(self) -> int: ...

    async def read(self, after_seq: int, limit: int = 100) -> list[StoredMessage]: ...


@dataclass(frozen=True, slots=True)
class BacklogPage:
    """A page of an epoch's withheld messages; ``cursor`` is where the next page starts."""

    messages: list[StoredMessage]
    cursor: int
    more: bool


def everything(message: StoredMessage) -> bool:
    """The routing of a reader that sees every message."""
    return True


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


async def owed_delivery(
    store: Reads,
    registry: ChannelRegistry,
    settled: Settled,
    routed: Callable[[StoredMessage], bool] = everything,
) -> list[StoredMessage]:
    """The notice of the ended epoch ``settled`` and the messages it hands over (those routed
    to its owner by ``routed``)."""
    epoch = settled.epoch
    last, total = await _scan_tail(store, settled, routed)
    shown = registry.names.quoted_shown(epoch.scope.ref)
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


async def _scan_tail(
    store: Reads, settled: Settled, routed: Callable[[StoredMessage], bool]
) -> tuple[list[StoredMessage], int]:
    """The last ``backlog_cap`` messages an ended epoch withheld from its owner (those routed
    to it), and how many it did."""
    kept: deque[StoredMessage] = deque(maxlen=settled.epoch.backlog_cap)
    total = 0
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


async def withheld_page(
    store: Reads,
    held: ActiveTuneOut,
    after_seq: int,
    limit: int,
    routed: Callable[[StoredMessage], bool] = everything,
) -> BacklogPage:
    """Up to ``limit`` messages the epoch in effect has withheld with seq above ``after_seq``
    (those ``routed`` lets through), for its reader (or owner)."""
    scope = held.epoch.scope
    after = max(after_seq, held.epoch.started_at_sequence or 0)
    end = store.latest_seq
    found: list[StoredMessage] = []
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
