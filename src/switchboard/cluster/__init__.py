"""switchboard.cluster: N instances sharing one PostgreSQL store, signalled over NATS.

Installed with the ``cluster`` extra (psycopg, psycopg-pool, nats-py); the only package that
imports those clients (an import-linter contract), so the default SQLite install never needs
them. :mod:`.pg` is the PostgreSQL backend of every durable thing (see docs/cluster.md).
The top-level modules are the cluster itself: ``placement`` (rendezvous hashing with
hysteresis, pure), ``leases`` (lease and heartbeat SQL on PostgreSQL's clock), ``keeper``
(renewals, self-fencing, handoff), ``bus`` (head and invalidation hints over NATS, backed by
polling), ``rpc`` (requests to a connector's owner on another instance), ``replica`` (the
channels of connectors owned elsewhere), ``node`` (one instance wired to a host), ``view``
(what operators see of the cluster) and ``probe`` (whether the NATS server answers).
"""
