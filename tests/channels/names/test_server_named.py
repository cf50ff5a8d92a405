"""Which known server a name nothing answers to is a qualified name of (issue #26, item 5):
matched against the server ids, never by splitting the name at a colon, and never guessed
when several servers could be meant."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from switchboard.channels import server_named

SERVERS = ["gone", "a", "a:b", "x:y:z", "s p", ":"]
PIECES = [*SERVERS, ":", "room", "b", "g", "", "y", "z"]


def _by_every_colon(name: str, server_ids: list[str]) -> set[str]:
    """The brute-force reading: cut ``name`` at each of its colons (a non-empty rest after
    it) and keep the servers whose id is what stands before the cut."""
    return {
        name[:i]
        for i, ch in enumerate(name)
        if ch == ":" and i + 1 < len(name) and name[:i] in server_ids
    }


@given(
    st.lists(st.sampled_from(PIECES), max_size=6).map("".join),
    st.lists(st.sampled_from(SERVERS), unique=True),
)
def test_a_name_is_a_servers_only_when_exactly_one_server_id_and_a_colon_begin_it(
    name: str, server_ids: list[str]
) -> None:
    found = _by_every_colon(name, server_ids)
    assert server_named(name, server_ids) == (found.pop() if len(found) == 1 else None)


def test_the_ids_are_matched_whole_and_an_empty_rest_names_no_channel() -> None:
    assert server_named("gone:g", ["gone", "a"]) == "gone"
    assert server_named("gone:g:h", ["gone"]) == "gone"  # the rest is the channel id, colons too
    assert server_named("gone:", ["gone"]) is None
    assert server_named("gon:g", ["gone"]) is None
    assert server_named("g", ["gone"]) is None
    assert server_named("x:y:z:room", ["x", "x:y:z"]) is None  # two could be meant: no guess
    assert server_named("x:y:z:room", ["x:y:z"]) == "x:y:z"
