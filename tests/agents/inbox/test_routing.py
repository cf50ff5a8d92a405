"""The routing rule on its own: the mention matcher and the invariants of :class:`Router`.

A real registry with channels registered straight into it, a roster built from identities, and
the leaves table in an in-memory SQLite database; messages are built as the store reads them
back.
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from switchboard.agents.inbox.routing import Router, handles_in
from switchboard.agents.roster.roster import Identity, Roster
from switchboard.channels import ChannelRef, ChannelRegistry
from switchboard.events import ChannelsRegistered
from switchboard.protocol.channel_messages import ChannelDescriptor
from switchboard.store import StoredMessage
from switchboard.store.mailmark import MAIL_SERVER
from switchboard.store.sqlite.leaves import ChannelLeaves
from tests.fake import descriptor

ROOMS = ("lobby", "lab", "mod", "random")
NAMES = st.from_regex(r"[a-z][a-z0-9]{0,7}", fullmatch=True)
WORD_CHARS = string.ascii_letters + string.digits + "_"


def stored(
    channel: str,
    text: str = "hi",
    *,
    seq: int = 1,
    server: str = "s1",
    metadata: dict[str, Any] | None = None,
) -> StoredMessage:
    return StoredMessage(
        seq=seq,
        server_id=server,
        channel_id=channel,
        message_id=f"m{seq}",
        thread_id=None,
        author_id="u1",
        author_name="Ann",
        timestamp="2026-11-29T12:00:00Z",
        content=[{"type": "text", "text": text}],
        metadata=metadata,
        tags=None,
        received_at=0.0,
    )


def mail(to: str, sender: str = "alice", seq: int = 1) -> StoredMessage:
    return StoredMessage(
        seq=seq,
        server_id=MAIL_SERVER,
        channel_id=f"@{to}",
        message_id=f"@{sender}#{seq}",
        thread_id=None,
        author_id=f"@{sender}",
        author_name=sender,
        timestamp="2026-11-29T12:00:00Z",
        content=[{"type": "text", "text": f"hello @{to}"}],
        metadata={"kind": "mail", "from": f"@{sender}", "to": f"@{to}"},
        tags=None,
        received_at=0.0,
    )


def registry_of(*rooms: str) -> ChannelRegistry:
    registry = ChannelRegistry()
    registry.register("s1", [ChannelDescriptor.model_validate(descriptor(r)) for r in rooms])
    return registry


def three() -> list[Identity]:
    return [
        Identity("resident", "@resident", home="lobby", default_delivery=True),
        Identity("researcher", "@researcher", home="lab", mentions=("<@42>",)),
        Identity("worker", "@worker"),
    ]


def router_of(identities: Sequence[Identity], *rooms: str) -> Router:
    return Router(Roster(identities), registry_of(*(rooms or ROOMS)), ChannelLeaves.open())


# -- the mention matcher ------------------------------------------------------------------------


@given(
    NAMES,
    st.sampled_from(["", " ", "hi ", "(", "\n", "!", '"', "'"]),
    st.sampled_from(["", " ", ".", ",", "!", "?", ":", ")", "'s", ". Next", "\n"]),
)
def test_a_handle_at_the_start_end_or_after_punctuation_addresses_its_agent(
    name: str, before: str, after: str
) -> None:
    assert name in handles_in(f"{before}@{name}{after}")


@given(NAMES, st.text(alphabet=WORD_CHARS, min_size=1, max_size=4))
def test_a_handle_embedded_in_a_longer_word_addresses_nobody_by_that_name(
    name: str, tail: str
) -> None:
    assert name not in handles_in(f"@{name}{tail} hi")
    assert name not in handles_in(f"@{name}-{tail} hi")
    assert name not in handles_in(f"{tail}@{name} hi")


@given(NAMES, st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6))
def test_an_email_like_address_is_not_a_mention(name: str, local: str) -> None:
    assert name not in handles_in(f"write to {local}@{name}.com today")
    assert name not in handles_in(f"see @{name}.com")


@given(NAMES)
def test_a_handle_is_matched_whatever_its_case(name: str) -> None:
    assert name in handles_in(f"hey @{name.upper()}!")


def test_a_platform_mention_string_addresses_its_agent_and_a_longer_one_does_not() -> None:
    router = router_of(three())
    assert router.targets(stored("random", "ping <@42> please")) == {"researcher"}
    assert router.targets(stored("random", "ping <@421> please")) == {"resident"}


def test_mentions_listed_by_the_connector_in_metadata_address_their_agents() -> None:
    router = router_of(three())
    listed = stored("random", "no handle here", metadata={"mentions": ["42", {"name": "Worker"}]})
    assert router.targets(listed) == {"researcher", "worker"}


# -- routing invariants -------------------------------------------------------------------------

ROSTERS = st.lists(
    st.tuples(
        NAMES,
        st.sampled_from([None, *ROOMS, "nowhere"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=5,
    unique_by=lambda t: t[0],
)


def roster_from(drawn: list[tuple[str, str | None, bool]], default: int) -> list[Identity]:
    return [
        Identity(
            name,
            f"@{name}",
            home=home,
            receives_untargeted=untargeted,
            default_delivery=i == default % len(drawn),
        )
        for i, (name, home, untargeted) in enumerate(drawn)
    ]


@given(ROSTERS, st.integers(0, 4), NAMES, st.sampled_from(["alice", "switchboard"]))
def test_mail_is_routed_to_exactly_its_recipient(
    drawn: list[tuple[str, str | None, bool]], default: int, stranger: str, sender: str
) -> None:
    identities = roster_from(drawn, default)
    router = router_of(identities)
    names = [i.name for i in identities]
    for to in names:
        m = mail(to, sender)
        assert router.targets(m) == {to}
        assert [n for n in names if router.routes(n, m)] == [to]
        if stranger not in names:  # a reader outside the roster sees no mail
            assert not router.routes(stranger, m)


@given(
    ROSTERS,
    st.integers(0, 4),
    st.sampled_from(ROOMS),
    st.lists(st.integers(0, 4), max_size=3),
    st.text(max_size=20),
)
def test_every_channel_message_reaches_its_homes_its_addressees_or_the_untargeted(
    drawn: list[tuple[str, str | None, bool]],
    default: int,
    room: str,
    mentioned: list[int],
    noise: str,
) -> None:
    identities = roster_from(drawn, default)
    router = router_of(identities)
    names = [i.name for i in identities]
    addressed = {names[i % len(names)] for i in mentioned}
    text = " ".join([noise.replace("@", ""), *(f"@{n}" for n in sorted(addressed))])
    m = stored(room, text)
    targets = router.targets(m)
    assert targets  # a default agent is always there: nothing is routed to nobody
    homes = {i.name for i in identities if i.home == room}
    untargeted = {i.name for i in identities if i.receives_untargeted} or {
        i.name for i in identities if i.default_delivery
    }
    if len(identities) == 1:
        assert targets == set(names)
    elif homes or addressed:
        assert targets == homes | addressed  # home and mentions, never the untargeted besides
    else:
        assert targets == untargeted
    for name in names:
        assert router.routes(name, m) == (name in targets)
    assert router.routes("not-in-the-roster", m)


@given(ROSTERS, st.integers(0, 4), st.sampled_from(ROOMS), st.integers(0, 4))
def test_leaving_a_channel_stops_its_traffic_but_never_routes_it_to_nobody(
    drawn: list[tuple[str, str | None, bool]], default: int, room: str, leaver: int
) -> None:
    identities = roster_from(drawn, default)
    router = router_of(identities)
    who = identities[leaver % len(identities)].name
    ref = ChannelRef("s1", room)
    router.leave(who, ref)
    m = stored(room, f"@{who} are you there?")
    targets = router.targets(m)
    assert targets
    if len(identities) > 1 and targets - {who}:
        assert who not in targets
    assert router.rejoin(who, ref)
    assert who in router.targets(m)


WIRE_TEXTS = st.one_of(
    st.text(max_size=12),
    st.builds(lambda a, b: f"{a} @{b}", st.text(max_size=6), NAMES),
    st.sampled_from(["<@42>", "hi <@42>!", "@resident", "mail me@x.com", ""]),
)


@given(
    ROSTERS,
    st.integers(0, 4),
    st.booleans(),
    st.lists(
        st.tuples(
            st.sampled_from([*ROOMS, "nowhere", ""]),
            st.lists(WIRE_TEXTS, max_size=2),
            st.sampled_from([None, {}, {"mentions": ["<@42>"]}, {"mentions": [{"handle": "w"}]}]),
        ),
        max_size=6,
    ),
    st.lists(st.tuples(st.integers(0, 4), st.sampled_from(ROOMS)), max_size=2),
)
def test_the_batch_form_of_wire_routing_agrees_with_routing_one_message_at_a_time(
    drawn: list[tuple[str, str | None, bool]],
    default: int,
    platform: bool,
    messages: list[tuple[str, list[str], dict[str, Any] | None]],
    leaves: list[tuple[int, str]],
) -> None:
    identities = roster_from(drawn, default)
    if platform:
        identities[0] = dataclasses.replace(identities[0], mentions=("<@42>",))
    router = router_of(identities)
    for who, room in leaves:
        router.leave(identities[who % len(identities)].name, ChannelRef("s1", room))
    wire = [
        {
            "channelId": room,
            "content": [{"type": "text", "text": t} for t in texts],
            **({} if meta is None else {"metadata": meta}),
        }
        for room, texts, meta in messages
    ]
    for name in [i.name for i in identities] + ["outsider"]:
        for server in ("s1", "s2", MAIL_SERVER):
            reader = router.wire_reader(name, server)
            for m in wire:
                assert reader(m) == router.routes_wire(name, server, m)


def test_a_home_is_resolved_again_when_its_channel_is_registered_later() -> None:
    registry = ChannelRegistry()
    router = Router(Roster(three()), registry, ChannelLeaves.open())
    registry.register("s1", [ChannelDescriptor.model_validate(descriptor("x", label="Lab"))])
    # "lab" names no channel id yet: the label picks s1:x once it is registered.
    router.observe(ChannelsRegistered("s1", ("x",)))
    assert router.targets(stored("x")) == {"researcher"}


def test_an_unregistered_home_still_matches_by_its_channel_id() -> None:
    router = Router(Roster(three()), ChannelRegistry(), ChannelLeaves.open())
    assert router.targets(stored("lab")) == {"researcher"}
    assert router.targets(stored("elsewhere")) == {"resident"}


def test_a_roster_change_is_seen_at_the_next_message() -> None:
    roster = Roster(three())
    router = Router(roster, registry_of(*ROOMS), ChannelLeaves.open())
    assert router.targets(stored("mod")) == {"resident"}
    roster.add(Identity("moderator", "@moderator", home="mod"))
    assert router.targets(stored("mod")) == {"moderator"}


def test_the_leaves_are_kept_across_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "leaves.sqlite"
    leaves = ChannelLeaves.open(path)
    assert leaves.leave("worker", "s1", "lab")
    assert not leaves.leave("worker", "s1", "lab")
    leaves.close()
    again = ChannelLeaves.open(path)
    try:
        assert again.rows() == {("worker", "s1", "lab")}
        assert again.rejoin("worker", "s1", "lab")
        assert not again.rejoin("worker", "s1", "lab")
    finally:
        again.close()
