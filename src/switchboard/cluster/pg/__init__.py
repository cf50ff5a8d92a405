"""switchboard.cluster.pg: the PostgreSQL backend of every durable thing.

It sits at the store layer: it implements :mod:`switchboard.store.interface` and
:mod:`switchboard.directory.interface` over one shared database (migrations in :mod:`.schema`),
and imports nothing above them. See docs/cluster.md for the tables, ordering and fencing.
"""
