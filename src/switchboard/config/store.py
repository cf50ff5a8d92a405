"""The ``[store]`` section: which backend keeps the durable things, how durable its commits
are, and retention; and ``[cluster]``, the settings of one instance of many."""

from __future__ import annotations

import os
import socket
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    ByteSize,
    Field,
    field_validator,
    model_validator,
)

from switchboard.config.common import Strict, parse_duration

__all__ = ["ClusterConfig", "StoreConfig", "default_instance_id", "without_password"]

_PG_SCHEMES = ("postgresql://", "postgres://")


class StoreConfig(Strict):
    backend: Literal["sqlite", "postgres"] = Field(
        default="sqlite",
        description='"sqlite": the embedded file of `path`; "postgres": the database of `url` '
        "(needs the cluster extra, docs/cluster.md)",
    )
    url: str | None = Field(
        default=None,
        min_length=1,
        description="with backend = postgres: the database, postgresql://host:port/name "
        "(usually with ${VARIABLES} for the password)",
    )
    path: str = "switchboard.sqlite"
    synchronous: Literal["normal", "full"] = "normal"
    snapshot_every: int = Field(
        default=10_000, ge=1, description="decision events between two decision-log snapshots"
    )
    # Retention (docs/operations.md, "Retention"): durations are seconds once loaded.
    retain: float | None = Field(
        default=None, description='keep messages at least this long ("30d"); unset keeps all'
    )
    max_size: ByteSize | None = Field(
        default=None,
        description="cap on the pages in use (SQLite) or the batch rows' bytes (PostgreSQL); "
        '"2GB" decimal, "2GiB" binary',
    )
    retention_interval: float = Field(default=60.0, description="seconds between two passes")

    @property
    def place(self) -> str:
        """Where the store is, fit to show: the SQLite file, or the database's URL without its
        password."""
        if self.backend == "postgres" and self.url is not None:
            return without_password(self.url)
        return self.path

    @field_validator("retain", "retention_interval", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return None if value is None else parse_duration(value)

    @field_validator("max_size")
    @classmethod
    def _positive_size(cls, value: ByteSize | None) -> ByteSize | None:
        if value is not None and value <= 0:
            raise ValueError('max_size must be more than 0 bytes, such as "2GB"')
        return value

    @model_validator(mode="after")
    def _backend_and_url(self) -> StoreConfig:
        if self.backend == "sqlite":
            if self.url is not None:
                raise ValueError(
                    '[store] `url` names a PostgreSQL database, used with backend = "postgres"; '
                    'set backend = "postgres" too, or remove `url` to keep the SQLite file of '
                    "`path`"
                )
            return self
        if self.url is None:
            raise ValueError(
                '[store] backend = "postgres" needs `url`, such as '
                '"postgresql://127.0.0.1:5432/switchboard"'
            )
        if not self.url.startswith(_PG_SCHEMES):
            raise ValueError(
                "[store] `url` must be a postgresql:// URL, such as "
                '"postgresql://127.0.0.1:5432/switchboard"'
            )
        return self


def without_password(url: str) -> str:
    """``url`` with the password of its user part left out (for messages and the status)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}{host}{port}"))


def default_instance_id() -> str:
    """``<hostname>-<pid>``: unique among the instances of one deployment."""
    return f"{socket.gethostname()}-{os.getpid()}"


class ClusterConfig(Strict):
    """``[cluster]``: this process is one instance of many sharing the PostgreSQL store
    (docs/cluster.md); every instance has the same connectors and agents."""

    nats_url: str = Field(
        default="nats://127.0.0.1:4222", min_length=1, description="the NATS server"
    )
    instance_id: str = Field(
        default_factory=default_instance_id,
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$",
        description="this instance's name among its peers (default: hostname-pid)",
    )
    lease_ttl: float = Field(
        default=5.0, description="seconds a connector lease lasts unless renewed"
    )
    head_interval: float = Field(
        default=0.25,
        ge=0.0,
        le=5.0,
        description="seconds between two head announcements of one instance, and between two "
        "reads of other instances' commits for this instance's agents, at most: longer costs "
        "less per message and delays a push to an agent on another instance by up to as much",
    )
    hold: float = Field(
        default=60.0,
        description="seconds an instance keeps a connector (or job) before handing it to a "
        "newly preferred instance (0: at once)",
    )
    settle: float = Field(
        default=30.0,
        description="seconds a newly preferred instance must have been live before it is "
        "handed a key (0: at once)",
    )
    subject_prefix: str = Field(
        default="sb",
        min_length=1,
        pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$",
        description="NATS subjects are <subject_prefix>.<...>; one per deployment",
    )

    @field_validator("lease_ttl", mode="before")
    @classmethod
    def _ttl(cls, value: object) -> object:
        return parse_duration(value)

    @field_validator("hold", "settle", "head_interval", mode="before")
    @classmethod
    def _hysteresis(cls, value: object) -> object:
        # Zero is allowed (hand over at once; announce every commit), unlike a lease's duration.
        if isinstance(value, int | float) and not isinstance(value, bool):
            if value < 0 or value != value or value == float("inf"):
                raise ValueError(
                    f"must be a non-negative, finite number of seconds (or a duration such as "
                    f'"90s"), not {value!r}'
                )
            return float(value)
        return parse_duration(value)

    @field_validator("nats_url")
    @classmethod
    def _nats_scheme(cls, value: str) -> str:
        if not value.startswith(("nats://", "tls://")):
            raise ValueError(
                f'[cluster] `nats_url` must be a nats:// URL, such as "nats://127.0.0.1:4222", '
                f"not {value!r}"
            )
        return value
