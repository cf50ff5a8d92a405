"""Watching agents' inboxes: :class:`InboxWatchers`, woken by the store's committed head.

A watcher is told of the messages committed for its agent, in commit order (docs/tools.md,
"Push"). Why the head: what this process commits is told at once from what the committer had
in hand, and a head that moved with nothing told of it (a commit made by another instance, a
direct append) is read back from the store, so the watchers do not depend on in-process events.

What it deliberately does not know: MCP and how a push is sent (``agents.tools.push``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

import anyio
import structlog

from switchboard.agents.inbox.routing import Router, message_text_of
from switchboard.channels import ChannelRef
from switchboard.events import EventBus, HostEvent, MessagesAccepted, PushAccepted
from switchboard.store import StoredMessage
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.wire import StoredSlice
from switchboard.tuneouts.records import diverts_at_all
from switchboard.tuneouts.rules.epochs import TuneOutBook

__all__ = ["SETTLE_SECONDS", "Arrival", "Heads", "InboxWatchers", "message_text"]

log = structlog.get_logger(__name__)

SETTLE_SECONDS: Final = 0.05
"""How long a head move waits for the committer in this process to tell of it before the
store is read instead."""

_PAGE = 500


@dataclass(frozen=True, slots=True)
class Arrival:
    """A message just committed for the agent, as a watcher is told of it.

    Attributes:
        ref: Its channel (``channel_id`` empty for a push event that names none).
        message_id: Its stable id (the ``message_id`` of the inbox read that carries it).
        author: The author's name as the connector gave it.
        text: Its text blocks, joined by newlines.
        timestamp: When it was written, as the connector gave it.
        thread_id: The thread it belongs to, if any.
    """

    ref: ChannelRef
    message_id: str
    author: str
    text: str
    timestamp: str
    thread_id: str | None = None


def message_text(message: StoredMessage) -> str:
    """The text blocks of ``message`` joined by newlines (other blocks are left out)."""
    return message_text_of(message.content)


class Heads(Protocol):
    """What the watchers read of the message store: its head, and the messages below it."""

    @property
    def latest_seq(self) -> int: ...

    def watch_head(self, listener: Callable[[int], None]) -> None: ...

    async def read_slices(self, after_seq: int, limit: int = 100) -> list[StoredSlice]: ...


class Diversions(Protocol):
    """Where the tune-outs in effect are (:class:`~switchboard.tuneouts.host.TuneOutHost`)."""

    @property
    def book(self) -> TuneOutBook: ...


class _Watch:
    """One watcher of one agent's inbox."""

    __slots__ = ("agent", "details", "listener")

    def __init__(
        self,
        agent: str,
        listener: Callable[[Sequence[Arrival]], None],
        details: Callable[[], bool] | None,
    ) -> None:
        self.agent = agent
        self.listener = listener
        self.details = details


class InboxWatchers:
    """Every inbox watcher of the host.

    What it knows (docs/tools.md, "Push"):

    - **What a watcher is told.** The messages committed for its agent, in commit order, as
      :class:`Arrival` values: routed to the agent (docs/agents.md, "Routing"), and not diverted by
      a tune-out in effect (push events and mail never are). Telling is not delivering: the inbox
      read hands messages out and acknowledges them. A watcher that wants only *that* something
      arrived (its ``details`` answers False) is told an empty sequence, once per batch.
    - **Woken by the head.** The store reports every move of its committed head. Whatever was
      committed in this process is told at once from what the committer had in hand (a
      ``MessagesAccepted`` or ``PushAccepted`` event, mail through :meth:`InboxWatchers.arrived`),
      so the ingest path reads nothing back. A head that moved with nothing told of it (a commit
      made elsewhere: another instance, a direct append) is read from the store after
      :data:`SETTLE_SECONDS` and told the same way. Each message is told once and in seq order:
      commits are answered out of seq order at times (a batch committed at once is answered
      before a group held earlier), so a batch waits for the batches before it to be told.

    Args:
        store: The message store (its head, and the messages a catch-up reads).
        router: Which messages are routed to which agent.
        tuneouts: The tune-outs in effect.
        events: The host's bus; the watchers follow it from the first :meth:`watch` on, after
            every listener subscribed before.
    """

    #: The events it takes (it is subscribed to only these).
    OBSERVES: ClassVar[tuple[type, ...]] = (MessagesAccepted, PushAccepted)

    def __init__(
        self, store: Heads, router: Router, tuneouts: Diversions, events: EventBus
    ) -> None:
        self._store = store
        self._events = events
        self._router = router
        self._tuneouts = tuneouts
        self._watches: list[_Watch] = []
        #: Every message up to here has been told (or was committed before anyone watched).
        self._told = store.latest_seq
        self._head = self._told
        self._due = False
        self._wake = anyio.Event()
        #: Batches committed in this process and not yet told, as ``first seq: (last seq,
        #: tell)``: they wait for the batches before them.
        self._waiting: dict[int, tuple[int, Callable[[int], None]]] = {}
        #: How many messages were read back from the store rather than told by the committer.
        self.read_back = 0
        store.watch_head(self._moved)

    def watch(
        self,
        agent: str,
        listener: Callable[[Sequence[Arrival]], None],
        details: Callable[[], bool] | None = None,
    ) -> None:
        """Tell ``listener`` of the messages committed for ``agent`` from now on (it must not
        block; see :class:`InboxWatchers` for ``details``)."""
        if not self._watches:
            self._events.subscribe(self.observe, takes=self.OBSERVES)
        self._watches.append(_Watch(agent, listener, details))

    # -- told by the committer ------------------------------------------------------------

    def observe(self, event: HostEvent) -> None:
        """A batch or a push event committed in this process (a host event listener)."""
        match event:
            case MessagesAccepted(server_id=sid, messages=messages, last_seq=last):
                channels = event.channels
                if last is None:
                    self._tell_batch(sid, messages, channels)
                    return
                if last - len(messages) == self._told and not self._waiting:  # the next one
                    self._told = last
                    self._tell_batch(sid, messages, channels)
                    return

                def tell(skip: int) -> None:
                    if skip:
                        rest = list(messages)[skip:]
                        self._tell_batch(sid, rest, {m["channelId"] for m in rest})
                    else:
                        self._tell_batch(sid, messages, channels)

                self._in_order(last - len(messages) + 1, last, tell)
            case PushAccepted(server_id=sid, message=message, seq=seq):
                if seq is None:
                    self._tell_push(sid, message)
                else:
                    self._in_order(seq, seq, lambda _skip: self._tell_push(sid, message))
            case _:
                return

    def arrived(self, messages: Sequence[StoredMessage]) -> None:
        """Messages committed in this process with no host event (mail), in seq order."""
        if messages:
            self._in_order(
                messages[0].seq,
                messages[-1].seq,
                lambda skip: self._tell_stored(messages[skip:], details=False),
            )

    def _in_order(self, first: int, last: int, tell: Callable[[int], None]) -> None:
        """Tell the messages ``first..last`` with ``tell(skip)`` (``skip``: how many of them
        were told already) once every message before them was told: at once, or when the
        batches before them are (commits are answered, and so told, out of seq order: a batch
        committed at once is told before a group held earlier), or after a catch-up."""
        told = self._told
        if last <= told:
            return
        if first > told + 1:
            self._waiting[first] = (last, tell)
            self._due_up_to(last)
            return
        self._told = last
        tell(told + 1 - first)
        if self._waiting:
            self._tell_waiting()

    def _tell_waiting(self) -> None:
        """Tell the batches waiting that are next in seq order; drop those told already."""
        waiting = self._waiting
        while waiting:
            first = min(waiting)
            told = self._told
            if first > told + 1:
                return
            last, tell = waiting.pop(first)
            if last > told:
                self._told = last
                tell(told + 1 - first)

    # -- woken by the head ----------------------------------------------------------------

    def _moved(self, head: int) -> None:
        """The store's committed head moved to ``head`` (called on the event loop)."""
        if head <= self._head:
            return
        self._head = head
        if not self._watches:
            self._told = max(self._told, head)  # nobody to tell of what came before
            return
        self._due_up_to(head)

    def _due_up_to(self, head: int) -> None:
        self._head = max(self._head, head)
        if not self._due and self._head > self._told:
            self._due = True
            self._wake.set()

    async def run(self) -> None:
        """Read back, after :data:`SETTLE_SECONDS`, what a moved head brought and nobody told
        of; until cancelled."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            target = self._head
            await anyio.sleep(SETTLE_SECONDS)
            await self._catch_up(target)
            self._due = False
            self._due_up_to(self._head)

    async def _catch_up(self, target: int) -> None:
        while self._told < target:
            page = await self._store.read_slices(self._told, min(_PAGE, target - self._told))
            if not page:
                return
            for part in page:
                skip = self._told + 1 - part.first_seq
                if skip >= len(part.messages):
                    continue
                fresh = part.messages[skip:] if skip > 0 else part.messages
                self._told = part.last_seq
                self.read_back += len(fresh)
                self._tell_read(part.server_id, fresh)
            if self._waiting:
                self._tell_waiting()

    # -- telling --------------------------------------------------------------------------

    def _tell_batch(
        self, sid: str, messages: Sequence[Mapping[str, Any]], channels: Collection[str]
    ) -> None:
        book = self._tuneouts.book
        router = self._router
        for watch in self._watches:
            agent = watch.agent
            routes = router.wire_reader(agent, sid)
            routed = (m for m in messages if routes(m))
            if watch.details is not None and not watch.details():
                # Only *that* something arrived is wanted: stop at the first message.
                if router.routes_every(agent, sid):
                    # No message need be read: one of the batch's channels that no tune-out
                    # diverts says it.
                    for cid in channels:
                        if not cid or book.diverts(ChannelRef(sid, cid), agent) is None:
                            self._call(watch, ())
                            break
                    continue
                for m in routed:
                    cid = str(m.get("channelId") or "")
                    if not cid or book.diverts(ChannelRef(sid, cid), agent) is None:
                        self._call(watch, ())
                        break
                continue
            arrivals = [
                a
                for a in (_arrival(sid, m) for m in routed)
                if not a.ref.channel_id or book.diverts(a.ref, agent) is None
            ]
            if arrivals:
                self._call(watch, arrivals)

    def _tell_push(self, sid: str, message: Mapping[str, Any]) -> None:
        for watch in self._watches:
            if self._router.routes_wire(watch.agent, sid, message):
                self._call(watch, [_arrival(sid, message)])

    def _tell_read(self, sid: str, messages: Sequence[Mapping[str, Any]]) -> None:
        """Tell messages of ``sid`` read back from the store (committed elsewhere), in wire
        form: the same rules as :meth:`_tell_stored`, with no record built for a message that
        no watcher is told of."""
        book = self._tuneouts.book
        mail = sid == MAIL_SERVER
        for watch in self._watches:
            agent = watch.agent
            routes = self._router.wire_reader(agent, sid)
            whole = watch.details is None or watch.details()
            arrivals: list[Arrival] = []
            for m in messages:
                if not routes(m):
                    continue
                if not mail and _divertable(m):
                    cid = str(m.get("channelId") or "")
                    if book.diverts(ChannelRef(sid, cid), agent) is not None:
                        continue
                if not whole:
                    self._call(watch, ())
                    break
                arrivals.append(_arrival(sid, m))
            if arrivals:
                self._call(watch, arrivals)

    def _tell_stored(self, messages: Sequence[StoredMessage], *, details: bool) -> None:
        """Tell stored ``messages``; ``details``: a watcher that wants no details is told only
        that something arrived (mail is always told in full)."""
        book = self._tuneouts.book
        for watch in self._watches:
            agent = watch.agent
            mine = [
                m
                for m in self._router.routed(agent, messages)
                if not diverts_at_all(m)
                or book.diverts(ChannelRef(m.server_id, m.channel_id), agent) is None
            ]
            if not mine:
                continue
            if details and watch.details is not None and not watch.details():
                self._call(watch, ())
            else:
                self._call(watch, [_stored_arrival(m) for m in mine])

    @staticmethod
    def _call(watch: _Watch, arrivals: Sequence[Arrival]) -> None:
        try:
            watch.listener(arrivals)
        except Exception:
            log.exception("arrival_listener_failed", agent=watch.agent)


def _divertable(message: Mapping[str, Any]) -> bool:
    """Whether a tune-out may divert a wire message of a channel connector (as
    :func:`~switchboard.tuneouts.records.diverts_at_all` for a stored one): channel traffic,
    never a push event."""
    if not message.get("channelId"):
        return False
    meta = message.get("metadata")
    return not (isinstance(meta, Mapping) and meta.get("kind") == "push/event")


def _stored_arrival(m: StoredMessage) -> Arrival:
    return Arrival(
        ChannelRef(m.server_id, m.channel_id),
        m.message_id,
        m.author_name,
        message_text(m),
        m.timestamp,
        m.thread_id,
    )


def _arrival(server_id: str, message: Mapping[str, Any]) -> Arrival:
    """The :class:`Arrival` of one accepted wire message (validated by the host before)."""
    author = message.get("author")
    name = author.get("name", "") if isinstance(author, Mapping) else ""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    text = "\n".join(
        str(b.get("text", "")) for b in blocks if isinstance(b, Mapping) and b.get("type") == "text"
    )
    thread = message.get("threadId")
    return Arrival(
        ChannelRef(server_id, str(message.get("channelId") or "")),
        str(message.get("messageId", "")),
        str(name),
        text,
        str(message.get("timestamp", "")),
        thread if isinstance(thread, str) else None,
    )
