"""switchboard.store: everything Switchboard keeps durably, behind interfaces a backend keeps.

Every accepted ``channels/incoming`` message is committed before the connector is told it was
accepted, so a restart loses none; agents read what arrived after their acknowledged position.
Beside the messages: each agent's cursor and delivered mark, mail numbering, the decision log
and its snapshots, which agents left which channels, and the agents' lifetime records.

Backend-neutral, in this package: the interfaces (:mod:`.interface`), the values and the
``StoreError`` tree (:mod:`.records`), the body codec of a batch (:mod:`.wire`), the in-memory
duplicate window (:mod:`.dedupe`), the group-commit writer thread (:mod:`.group_thread`) and
how mail sits among messages (:mod:`.mailmark`). The embedded backend is
:mod:`switchboard.store.sqlite`; only the composition root opens it.

The store knows nothing of the layers that use it, and imports none of them.
"""

from switchboard.store.interface import (
    Batches,
    Cursors,
    DecisionLogProtocol,
    LeaveStore,
    LifetimeRecords,
    MailNumbers,
    MessageStoreProtocol,
    NumberedDeposits,
)
from switchboard.store.records import (
    AppendResult,
    FreshResults,
    IncomingRecord,
    Leave,
    LoadedLog,
    Snapshot,
    StaleEpochError,
    StorageUnavailableError,
    StoreClosedError,
    StoredMessage,
    StoreError,
)
from switchboard.store.wire import RawMessages

__all__ = [
    "AppendResult",
    "Batches",
    "Cursors",
    "DecisionLogProtocol",
    "FreshResults",
    "IncomingRecord",
    "Leave",
    "LeaveStore",
    "LifetimeRecords",
    "LoadedLog",
    "MailNumbers",
    "MessageStoreProtocol",
    "NumberedDeposits",
    "RawMessages",
    "Snapshot",
    "StaleEpochError",
    "StorageUnavailableError",
    "StoreClosedError",
    "StoreError",
    "StoredMessage",
]
