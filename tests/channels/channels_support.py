"""Test support for the channel registry: a small frozen descriptor and a builder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Desc:
    """A channel descriptor with the attributes the registry reads."""

    id: str
    type: str = "test"
    label: str = ""
    direction: str = "bidirectional"
    address: Mapping[str, object] | None = None
    metadata: Mapping[str, object] | None = None
    initially_open: bool | None = None


def desc(
    channel_id: str,
    label: str = "",
    *,
    raw: str | int | None = None,
    dm_name: str | None = None,
    dm_id: str | int | None = None,
) -> Desc:
    """A descriptor; ``raw`` becomes ``address.channelId``; a DM name or id makes it a DM."""
    address = None if raw is None else {"channelId": raw}
    metadata: dict[str, object] | None = None
    if dm_name is not None or dm_id is not None:
        metadata = {"channelType": "dm"}
        if dm_name is not None:
            metadata["recipientName"] = dm_name
        if dm_id is not None:
            metadata["recipientId"] = dm_id
    return Desc(channel_id, label=label, address=address, metadata=metadata)
