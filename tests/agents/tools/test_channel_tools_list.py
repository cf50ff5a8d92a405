"""channel_list over MCP, and properties of the names it shows through the host API
(issue #3; channel-registry.md §3.2, §3.6, §4.7, §7.2, T01, T22)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from switchboard.agents.desk.defaults import DefaultChannel
from switchboard.agents.desk.desk import AgentDesk, Locus, LocusFrom, Turn
from switchboard.agents.desk.views import channel_rows
from switchboard.agents.speech.publishing import choose_destination
from switchboard.app import build_server
from switchboard.app.board import Switchboard
from switchboard.channels import ChannelEntry, ChannelRef, ChannelRegistry, qualified_name
from switchboard.refusals.refusal import Refusal, RefusalKind
from tests.agents.tools.channel_support import call, lifecycle_fake
from tests.channels.channels_support import Desc
from tests.fake import board_of, descriptor, message

anyio_only = pytest.mark.anyio


def _refs(board: Switchboard) -> list[ChannelRef]:
    return [e.ref for e in board.registry.entries()]


@anyio_only
async def test_a_shared_id_is_shown_qualified_and_a_unique_one_by_its_id(tmp_path: Path) -> None:
    """T01; `desired` comes from the host's desired state, `servers` from the sessions."""
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        await a.call("channels/register", {"channels": [descriptor("general"), descriptor("s")]})
        await b.call("channels/register", {"channels": [descriptor("general", "inbound")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            listed = await call(client, "channel_list")
        desired = {
            (r.server_id, r.channel_id): board.lifecycle.desired_shown(r) for r in _refs(board)
        }
    rows = {(c["server_id"], c["channel_id"]): c for c in listed["channels"]}
    assert list(rows) == [("a", "general"), ("a", "s"), ("b", "general")]
    assert rows[("a", "general")]["name"] == "a:general"
    assert rows[("b", "general")]["name"] == "b:general"
    assert rows[("a", "s")]["name"] == "s"
    assert rows[("a", "general")]["prose_target"] == "a:general"
    assert rows[("a", "s")]["prose_target"] == "#s"
    assert rows[("b", "general")]["prose_target"] is None  # inbound-only takes no speech
    assert {key: row["desired"] for key, row in rows.items()} == desired
    assert listed["servers"] == {"a": "ready", "b": "ready"}


@anyio_only
async def test_a_channel_nobody_decided_about_is_listed_as_default_until_a_decision(
    tmp_path: Path,
) -> None:
    """A fresh run: nobody decided, so `desired` is "default" (not "closed", which read as a
    decision the open channel contradicts); the agent's close and open are shown as made."""
    a = lifecycle_fake()
    async with board_of(tmp_path, {"a": a}) as board:
        await a.call("channels/register", {"channels": [descriptor("general"), descriptor("s")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            fresh = await call(client, "channel_list")
            await call(client, "channel_close", {"channel": "general"})
            await call(client, "channel_open", {"channel": "s"})
            decided = await call(client, "channel_list")
    assert [c["desired"] for c in fresh["channels"]] == ["default", "default"]
    assert [c["desired"] for c in decided["channels"]] == ["closed", "open"]


@anyio_only
async def test_inside_a_turn_its_own_channel_is_shown_by_its_bare_id(tmp_path: Path) -> None:
    a, b = lifecycle_fake(), lifecycle_fake()
    async with board_of(tmp_path, {"a": a, "b": b}) as board:
        for fake in (a, b):
            await fake.call("channels/register", {"channels": [descriptor("general")]})
        await b.call("channels/incoming", {"messages": [message("general", "m1")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            read = await call(client, "inbox")
            listed = await call(client, "channel_list")
    names = {c["server_id"]: c["name"] for c in listed["channels"]}
    assert read["locus"] == "general"
    assert names == {"a": "a:general", "b": "general"}


@anyio_only
async def test_the_desired_state_is_what_the_host_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = lifecycle_fake()
    async with board_of(tmp_path, {"s": fake}) as board:
        closed = lambda ref: f"closed:{ref.channel_id}"  # noqa: E731
        monkeypatch.setattr(board.lifecycle, "desired_shown", closed)
        await fake.call("channels/register", {"channels": [descriptor("room")]})
        async with Client(build_server(board, agent="x"), mode="legacy") as client:
            listed = await call(client, "channel_list")
    assert listed["channels"][0]["desired"] == "closed:room"


# -- properties, through the host API (no MCP, for speed) --------------------------------------

SERVERS = ["a", "b", "a:b", "s"]
IDS = ["room", "b:room", "s:room", "general", "skip_reply", "a:b:room", "x y", "g:1"]
LABELS = ["", "#general", "room", "team room", "#room (A)", "#x"]
REFS = [ChannelRef(s, c) for s in SERVERS for c in IDS]
NAMES = sorted({*IDS, *(qualified_name(r) for r in REFS), "nowhere"})


def _registry(picked: list[tuple[ChannelRef, str, bool]]) -> ChannelRegistry:
    registry = ChannelRegistry()
    for ref, label, inbound in picked:
        direction = "inbound" if inbound else "bidirectional"
        registry.register(ref.server_id, [Desc(ref.channel_id, label=label, direction=direction)])
    return registry


def _desk(own: frozenset[ChannelRef]) -> AgentDesk:
    desk = AgentDesk("x")
    if own:
        desk.turn = Turn(1, own, Locus(None, LocusFrom.NONE, "no channel"))
    return desk


layouts = st.lists(
    st.tuples(st.sampled_from(REFS), st.sampled_from(LABELS), st.booleans()),
    max_size=14,
)
owns = st.frozensets(st.sampled_from(REFS), max_size=3)


@settings(max_examples=200, deadline=None)
@given(layouts, owns)
def test_every_name_channel_list_shows_picks_its_channel_for_a_publish(
    picked: list[tuple[ChannelRef, str, bool]], own: frozenset[ChannelRef]
) -> None:
    """Every `name` and `prose_target` shown resolves back to that channel, in that turn; a
    channel shown without a name is reached by its id with its server id."""
    registry = _registry(picked)
    desk = _desk(own)
    default = DefaultChannel(registry)
    for row in channel_rows(registry, desk.own, lambda ref: "unknown"):
        if row.name is not None:
            chosen = choose_destination(registry, desk, default, row.name)
            assert isinstance(chosen, ChannelEntry)
            assert chosen.ref == row.ref
        else:
            pair = choose_destination(
                registry, desk, default, row.ref.channel_id, row.ref.server_id
            )
            assert isinstance(pair, ChannelEntry)
            assert pair.ref == row.ref
        if row.prose_target is not None:
            entry = registry.names.resolve_prose_target(
                row.prose_target, for_speech=True, own=desk.own
            )
            assert entry.ref == row.ref


@settings(max_examples=200, deadline=None)
@given(layouts, owns, st.sampled_from(NAMES))
def test_a_publish_never_picks_one_of_several_channels_a_name_answers_to(
    picked: list[tuple[ChannelRef, str, bool]], own: frozenset[ChannelRef], name: str
) -> None:
    """Against a scan of every channel: the turn's own channels with that id decide first
    (one picks, several or a gone one refuse); else every channel whose id or qualified name
    is the name: one picks, several are refused with all of them as candidates."""
    registry = _registry(picked)
    desk = _desk(own)
    chosen = choose_destination(registry, desk, DefaultChannel(registry), name)
    bound = sorted(r for r in own if r.channel_id == name)
    if bound:
        if len(bound) == 1 and registry.get(bound[0]) is not None:
            assert isinstance(chosen, ChannelEntry)
            assert chosen.ref == bound[0]
        else:
            assert isinstance(chosen, Refusal)
            assert chosen.kind in (RefusalKind.AMBIGUOUS_CHANNEL, RefusalKind.UNKNOWN_CHANNEL)
        return
    hits = [
        e.ref
        for e in registry.entries()
        if e.ref.channel_id == name or qualified_name(e.ref) == name
    ]
    if len(hits) == 1:
        assert isinstance(chosen, ChannelEntry)
        assert chosen.ref == hits[0]
    elif hits:
        assert isinstance(chosen, Refusal)
        assert chosen.kind is RefusalKind.AMBIGUOUS_CHANNEL
        offered = {(c["server_id"], c["channel_id"]) for c in chosen.data["candidates"]}
        assert offered == {(r.server_id, r.channel_id) for r in hits}
