"""switchboard.store.sqlite: the embedded backend, one SQLite file in WAL mode.

- :mod:`.message_store`: ``MessageStore``, the asyncio-facing message store, over
  :mod:`.schema` (one row per batch), :mod:`.writer` (seqs, duplicates, group commit on one
  thread), :mod:`.checkpoint` (WAL checkpoints beside it) and :mod:`.numbered` (where numbered
  ids stand);
- :mod:`.eventlog`: ``DecisionLog``, over :mod:`.eventlog_writer`;
- :mod:`.leaves`: ``ChannelLeaves``; :mod:`.lifetimes`: the agents' lifetime records;
- :mod:`.retention`: deleting old, acknowledged messages in small chunks through the writer.
"""

from switchboard.store.sqlite.eventlog import DecisionLog
from switchboard.store.sqlite.leaves import ChannelLeaves
from switchboard.store.sqlite.lifetimes import LifetimeFile, lifetime_records
from switchboard.store.sqlite.message_store import MessageStore

__all__ = ["ChannelLeaves", "DecisionLog", "LifetimeFile", "MessageStore", "lifetime_records"]
