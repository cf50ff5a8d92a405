"""Admission: the initial desired record of newly registered channels, then reconciliation.

What this module knows (channel-registry.md §5.5, §5.6, §11.1-§11.2):

- :func:`subscription_policy`: a connector's ``subscription`` setting as a
  :class:`~switchboard.channels.SubscriptionPolicy` (``initially-open``: only what the
  descriptor's ``initiallyOpen`` asks for; ``auto``: every channel; ``{allow = [...]}``: also
  the listed channel ids or raw address ids). The policy is ongoing: a wanted channel opens
  whenever it is discovered and nobody decided otherwise.
- :func:`admit_channels`: runs after the ``channels/register`` (or ``changed.added``) answer is
  on the wire. Every channel of the batch first gets its initial record
  (:meth:`~switchboard.channels.LifecycleBook.ensure_initial`: ``initiallyOpen`` or the policy
  lift a ``default-closed`` record, a real decision is never overridden), recorded as one
  batch; fresh policy opens are announced once (a ``LifecycleStep`` ``auto-opened``); then each
  channel is reconciled on its own queue, and a ``LifecycleStep`` ``reconciled`` reports the end. A
  connector whose grant lacks ``channels.lifecycle`` is not admitted at all (its channels get
  no record: the host never directs a lifecycle it was not granted), and an ``auto`` or
  allow-list policy does nothing for it.

What it deliberately does not know: the wire (see :mod:`.reconcile`), tools and speech.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import structlog

from switchboard.channels import ChannelRef, SubscriptionPolicy
from switchboard.channels.lifecycle.decisions import Append
from switchboard.channels.lifecycle.events import DesiredStateSet
from switchboard.channels.lifecycle.speech import Reach
from switchboard.config import ConnectorConfig, SubscriptionAllow
from switchboard.host.events import LifecycleStepKind
from switchboard.host.lifecycle.journal import DecisionNotRecorded

if TYPE_CHECKING:
    from switchboard.host.lifecycle.host import LifecycleHost

__all__ = ["admit_channels", "subscription_policy"]

log = structlog.get_logger(__name__)


def subscription_policy(config: ConnectorConfig) -> SubscriptionPolicy:
    """The policy of a connector's ``subscription`` setting."""
    setting = config.subscription
    if isinstance(setting, SubscriptionAllow):
        return SubscriptionPolicy.allowing(setting.allow)
    if setting == "auto":
        return SubscriptionPolicy.automatic()
    return SubscriptionPolicy.manual()


async def admit_channels(host: LifecycleHost, server_id: str, channel_ids: Iterable[str]) -> None:
    """Give newly registered channels their initial record, then reconcile them."""
    refs = [ChannelRef(server_id, c) for c in dict.fromkeys(channel_ids)]
    if not refs:
        return
    if not host.directs(server_id):
        if host.reach(server_id) is Reach.UP:
            host.emit(
                server_id,
                LifecycleStepKind.RECONCILE_SKIPPED,
                reason="channels.lifecycle not granted",
            )
        return
    policy = host.policy_for(server_id)
    events: list[DesiredStateSet] = []
    announced: list[dict[str, Any]] = []
    gate = host.gate
    await gate.wait_free(refs)
    gate.take(refs)
    try:
        now = host.now()
        ensure = host.book.ensure_initial
        registry = host.registry
        for ref in refs:
            entry = registry.get(ref)
            if entry is None:
                continue
            descriptor = entry.descriptor
            admission = ensure(
                ref,
                now,
                policy=policy,
                initially_open=descriptor.initially_open,
                raw_id=entry.raw_id,
            )
            if isinstance(admission.decision, Append):
                events.append(admission.decision.event)
            if admission.announce:
                announced.append({"channel_id": ref.channel_id, "label": descriptor.label})
        if events:
            await host.journal.record(events)
    except DecisionNotRecorded as exc:
        log.error("admission_not_recorded", server_id=server_id, error=str(exc))
        announced = []
    finally:
        gate.release(refs)
    if announced:
        host.emit(
            server_id,
            LifecycleStepKind.AUTO_OPENED,
            source="subscription-policy",
            channels=announced,
        )
    runs = await host.reconciler.reconcile(refs)
    host.emit(server_id, LifecycleStepKind.RECONCILED, channels=len(refs), runs=runs)
