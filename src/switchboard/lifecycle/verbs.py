"""The lifecycle verbs open and close: one channel, for an agent or a module.

The flows of ``open`` and ``close`` over the lifecycle's parts (channel-registry.md §7.3, §7.4,
§7.8): provenance comes from the caller, never from tool input; a decision is recorded first
and then carried out by reconciliation; a tuned-out channel is refused; an open may fetch
history. Each answers a :class:`~switchboard.lifecycle.answers.LifecycleAnswer` or refuses.

What it deliberately does not know: how a name was resolved (callers pass the ref), and tool
results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from switchboard.channels import ChannelRef
from switchboard.lifecycle.answers import LifecycleAnswer, Origin, VerbBase, refuse
from switchboard.lifecycle.errors import LifecycleError
from switchboard.lifecycle.journal import DecisionNotRecorded
from switchboard.lifecycle.parts import LifecycleParts
from switchboard.lifecycle.rules.decisions import (
    MACHINE_CLOSE_SOURCES,
    DesiredState,
    Source,
    Vetoed,
    VetoReason,
)
from switchboard.lifecycle.rules.reconcile import LifecycleErrorKind
from switchboard.refusals.refusal import Refusal, RefusalKind, pass_a_source

__all__ = ["MAX_BACKSCROLL", "LifecycleVerbs"]

MAX_BACKSCROLL = 500
"""The most earlier messages an open asks for."""


class LifecycleVerbs(VerbBase):
    """``open`` and ``close`` over the lifecycle's parts.

    What it knows (channel-registry.md §7.3, §7.4, §7.8): the flows of ``open`` and ``close`` over
    the lifecycle's parts (:class:`~switchboard.lifecycle.parts.LifecycleParts`), answered with
    :class:`~switchboard.lifecycle.answers.LifecycleAnswer`.

    - Provenance comes from the caller, never from tool input
      (:class:`~switchboard.lifecycle.answers.Origin`). An agent's open and close record
      ``agent-tool``; a module's open and close record ``module-tool``, or, for a close with a
      ``source``, a machine close (``subscription-gc``, ``housekeeping``; any other source is
      refused). A machine close of a channel the agent opened or tuned out is refused as
      ``explicit-open`` (not an error: the refusal says the module stands down) unless it holds an
      explicit idle lease (``override_explicit_open``).
    - A tuned-out channel is refused (``tuned-out``) with how its tune-out ends: a decision recorded
      over it would end it without its cancel, and its backlog would never reach the agent.
    - Every decision is recorded before anything is sent; when recording fails, nothing changed and
      the answer says so (``not-recorded``). A connector that is down, or does not grant
      ``channels.lifecycle``, gets no request: the decision stays recorded and the answer says what
      happens to it.
    - A recorded close stops typing in that channel (the ``on_close`` the verbs are built with).
    - An open may ask for earlier messages (``history``, at most :data:`MAX_BACKSCROLL`); only an
      open answer carries them, so it is sent even for a channel already open.
    - Only a channel already *desired* open skips the request (§7.3 step 3). Opening a channel that
      was not desired open sends ``channels/open`` even when traffic (a mention in a closed channel)
      made its transport look open: that shows the connector delivers there, not that it was asked
      to open it.

    A verb that did nothing raises a :class:`~switchboard.refusals.refusal.Refusal`.

    Args:
        parts: The lifecycle parts the verbs work over.
        on_close: Told each channel whose close was just recorded (typing stops there).
    """

    def __init__(self, parts: LifecycleParts, *, on_close: Callable[[ChannelRef], object]) -> None:
        super().__init__(parts)
        self._on_close = on_close

    # -- open ---------------------------------------------------------------------------------

    async def open(
        self,
        ref: ChannelRef,
        *,
        origin: Origin = Origin.AGENT,
        by_agent: str | None = None,
        backscroll: int = 0,
        before_message_id: str | None = None,
    ) -> LifecycleAnswer:
        """Open ``ref`` (``channel_open``), optionally asking for earlier messages.

        Raises:
            Refusal: Nothing was opened (``unknown-channel``, ``tuned-out``, ``not-recorded``,
                ``open-failed``, ``overtaken``).
        """
        parts = self._parts
        entry = parts.registry.get(ref)
        if entry is None:
            raise self._unregistered(ref)
        record = parts.book.record(ref)
        if record is not None and record.state is DesiredState.TUNED_OUT:
            raise self._tuned_out(ref, "channel_open", meanwhile=False)
        source = Source.AGENT_TOOL if origin is Origin.AGENT else Source.MODULE_TOOL
        history: dict[str, Any] | None = None
        if backscroll > 0:
            history = {"limit": min(MAX_BACKSCROLL, backscroll)}
            if before_message_id:
                history["beforeMessageId"] = before_message_id
        was_open = record is not None and record.state is DesiredState.OPEN
        shown = self._shown(ref)
        already = was_open and parts.marks.get(entry).open and history is None
        try:
            decision = await parts.decider.decide(ref, DesiredState.OPEN, source, by_agent=by_agent)
        except DecisionNotRecorded as exc:
            if already:
                text = (
                    f"Channel {shown} is already open, but recording your decision to open it "
                    f"failed: {exc}."
                )
            else:
                text = (
                    f"Nothing changed for channel {shown}: recording the decision to open it "
                    f"failed ({exc}), so nothing was sent to its server."
                )
            raise refuse(ref, RefusalKind.NOT_RECORDED, text) from exc
        if isinstance(decision.answer, Vetoed):
            raise self._tuned_out(ref, "channel_open", meanwhile=True)
        if already:
            return LifecycleAnswer(ref, "already open")
        if not parts.connectors.directs(ref.server_id):
            return self._undirected(ref, "open")
        try:
            result = await parts.reconciler.run(ref, history=history, newly_opened=not was_open)
        except LifecycleError as exc:
            raise self._run_failed(ref, "open", exc) from exc
        if not result.directed:
            return self._undirected(ref, "open")
        now = parts.book.record(ref)
        if now is not None and now.state is DesiredState.TUNED_OUT:
            raise self._tuned_out(ref, "channel_open", meanwhile=True)
        if not result.open:
            text = (
                f"Channel {shown} did not stay open: a decision to close it was recorded while "
                "it was being opened, and that decision stands."
            )
            raise refuse(ref, RefusalKind.OVERTAKEN, text)
        return LifecycleAnswer(
            ref,
            "reconciled" if was_open else "opened",
            history=None if result.history is None else tuple(result.history),
            history_truncated=result.history_truncated,
        )

    def _run_failed(self, ref: ChannelRef, op: str, exc: LifecycleError) -> Refusal:
        shown = self._shown(ref)
        verb = "Opening" if op == "open" else "Closing"
        if exc.kind is LifecycleErrorKind.REMOVED:
            text = (
                f"{verb} channel {shown} did not finish: {exc.reason}. The decision to {op} it "
                "is recorded and applies when that server registers it again."
            )
        else:
            text = (
                f"{verb} channel {shown} failed: {exc.reason}. The decision to {op} it stays "
                "recorded, and the host tries again when that server next registers it."
            )
        kind = RefusalKind.OPEN_FAILED if op == "open" else RefusalKind.CLOSE_FAILED
        return refuse(ref, kind, text)

    # -- close --------------------------------------------------------------------------------

    async def close(
        self,
        ref: ChannelRef,
        *,
        origin: Origin = Origin.AGENT,
        source: str | None = None,
        override_explicit_open: bool = False,
        by_agent: str | None = None,
    ) -> LifecycleAnswer:
        """Close ``ref`` (``channel_close``); ``source`` and the lease only count for a module.

        Raises:
            Refusal: Nothing was closed (``unknown-channel``, ``unknown-source``,
                ``explicit-open`` and, for a module, ``tuned-out``: both ``stand_down``;
                ``tuned-out``, ``not-recorded``, ``close-failed``, ``superseded``).
        """
        parts = self._parts
        entry = parts.registry.get(ref)
        if entry is None:
            raise self._unregistered(ref)
        module = origin is Origin.MODULE
        if not module:
            close_source, override_explicit_open = Source.AGENT_TOOL, False
        elif source is None:
            close_source = Source.MODULE_TOOL
        else:
            known = {s.value: s for s in MACHINE_CLOSE_SOURCES}
            if source not in known:
                allowed = ", ".join(sorted(known))
                text = (
                    f"Unknown machine close source {source!r}. Machine closes must use one of: "
                    f"{allowed}."
                )
                raise refuse(ref, RefusalKind.UNKNOWN_SOURCE, text, pass_a_source(allowed))
            close_source = known[source]
        shown = self._shown(ref)
        record = parts.book.record(ref)
        already = (
            record is not None
            and record.state is DesiredState.CLOSED
            and not parts.marks.get(entry).may_be_open
            and not parts.queue.pending(ref)
        )
        try:
            decision = await parts.decider.decide(
                ref,
                DesiredState.CLOSED,
                close_source,
                by_agent=by_agent,
                override_explicit_open=override_explicit_open,
            )
        except DecisionNotRecorded as exc:
            if already:
                text = (
                    f"Channel {shown} is already closed, but recording the decision to close it "
                    f"failed: {exc}."
                )
            else:
                text = (
                    f"Nothing changed for channel {shown}: recording the decision to close it "
                    f"failed ({exc}), so no close was sent to its server."
                )
            raise refuse(ref, RefusalKind.NOT_RECORDED, text) from exc
        answer = decision.answer
        if isinstance(answer, Vetoed):
            if answer.reason is VetoReason.EXPLICIT_OPEN:
                was = answer.record.source.value if answer.record is not None else "agent-tool"
                text = (
                    f"Channel {shown} was explicitly opened (source: {was}); a "
                    f"{close_source.value!r} close does not override stated intent. Machine "
                    "closes of explicit opens need an explicit idle lease "
                    "(override_explicit_open)."
                )
                raise refuse(ref, RefusalKind.EXPLICIT_OPEN, text, stand_down=True)
            raise self._tuned_out(ref, "channel_close", meanwhile=False, stand_down=module)
        self._on_close(ref)  # typing stops in this channel only (§7.4 step 7)
        if already:
            return LifecycleAnswer(ref, "already closed")
        if not parts.connectors.directs(ref.server_id):
            return self._undirected(ref, "close")
        try:
            result = await parts.reconciler.run(ref)
        except LifecycleError as exc:
            raise self._run_failed(ref, "close", exc) from exc
        if not result.directed:
            return self._undirected(ref, "close")
        now = parts.book.record(ref)
        if result.open or now is None or now.state is not DesiredState.CLOSED:
            if now is not None and now.state is DesiredState.TUNED_OUT:
                raise self._tuned_out(ref, "channel_close", meanwhile=True, stand_down=module)
            text = (
                f"Channel {shown} is open again: a later decision to keep it open came first, "
                "so the close was superseded."
            )
            raise refuse(ref, RefusalKind.SUPERSEDED, text)
        return LifecycleAnswer(ref, "closed")
