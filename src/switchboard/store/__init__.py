"""switchboard.store: durable inboxes for incoming chat messages (SQLite in WAL mode).

Every accepted ``channels/incoming`` message is committed here before the connector is told it
was accepted, so a restart loses none. Agents read the messages that arrived after their cursor
and can wait for new ones.

Modules, one concern each:

* :mod:`~switchboard.store.records`: value types and the ``StoreError`` tree;
* :mod:`~switchboard.store.interface`: ``MessageStoreProtocol``, the backend contract;
* :mod:`~switchboard.store.schema`: the on-disk format (schema version, SQL, row codec);
* :mod:`~switchboard.store.writer`: the single writer thread with group commit;
* :mod:`~switchboard.store.message_store`: ``MessageStore``, the asyncio-facing SQLite backend.

The store knows nothing of the host, tools, channels or transport, and imports none of them.
"""

from switchboard.store.interface import MessageStoreProtocol
from switchboard.store.message_store import MessageStore
from switchboard.store.records import (
    AppendResult,
    IncomingRecord,
    StoreClosedError,
    StoredMessage,
    StoreError,
)

__all__ = [
    "AppendResult",
    "IncomingRecord",
    "MessageStore",
    "MessageStoreProtocol",
    "StoreClosedError",
    "StoreError",
    "StoredMessage",
]
