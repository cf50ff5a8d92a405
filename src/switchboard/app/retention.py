"""What retention may never delete, as the host knows it: :class:`RetentionFloor`.

The store's retention deletes only messages at or below a floor, the highest seq nobody still
owes (docs/operations.md, "Retention"): here, the least of every agent's acknowledged cursor
and the start of every tune-out whose backlog is still owed or not yet passed. Mail is never
deleted, so its numbering continues after a restart.

What it deliberately does not know: SQL, chunks and schedules (the store's part).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from switchboard.agents.roster.roster import Roster
from switchboard.config import StoreConfig
from switchboard.store import MessageStoreProtocol
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.retention import Floor, PassReport, RetentionPolicy, RetentionSummary
from switchboard.store.sqlite import MessageStore
from switchboard.store.sqlite.retention import RetentionTask
from switchboard.tuneouts.state import TuneOutState

__all__ = ["Retention", "RetentionFloor", "retention_policy", "retention_task"]


class Retention(Protocol):
    """What the host runs and shows of a backend's retention (SQLite's
    :class:`~switchboard.store.sqlite.retention.RetentionTask`, PostgreSQL's
    :class:`~switchboard.cluster.pg.retention.PgRetentionTask`)."""

    @property
    def policy(self) -> RetentionPolicy: ...

    async def run(self) -> None: ...

    async def run_pass(self) -> PassReport: ...

    def last_pass(self) -> RetentionSummary: ...


class _Cursors(Protocol):
    @property
    def latest_seq(self) -> int: ...

    async def get_cursor(self, agent: str) -> int: ...


def retention_task(
    store: MessageStoreProtocol,
    config: StoreConfig,
    floor: Callable[[], Awaitable[Floor]],
    *,
    clock: Callable[[], float] = time.time,
    cluster: bool = False,
    keep_newest: int | None = None,
) -> Retention | None:
    """The retention of ``store``'s backend under ``[store]``'s policy; None for a store
    without retention. On PostgreSQL in cluster mode (``cluster``) every shared cursor row
    holds the floor too (an agent served by another instance is not in this one's roster).
    The newest ``keep_newest`` messages always stay: by default the store's duplicate
    window."""
    kept = store.dedupe_window if keep_newest is None else keep_newest
    policy = retention_policy(config, keep_newest=kept)
    if isinstance(store, MessageStore):
        return RetentionTask(store, policy, floor, clock=clock)
    # A PostgreSQL store means the cluster extra is loaded already; anything else (a store of
    # a test) has no retention, and the default install never imports the extra from here.
    pg = sys.modules.get("switchboard.cluster.pg.message_store")
    if pg is None or not isinstance(store, pg.PgMessageStore):
        return None
    from switchboard.cluster.pg.retention import PgRetentionTask

    return PgRetentionTask(store, policy, floor, clock=clock, every_cursor=cluster)


def retention_policy(config: StoreConfig, *, keep_newest: int) -> RetentionPolicy:
    """The store's retention policy from ``[store]``: ``retain``, ``max_size`` and
    ``retention_interval``; the newest ``keep_newest`` messages and all mail always stay."""
    return RetentionPolicy(
        retain=config.retain,
        max_size=None if config.max_size is None else int(config.max_size),
        interval=config.retention_interval,
        keep_newest=keep_newest,
        keep_servers=frozenset({MAIL_SERVER}),
    )


class RetentionFloor:
    """Answers, at the start of each retention pass, the highest seq nobody still owes.

    What it knows (docs/operations.md, "Retention"): the store's retention
    (:mod:`switchboard.store.sqlite.retention`) deletes only messages at or below a *floor*, the
    highest seq nobody still owes. Here the floor is the least of:

    - every agent's acknowledged cursor: the roster's agents (configured and live task agents,
      attached or not: mail held for an agent with no session is above its cursor) and any agent
      with a desk. An agent that never acknowledged anything holds the floor at 0;
    - for every tune-out epoch in effect or ended but remembered (its backlog owed, or its range not
      yet passed by its owner's cursor), the seq at which it began: its backlog is a query of the
      store, so all of it stays until it is delivered and passed.

    Mail (``@mail``) is never deleted at all (see :func:`retention_policy`): numbering of the
    deposits continues from the stored mail after a restart.

    Args:
        store: The message store (the agents' acknowledged cursors).
        roster: The agents served now.
        tuneouts: The tune-out epochs in effect and the owed backlogs.
        desks: The names of agents with a desk (an agent that used a tool).
    """

    __slots__ = ("_desks", "_roster", "_store", "_tuneouts")

    def __init__(
        self,
        *,
        store: _Cursors,
        roster: Roster,
        tuneouts: TuneOutState,
        desks: Iterable[str],
    ) -> None:
        self._store = store
        self._roster = roster
        self._tuneouts = tuneouts
        self._desks = desks

    async def __call__(self) -> Floor:
        """The floor and what holds it (``agent @name``, ``tune-out <id> of @name``)."""
        floor = Floor(self._store.latest_seq, "nothing: every message is acknowledged")
        names = {identity.name for identity in self._roster}
        names.update(self._desks)
        for name in sorted(names):
            cursor = await self._store.get_cursor(name)
            if cursor < floor.seq:
                floor = Floor(cursor, f"agent @{name} (acknowledged up to {cursor})")
        state = self._tuneouts
        for held in state.book.epochs():
            start = held.epoch.started_at_sequence or 0
            if start < floor.seq:
                floor = Floor(start, f"tune-out {held.epoch.epoch_id} of @{held.epoch.owner}")
        for owner in state.owed.owners():
            for settled in state.owed.withholding(owner):
                if settled.start_seq < floor.seq:
                    floor = Floor(
                        settled.start_seq, f"the backlog of tune-out {settled.epoch_id} of @{owner}"
                    )
        return floor
