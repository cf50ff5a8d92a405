"""The ``[store]`` section: where the store is, how durable its commits are, and retention."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    ByteSize,
    Field,
    field_validator,
)

from switchboard.config.common import Strict, parse_duration

__all__ = ["StoreConfig"]


class StoreConfig(Strict):
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
        default=None, description='cap on the pages in use ("2GB" decimal, "2GiB" binary)'
    )
    retention_interval: float = Field(default=60.0, description="seconds between two passes")

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
