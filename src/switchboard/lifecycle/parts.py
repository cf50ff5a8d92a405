"""What the lifecycle reads of its connectors, and the parts its verbs and speech gate share.

:class:`Connectors` says how reachable a connector is now, whether the host may open and close
its channels, its subscription policy (:func:`subscription_policy`), and the facts the speech
rules read about one registration; :class:`LifecycleParts` is the frozen set of parts the
verbs, the decliner and the speech gate are built over.

What it deliberately does not know: how decisions are made (:mod:`.decider`), the wire
(:mod:`.reconcile`), names and tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from switchboard.channels import ChannelEntry, ChannelRegistry
from switchboard.config import ConnectorConfig, SubscriptionAllow
from switchboard.connections.owner import Owners, SessionState
from switchboard.lifecycle.decider import Decider
from switchboard.lifecycle.queue import LifecycleQueue
from switchboard.lifecycle.reconcile import Reconciler
from switchboard.lifecycle.rules.book import LifecycleBook, SubscriptionPolicy
from switchboard.lifecycle.rules.speech import ChannelFacts, Reach
from switchboard.lifecycle.transport_marks import TransportMarks

__all__ = ["Connectors", "LifecycleParts", "subscription_policy"]


def subscription_policy(config: ConnectorConfig) -> SubscriptionPolicy:
    """The policy of a connector's ``subscription`` setting."""
    setting = config.subscription
    if isinstance(setting, SubscriptionAllow):
        return SubscriptionPolicy.allowing(setting.allow)
    if setting == "auto":
        return SubscriptionPolicy.automatic()
    return SubscriptionPolicy.manual()


class Connectors:
    """What the lifecycle reads of the connectors now.

    What it knows:

    - :func:`subscription_policy`: a connector's ``subscription`` setting as a
      :class:`~switchboard.lifecycle.rules.book.SubscriptionPolicy` (``initially-open``: only what
      the descriptor's ``initiallyOpen`` asks for; ``auto``: every channel; ``{allow = [...]}``:
      also the listed channel ids or raw address ids). The policy is ongoing: a wanted channel opens
      whenever it is discovered and nobody decided otherwise (channel-registry.md §5.5, §11.1).
    - :class:`Connectors`: how reachable a connector is now, whether the host may open and close its
      channels now (up, granted ``channels.lifecycle``, and not found to lack the methods), its
      subscription policy, and the :class:`~switchboard.lifecycle.rules.speech.ChannelFacts` of one
      registration that the speech rules read.
    - :class:`LifecycleParts`: the lower-level parts the verbs (:mod:`.verbs`, :mod:`.decline`) and
      the speech gate (:mod:`.speech_gate`) all work over, handed to each at construction.

    Args:
        owners: The owner of each connector (the board's map, kept up to date).
        configs: Every configured connector (for the policy of one that is not connected).
        reconciler: Says whether the host may direct a server's lifecycle now.
        marks: The transport marks of registrations.
        queue: The per-channel lifecycle queue (whether work is pending).
    """

    __slots__ = ("_configs", "_marks", "_owners", "_queue", "_reconciler")

    def __init__(
        self,
        *,
        owners: Owners,
        configs: Sequence[ConnectorConfig],
        reconciler: Reconciler,
        marks: TransportMarks,
        queue: LifecycleQueue,
    ) -> None:
        self._owners = owners
        self._configs = configs
        self._reconciler = reconciler
        self._marks = marks
        self._queue = queue

    def reach(self, server_id: str) -> Reach:
        """How reachable a connector is now."""
        session = self._owners.get(server_id)
        if session is None:
            return Reach.GONE
        if session.state is SessionState.READY:
            return Reach.UP
        if session.state is SessionState.CONNECTING:
            return Reach.CONNECTING
        if session.state is SessionState.CLOSED and session.config.restart:
            return Reach.RECONNECTING
        return Reach.GONE

    async def output_written(self, server_id: str) -> None:
        """Return once what the host sent the server so far has left (the answer to the
        ``channels/register`` that brought a batch, say); at once when it is not connected."""
        session = self._owners.get(server_id)
        if session is not None:
            await session.output_written()

    def directs(self, server_id: str) -> bool:
        """Whether the host may open and close the server's channels now."""
        return self._reconciler.lifecycle_owner(server_id) is not None

    def facts(self, entry: ChannelEntry) -> ChannelFacts:
        """What the host knows about one registration, for the speech rules."""
        ref = entry.ref
        transport = self._marks.get(entry)
        return ChannelFacts(
            registered=True,
            transport_open=transport.open,
            directs_lifecycle=self.directs(ref.server_id),
            reach=self.reach(ref.server_id),
            inbound_only=entry.descriptor.direction == "inbound",
            answered_elsewhere=transport.answered_elsewhere,
            lifecycle_pending=self._queue.pending(ref),
        )

    def policy_for(self, server_id: str) -> SubscriptionPolicy:
        """The server's subscription policy (manual when nothing configures one)."""
        session = self._owners.get(server_id)
        if session is not None:
            return subscription_policy(session.config)
        for config in self._configs:
            if config.id == server_id:
                return subscription_policy(config)
        return SubscriptionPolicy.manual()


@dataclass(frozen=True, slots=True)
class LifecycleParts:
    """The parts the lifecycle verbs and the speech gate work over.

    Attributes:
        registry: The channel registry (registrations and names).
        book: The lifecycle book (desired records; read here, changed only by the decider).
        decider: The one path a decision takes (propose, record, apply).
        connectors: Reach, direction and the speech facts of registrations.
        marks: The transport marks of registrations.
        queue: The per-channel lifecycle queue.
        reconciler: Runs a channel's transport to its record.
    """

    registry: ChannelRegistry
    book: LifecycleBook
    decider: Decider
    connectors: Connectors
    marks: TransportMarks
    queue: LifecycleQueue
    reconciler: Reconciler
