"""switchboard.cluster: N instances sharing one PostgreSQL store, signalled over NATS.

Installed with the ``cluster`` extra (psycopg, psycopg-pool, nats-py); the only package that
imports those clients (an import-linter contract), so the default SQLite install never needs
them. :mod:`.pg` is the PostgreSQL backend of every durable thing (see docs/cluster.md).
"""
