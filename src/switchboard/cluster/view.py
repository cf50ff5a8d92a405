"""What operators see of the cluster: the ``cluster`` part of ``/status``, readiness reasons,
and the counters ``/metrics`` exports (docs/cluster.md, "Operating a cluster").

Instances come from the ``instances`` table as of the last lease tick (each heartbeat carries
the instance's head and the connectors it runs), leases from ``connector_leases``; an
instance's head lag is how far its head is behind the highest head any live instance
reported. Reading this does no I/O.
"""

from __future__ import annotations

from typing import Any

from switchboard.cluster.node import JOB_PREFIX, ClusterNode

__all__ = ["ClusterStatus"]


class ClusterStatus:
    """:class:`~switchboard.status.model.ClusterView` of one node."""

    def __init__(self, node: ClusterNode) -> None:
        self._node = node

    def runs_here(self, server_id: str) -> bool:
        return self._node.owns(server_id)

    def not_ready(self) -> list[str]:
        node = self._node
        reasons: list[str] = []
        if not node.keeper.database_ok:
            reasons.append(
                "no database: the last lease renewal could not reach PostgreSQL, so this "
                "instance owns no connector until it can"
            )
        if not node.bus.connected:
            reasons.append(
                f"no NATS: not connected to {node.cluster.nats_url}; requests to connectors "
                "owned elsewhere are refused, and other instances' messages arrive by polling"
            )
        for row in node.keeper.leases:
            if row.key.startswith(JOB_PREFIX) or row.key not in node.configs:
                continue
            if row.owner is None or row.expires_in <= 0:
                reasons.append(f"no lease: no live instance owns connector {row.key!r}")
        return reasons

    def snapshot(self) -> dict[str, Any]:
        node = self._node
        keeper = node.keeper
        live = keeper.live
        heads = {i.id: int(i.info.get("head", 0) or 0) for i in keeper.instances if i.id in live}
        heads[node.me] = node.store.latest_seq
        top = max(heads.values(), default=0)
        owned: dict[str, list[dict[str, Any]]] = {}
        for row in keeper.leases:
            if row.owner is not None and row.expires_in > 0:
                owned.setdefault(row.owner, []).append({"key": row.key, "epoch": row.epoch})
        instances = []
        for i in keeper.instances:
            head = heads.get(i.id)
            instances.append(
                {
                    "id": i.id,
                    "http_url": i.http_url,
                    "live": i.id in live,
                    "me": i.id == node.me,
                    "up_for": round(i.up_for, 3),
                    "heartbeat_age": round(i.silent_for, 3),
                    "head": head,
                    "head_lag": None if head is None else top - head,
                    "nats": i.info.get("nats"),
                    "owns": owned.get(i.id, []),
                }
            )
        stats, bus = keeper.stats, node.bus.stats
        return {
            "instance": node.me,
            "lease_ttl": keeper.ttl,
            "instances": instances,
            "leases": [
                {
                    "key": r.key,
                    "owner": r.owner,
                    "epoch": r.epoch,
                    "expires_in": round(r.expires_in, 3) if r.expires_in > -1e6 else None,
                }
                for r in keeper.leases
            ],
            "counters": {
                "leases_acquired": stats.acquired,
                "failovers": stats.failovers,
                "handed_over": stats.handed_over,
                "self_fenced": stats.self_fenced,
                "leases_lost": stats.lost,
                "lease_tick_errors": stats.tick_errors,
                "stale_epoch_rejections": node.store.stale_rejections,
                "head_polls": node.head.polls,
                "rpc_served": node.service.served,
                "rpc_dropped_late": node.service.dropped_late,
                "channel_mirror_writes": node.mirror_writes,
                "channel_mirror_write_failures": node.mirror_failures,
                "channel_mirror_fenced": node.mirror.fenced,
                "channel_mirror_reads": node.mirror_reads,
                "channel_mirror_read_failures": node.mirror_read_failures,
            },
            "nats": {
                "url": node.cluster.nats_url,
                "connected": node.bus.connected,
                "requests": bus.requests,
                "request_seconds": round(bus.request_seconds, 6),
                "no_responders": bus.no_responders,
                "timeouts": bus.timeouts,
                "refused_while_down": bus.refused_down,
                "heads_sent": bus.heads_sent,
                "heads_heard": bus.heads_heard,
                "invalidations_heard": bus.invalidations_heard,
                "reconnects": bus.reconnects,
            },
        }
