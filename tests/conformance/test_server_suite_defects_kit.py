"""Fast checks of what the kit added for the planted defects, without spawning anything."""

from __future__ import annotations

import pytest

from switchboard.conformance.server.answers import HostAnswers
from switchboard.conformance.server.manifest import BURST_WINDOW
from switchboard.conformance.server_suite import SERVER_CHECKS
from switchboard.protocol import Grant

pytestmark = pytest.mark.anyio

_GOOD = {"type": "x", "label": "L", "direction": "bidirectional"}


async def test_the_kit_can_list_itemized_results_in_reverse_so_only_ids_match_them() -> None:
    """S-26: results are keyed by id; the kit reverses them to catch positional readers."""
    host = HostAnswers()
    host.ready, host.granted = True, Grant(["channels.*"])
    host.reject_first = host.reverse_results = True
    answer = await host.answer(
        "channels/register",
        {"channels": [{"id": "x:1", **_GOOD}, {"id": "x:2", **_GOOD}, {"id": "x:3", **_GOOD}]},
    )
    assert answer["results"] == [
        {"id": "x:3", "accepted": True},
        {"id": "x:2", "accepted": True},
        {"id": "x:1", "accepted": False, "reason": "capability_denied"},
    ]
    assert host.accepted_ids() == ["x:2", "x:3"]


async def test_the_kit_lists_itemized_results_in_descriptor_order_unless_asked() -> None:
    host = HostAnswers()
    host.ready, host.granted = True, Grant(["channels.register"])
    answer = await host.answer(
        "channels/register",
        {"channels": [{"id": "x:1", **_GOOD}, {"id": "x:2", **_GOOD}]},
    )
    assert [item["id"] for item in answer["results"]] == ["x:1", "x:2"]


def test_the_burst_check_is_a_should_for_s41_with_a_short_window() -> None:
    """S-41 is a SHOULD and the spec names no window: the kit's is short."""
    check = SERVER_CHECKS["server.manifest.bursts_coalesced"]
    assert check.requirements == ("S-41",)
    assert check.level == "SHOULD"
    assert 0 < BURST_WINDOW <= 1.0
