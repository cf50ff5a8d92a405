"""The table of accepted channels: lookups by id and by address stay in step."""

from __future__ import annotations

from switchboard.connector import ChannelTable
from switchboard.protocol import ChannelDescriptor


def descriptor(channel_id: str, raw: str) -> ChannelDescriptor:
    return ChannelDescriptor.model_validate(
        {
            "id": channel_id,
            "type": "t",
            "label": channel_id,
            "direction": "bidirectional",
            "address": {"channelId": raw, "guild": "g"},
        }
    )


def test_a_channel_is_found_by_id_and_by_type_and_address_in_any_key_order() -> None:
    table = ChannelTable()
    table.put(descriptor("t:a", "1"))
    assert table.get("t:a") is not None
    found = table.find("t", {"guild": "g", "channelId": "1"})
    assert found is not None
    assert found.id == "t:a"
    assert table.find("other", {"guild": "g", "channelId": "1"}) is None


def test_replacing_a_descriptor_moves_its_address_index() -> None:
    table = ChannelTable()
    table.put(descriptor("t:a", "1"))
    table.put(descriptor("t:a", "2"))
    assert table.find("t", {"channelId": "1", "guild": "g"}) is None
    assert table.find("t", {"channelId": "2", "guild": "g"}) is not None
    assert len(table) == 1


def test_removing_a_channel_forgets_it_everywhere() -> None:
    table = ChannelTable()
    table.put(descriptor("t:a", "1"))
    table.set_open("t:a", False)
    assert table.remove("t:a") is not None
    assert "t:a" not in table
    assert table.find("t", {"channelId": "1", "guild": "g"}) is None
    assert not table.is_open("t:a")


def test_a_channel_is_open_until_the_host_closes_it() -> None:
    table = ChannelTable()
    table.put(descriptor("t:a", "1"))
    assert table.is_open("t:a")
    table.set_open("t:a", False)
    assert not table.is_open("t:a")
    table.set_open("t:a", True)
    assert table.is_open("t:a")
    table.set_open("t:unknown", False)
    assert not table.is_open("t:unknown")
