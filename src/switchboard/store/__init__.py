"""switchboard.store: durable inboxes for incoming chat messages (SQLite in WAL mode).

Every accepted ``channels/incoming`` message is committed here before the connector is told it
was accepted, so a restart loses none. Agents read the messages that arrived after their cursor
and can wait for new ones.

Modules, one concern each:

* :mod:`~switchboard.store.records`: value types and the ``StoreError`` tree;
* :mod:`~switchboard.store.interface`: ``MessageStoreProtocol``, the backend contract;
* :mod:`~switchboard.store.wire`: messages in MCPL wire form, the body codec of a batch row;
* :mod:`~switchboard.store.dedupe`: the writer's bounded in-memory duplicate index;
* :mod:`~switchboard.store.sqlite.schema`: the on-disk format (one row per batch; schema, SQL);
* :mod:`~switchboard.store.sqlite.writer`: the single writer thread: seqs, duplicates, group commit;
* :mod:`~switchboard.store.sqlite.checkpoint`: WAL checkpoints on a thread beside the writer;
* :mod:`~switchboard.store.sqlite.retention`: deleting old, acknowledged messages in small chunks
  through the writer (import ``RetentionTask`` from there);
* :mod:`~switchboard.store.sqlite.message_store`: ``MessageStore``, the asyncio-facing SQLite
backend;
* :mod:`~switchboard.store.sqlite.numbered`: where per-(channel, author) numbered ids stand;
* :mod:`~switchboard.store.sqlite.leaves`: ``ChannelLeaves``, which agents left which channels;
* :mod:`~switchboard.store.sqlite.eventlog_writer`: the decision log's rows and its writer thread;
* :mod:`~switchboard.store.sqlite.eventlog`: ``DecisionLog``, the durable decision event log (import
  it from there).

The store knows nothing of the host, tools, channels or transport, and imports none of them.
"""

from switchboard.store.interface import MessageStoreProtocol
from switchboard.store.records import (
    AppendResult,
    FreshResults,
    IncomingRecord,
    StorageUnavailableError,
    StoreClosedError,
    StoredMessage,
    StoreError,
)
from switchboard.store.sqlite.eventlog import DecisionLog, LoadedLog, Snapshot
from switchboard.store.sqlite.message_store import MessageStore
from switchboard.store.wire import RawMessages

__all__ = [
    "AppendResult",
    "DecisionLog",
    "FreshResults",
    "IncomingRecord",
    "LoadedLog",
    "MessageStore",
    "MessageStoreProtocol",
    "RawMessages",
    "Snapshot",
    "StorageUnavailableError",
    "StoreClosedError",
    "StoreError",
    "StoredMessage",
]
