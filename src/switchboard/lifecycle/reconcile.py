"""Reconciliation: bring each channel's transport to its recorded desired state (§5.6).

A *lifecycle run* of one channel holds the channel's lock for its whole length and asks the
pure :class:`~switchboard.lifecycle.rules.reconcile.Convergence` for each next command given the
record and the transport as they stand now; it sends ``channels/open`` or ``channels/close``
through the connector's owner and judges each answer, until the two agree or it gives up.
Channels run in parallel.

What it deliberately does not know: how records are decided or admitted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from anyio.lowlevel import checkpoint

from switchboard.channels import ChannelEntry, ChannelRef, ChannelRegistry
from switchboard.channels.names.wording import q
from switchboard.connections.owner import ConnectorOwner, Owners, SessionState
from switchboard.events import EventBus, LifecycleStep, LifecycleStepKind
from switchboard.lifecycle.errors import (
    LifecycleError,
    not_up_clause,
    removed_clause,
    substituted_clause,
)
from switchboard.lifecycle.queue import LifecycleQueue
from switchboard.lifecycle.rules.book import LifecycleBook
from switchboard.lifecycle.rules.decisions import DesiredRecord
from switchboard.lifecycle.rules.reconcile import (
    MAX_CONVERGE_ATTEMPTS,
    Converged,
    Convergence,
    GaveUp,
    LifecycleErrorKind,
    Op,
    judge_close_answer,
    judge_open_answer,
    wanted_op,
)
from switchboard.lifecycle.transport_marks import TransportMarks
from switchboard.transport import METHOD_NOT_FOUND, LinkClosedError, RequestTimeoutError, RpcError

__all__ = ["MAX_CONVERGE_ATTEMPTS", "RECONCILE_CONCURRENCY", "Reconciler", "RunResult"]

log = structlog.get_logger(__name__)

RECONCILE_CONCURRENCY = 32
"""The most lifecycle runs (each at most one ``channels/open`` or ``channels/close`` in
flight) one :meth:`Reconciler.reconcile` call keeps going at once."""
# Channels checked for a needed run between two turns of the event loop.
CHECK_SLICE = 512

#: Failures that report themselves (or mean the channel is gone): reconcile does not re-report.
_QUIET = frozenset(
    {
        LifecycleErrorKind.REMOVED,
        LifecycleErrorKind.CANCELLED,
        LifecycleErrorKind.CONVERGE,
        LifecycleErrorKind.SUBSTITUTED,
    }
)


@dataclass(frozen=True, slots=True)
class RunResult:
    """How a lifecycle run ended.

    Attributes:
        directed: The host could direct the channel (connector up, ``channels.lifecycle``
            granted); False means no request was sent and the record waits.
        open: The transport is believed open after the run.
        history: The ``history`` of the last open answer, when one carried it.
        history_truncated: The last open answer's ``historyTruncated``.
        overtaken: A decision recorded during a round trip changed what the run did.
    """

    directed: bool
    open: bool
    history: list[Any] | None = None
    history_truncated: bool | None = None
    overtaken: bool = False


class Reconciler:
    """Runs channels' lifecycle requests toward their records, one run per channel at a time.

    What it knows: how one channel's *lifecycle run* goes. A run holds the channel's lock in the
    :class:`~switchboard.lifecycle.queue.LifecycleQueue` for its whole length, so requests for one
    channel never overlap, while other channels run in parallel. Each step asks
    :class:`~switchboard.lifecycle.rules.reconcile.Convergence` for the next command given the
    record and the transport *as they stand now*, sends ``channels/open`` (``{channelId, type,
    address, history?}``) or ``channels/close`` (``{channelId}``), and reads the answer with
    :func:`~switchboard.lifecycle.rules.reconcile.judge_open_answer` /
    :func:`~switchboard.lifecycle.rules.reconcile.judge_close_answer`:

    - a decision recorded during a round trip is simply the next step's input (the run was
      *overtaken*, and converges to the new decision); after :data:`MAX_CONVERGE_ATTEMPTS` commands
      the run gives up with a ``converge`` failure instead of chasing a moving target;
    - an open answered for a different channel marks the registration ``answered_elsewhere`` and
      fails ``substituted`` (unless the record wants the channel closed: then it is closed);
    - a refused or unanswered request leaves honest marks (``unconfirmed`` after an unanswered open,
      ``failed_close`` after any failed close) and fails; nothing pretends it closed;
    - the run re-reads the registration after every await, by ref; a channel withdrawn meanwhile
      fails ``removed``.

    A connector that is not up, or whose grant lacks ``channels.lifecycle``, gets no request at all
    (MCPL §5.4, H-45): the run ends ``directed=False`` and the record waits for the next
    registration. A connector that advertises the lifecycle but answers ``channels/open`` or
    ``channels/close`` with "method not found" is treated the same way for the rest of its
    connection (a compatibility decision, like the notification fallback of publishes).

    :meth:`Reconciler.reconcile` runs every channel of a (re)registration that needs a command, each
    on its own queue, at most :data:`RECONCILE_CONCURRENCY` at a time (a connector that registers
    10,000 ``initiallyOpen`` channels gets its opens paced, and the host holds that many runs and
    requests, not 10,000), and reports failures as :class:`~switchboard.events.LifecycleStep`
    events.
    """

    def __init__(
        self,
        *,
        registry: ChannelRegistry,
        owners: Owners,
        book: LifecycleBook,
        marks: TransportMarks,
        queue: LifecycleQueue,
        events: EventBus,
        limit: int = MAX_CONVERGE_ATTEMPTS,
    ) -> None:
        self._registry = registry
        self._owners = owners
        self._book = book
        self._marks = marks
        self._queue = queue
        self._events = events
        self._convergence = Convergence(limit)
        #: Sessions that answered a lifecycle request "method not found" (see _unsupported).
        self._unsupported: dict[str, ConnectorOwner] = {}
        #: The last failure of each channel's runs, cleared by a run that ends well.
        self.failures: dict[ChannelRef, LifecycleError] = {}

    def lifecycle_owner(self, server_id: str) -> ConnectorOwner | None:
        """The server's session when the host may open and close there now, else None."""
        session = self._owners.get(server_id)
        if (
            session is None
            or session.state is not SessionState.READY
            or not session.connected
            or not session.grant.allows("channels.lifecycle")
            or self._unsupported.get(server_id) is session
        ):
            return None
        return session

    def _not_implemented(self, session: ConnectorOwner, exc: RpcError) -> None:
        """A connector that advertises the lifecycle but answers its methods "method not
        found" does not implement it: for the rest of this connection it is treated like a
        connector without the grant (it keeps its channels as it chooses), so speech is not
        held back by opens that can never succeed."""
        if exc.code == METHOD_NOT_FOUND and self._unsupported.get(session.server_id) is not session:
            self._unsupported[session.server_id] = session
            log.warning(
                "lifecycle_not_implemented_treated_as_withheld", server_id=session.server_id
            )

    def _record(self, ref: ChannelRef) -> DesiredRecord | None:
        return self._book.record(ref)

    async def run(
        self,
        ref: ChannelRef,
        *,
        history: Mapping[str, Any] | None = None,
        newly_opened: bool = False,
    ) -> RunResult:
        """Queue a run for ``ref`` and drive its transport to the record.

        Args:
            ref: The channel.
            history: Ask for backscroll with the open (sent even when the channel is open
                already, since only an open answer carries history).
            newly_opened: The record just became ``open`` (it was not desired open before):
                the open is sent even when traffic made the transport look open, since a
                mention in a closed channel shows the connector delivers there, not that it
                was asked to open it (channel-registry.md §7.3 step 3).

        Raises:
            LifecycleError: The run failed (see :class:`Reconciler`).
        """
        async with self._queue.hold(ref):
            self._convergence.abandon(ref)
            try:
                result = await self._drive(ref, history, newly_opened)
            except LifecycleError as exc:
                self._convergence.abandon(ref)
                self.failures[ref] = exc
                raise
            except BaseException:
                self._convergence.abandon(ref)
                raise
            self.failures.pop(ref, None)
            return result

    async def _drive(
        self, ref: ChannelRef, history: Mapping[str, Any] | None, newly_opened: bool
    ) -> RunResult:
        overtaken = False
        got_history: list[Any] | None = None
        truncated: bool | None = None
        while True:
            entry = self._registry.get(ref)
            if entry is None:
                raise LifecycleError(LifecycleErrorKind.REMOVED, ref, removed_clause(ref))
            session = self.lifecycle_owner(ref.server_id)
            transport = self._marks.get(entry)
            if session is None:
                return RunResult(False, transport.open, got_history, truncated, overtaken)
            record = self._record(ref)
            step = self._convergence.step(ref, record, transport)
            if isinstance(step, GaveUp):
                self._report(ref, LifecycleStepKind.CONVERGE_FAILED, attempts=step.attempts)
                raise LifecycleError(
                    LifecycleErrorKind.CONVERGE,
                    ref,
                    f"its desired state kept changing while {step.attempts} requests were "
                    "under way, so the host stopped trying for now",
                )
            if isinstance(step, Converged):
                # Open once more when history is asked for (only an open answer carries it),
                # when a failed close left it unknown whether the channel is still open, or
                # when the open is a new decision (traffic alone never opened it).
                reassert = history is not None or newly_opened or transport.failed_close
                if not reassert or wanted_op(record) is not Op.OPEN:
                    return RunResult(True, transport.open, got_history, truncated, overtaken)
                op = Op.OPEN
            else:
                op = step.op
            if op is Op.OPEN:
                answer = await self._open(session, entry, history)
                history, newly_opened = None, False
                if answer.get("history") is not None or answer.get("historyTruncated"):
                    got_history = _history(answer)
                    truncated = answer.get("historyTruncated") is True or None
                overtaken |= self._judge_open(session, entry, answer)
            else:
                await self._close(session, entry)
                overtaken |= self._judge_close(entry)

    async def _open(
        self, session: ConnectorOwner, entry: ChannelEntry, history: Mapping[str, Any] | None
    ) -> Mapping[str, Any]:
        ref = entry.ref
        descriptor = entry.descriptor
        params: dict[str, Any] = {"channelId": ref.channel_id, "type": descriptor.type}
        if descriptor.address is not None:
            params["address"] = dict(descriptor.address)
        if history is not None:
            params["history"] = dict(history)
        if not session.connected:
            raise LifecycleError(None, ref, not_up_clause(ref.server_id))
        try:
            result = await session.open_channel(params)
        except RpcError as exc:
            self._not_implemented(session, exc)
            self._report(ref, LifecycleStepKind.OPEN_FAILED, code=exc.code, message=exc.message)
            raise LifecycleError(
                None,
                ref,
                f"server {q(ref.server_id)} refused to open it: {exc.message} (code {exc.code})",
            ) from exc
        except (RequestTimeoutError, LinkClosedError) as exc:
            self._mark(entry, lambda t: t.open_unanswered())
            self._report(ref, LifecycleStepKind.OPEN_UNANSWERED, error=str(exc))
            raise LifecycleError(
                None,
                ref,
                f"server {q(ref.server_id)} did not answer the open ({exc}), so it may or may "
                "not be open",
            ) from exc
        return result if isinstance(result, Mapping) else {}

    def _judge_open(
        self, session: ConnectorOwner, entry: ChannelEntry, answer: Mapping[str, Any]
    ) -> bool:
        """Apply an open's answer; True when a later decision overtook it. May raise.

        A matching answer's declaration (its ``channel`` object) updates the registration,
        validated and authorized as a ``channels/changed`` update is (§5.6).
        """
        ref = entry.ref
        channel = answer.get("channel")
        answered = channel.get("id") if isinstance(channel, Mapping) else None
        current = self._registry.get(ref)
        if current is None:
            raise LifecycleError(LifecycleErrorKind.REMOVED, ref, removed_clause(ref))
        verdict = judge_open_answer(ref, answered, self._record(ref), self._marks.get(entry))
        self._marks.set(entry, verdict.transport)
        if verdict.error is LifecycleErrorKind.SUBSTITUTED:
            self._report(ref, LifecycleStepKind.SUBSTITUTED, answered=answered)
            if verdict.close_next:
                return True  # the record wants it closed: the next step closes it
            raise LifecycleError(
                LifecycleErrorKind.SUBSTITUTED, ref, substituted_clause(ref, answered)
            )
        if verdict.transport.open and isinstance(channel, Mapping) and len(channel) > 1:
            session.apply_declaration(dict(channel))
        return verdict.error is LifecycleErrorKind.OVERTAKEN

    async def _close(self, session: ConnectorOwner, entry: ChannelEntry) -> None:
        ref = entry.ref
        if not session.connected:
            raise LifecycleError(None, ref, not_up_clause(ref.server_id))
        try:
            await session.close_channel(ref.channel_id)
        except (RpcError, RequestTimeoutError, LinkClosedError) as exc:
            if isinstance(exc, RpcError):
                self._not_implemented(session, exc)
            self._mark(entry, lambda t: t.close_failed())
            self._report(ref, LifecycleStepKind.CLOSE_FAILED, error=str(exc))
            raise LifecycleError(
                None,
                ref,
                f"server {q(ref.server_id)} did not confirm the close ({exc}), so it may "
                "still be open",
            ) from exc

    def _judge_close(self, entry: ChannelEntry) -> bool:
        ref = entry.ref
        if self._registry.get(ref) is None:
            raise LifecycleError(LifecycleErrorKind.REMOVED, ref, removed_clause(ref))
        verdict = judge_close_answer(self._record(ref), self._marks.get(entry))
        self._marks.set(entry, verdict.transport)
        return verdict.error is LifecycleErrorKind.SUPERSEDED

    def _mark(self, entry: ChannelEntry, change: Callable[[Any], Any]) -> None:
        if self._registry.get(entry.ref) is entry:
            self._marks.set(entry, change(self._marks.get(entry)))

    def _report(self, ref: ChannelRef, kind: LifecycleStepKind, **detail: Any) -> None:
        self._events.emit(LifecycleStep(ref.server_id, kind, ref.channel_id, detail))

    # -- reconciling a (re)registration ------------------------------------------------------

    def needs_run(self, entry: ChannelEntry) -> bool:
        """Whether the registration's transport differs from its record."""
        record = self._record(entry.ref)
        transport = self._marks.get(entry)
        want = wanted_op(record)
        if want is Op.OPEN:
            return not transport.open
        return want is Op.CLOSE and transport.may_be_open

    async def run_quietly(self, ref: ChannelRef) -> None:
        """A fire-and-forget run: failures are reported as ``reconcile-failed``, not raised."""
        try:
            await self.run(ref)
        except LifecycleError as exc:
            if exc.kind not in _QUIET:
                record = self._record(ref)
                self._report(
                    ref,
                    LifecycleStepKind.RECONCILE_FAILED,
                    desired=None if record is None else record.state.value,
                    error=exc.reason,
                )

    async def reconcile(self, refs: Sequence[ChannelRef]) -> int:
        """Run every channel of ``refs`` whose transport differs from its record, in parallel.

        Returns:
            How many runs were started.
        """
        if not refs or self.lifecycle_owner(refs[0].server_id) is None:
            return 0
        todo: list[ChannelRef] = []
        for n, ref in enumerate(refs):
            if n and not n % CHECK_SLICE:
                await checkpoint()  # a large registration must not hold the loop
            entry = self._registry.get(ref)
            if entry is not None and self.needs_run(entry):
                todo.append(ref)
        if todo:
            pending = iter(todo)

            async def worker() -> None:
                for ref in pending:  # shared: each ref is taken by one worker
                    await self.run_quietly(ref)

            async with anyio.create_task_group() as tg:
                for _ in range(min(RECONCILE_CONCURRENCY, len(todo))):
                    tg.start_soon(worker)
        return len(todo)


def _history(answer: Mapping[str, Any]) -> list[Any]:
    history = answer.get("history")
    return list(history) if isinstance(history, list) else []
