"""Claim semantics (issue #12, item 2), as properties over sequences of claims, and examples.

The rules: a free address is taken (under the token if given); the same token refreshes (fields
left out keep their values), marks online and updates last-seen; an address listed without a
token is taken over by a claim with one; otherwise "held by another owner" when another token
holds it, "already registered" when neither side has one.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.directory import (
    AlreadyRegistered,
    Directory,
    HeldByAnotherOwner,
    NameTaken,
    NotFound,
)

from .conftest import FakeClock

ADDRESSES = st.sampled_from(["@a", "@b", "svc", "research:summarize"])
TOKENS = st.sampled_from([None, "token-one", "token-two"])
DESCRIPTIONS = st.one_of(st.none(), st.sampled_from(["first", "second"]))
CLAIMS = st.lists(st.tuples(ADDRESSES, TOKENS, DESCRIPTIONS), max_size=12)


def _expected(held: dict[str, str | None], address: str, token: str | None) -> str:
    if address not in held:
        return "taken"
    owner = held[address]
    if owner is not None and owner == token:
        return "refreshed"
    if owner is None and token is not None:
        return "taken_over"
    return "held_by_another_owner" if owner is not None else "already_registered"


@settings(max_examples=60, deadline=None)
@given(CLAIMS)
def test_every_claim_in_any_sequence_follows_the_claim_rules_and_keeps_left_out_fields(
    claims: list[tuple[str, str | None, str | None]],
) -> None:
    clock = FakeClock()
    held: dict[str, str | None] = {}
    descriptions: dict[str, str] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        Directory.open(Path(tmp) / "store.sqlite", clock=clock) as directory,
    ):
        for address, token, description in claims:
            clock.advance(1)
            expected = _expected(held, address, token)
            if expected in ("held_by_another_owner", "already_registered"):
                before = directory.lookup(address)
                with pytest.raises(NameTaken) as caught:
                    directory.claim(address, token=token, description=description)
                assert caught.value.name == expected
                assert directory.lookup(address) == before
                continue
            result = directory.claim(address, token=token, description=description)
            assert result.outcome == expected
            if expected == "taken":
                held[address] = token
                descriptions[address] = description or ""
            elif expected == "taken_over":
                held[address] = token
            if description is not None:
                descriptions[address] = description
            entry = result.entry
            assert entry.description == descriptions[address]
            assert entry.online
            assert entry.last_seen == clock.now
            assert entry.held == (held[address] is not None)


@settings(max_examples=30, deadline=None)
@given(CLAIMS)
def test_no_entry_ever_shows_an_owner_token_or_its_hash(
    claims: list[tuple[str, str | None, str | None]],
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        Directory.open(Path(tmp) / "store.sqlite", clock=FakeClock()) as directory,
    ):
        for address, token, description in claims:
            with contextlib.suppress(NameTaken):
                directory.claim(address, token=token, description=description)
        page = directory.list(limit=500)
        shown = repr([e.to_public() for e in page.entries]) + repr(page)
        assert "token-one" not in shown
        assert "token-two" not in shown
        assert "sha256" not in shown


def test_a_refresh_keeps_tags_metadata_and_capability_that_the_claim_leaves_out(
    directory: Directory, clock: FakeClock
) -> None:
    directory.claim(
        "@worker", token="t", capability="summaries", tags=["x", "y"], metadata={"k": 1}
    )
    directory.set_online("@worker", False, token="t")
    clock.advance(30)
    refreshed = directory.claim("@worker", token="t", description="now with words")
    assert refreshed.outcome == "refreshed"
    entry = refreshed.entry
    assert (entry.capability, entry.tags, entry.metadata) == ("summaries", ("x", "y"), {"k": 1})
    assert entry.description == "now with words"
    assert entry.online
    assert entry.last_seen == clock.now


def test_one_identity_may_hold_an_agent_address_and_a_service_address(
    directory: Directory,
) -> None:
    directory.claim("@researcher", token="r", holder="@researcher")
    directory.claim("research:summarize", token="r", holder="@researcher")
    page = directory.list(owner="@researcher")
    assert [e.address for e in page.entries] == ["@researcher", "research:summarize"]
    assert page.total == 2


def test_a_held_address_cannot_be_removed_retagged_or_marked_busy_without_its_token(
    directory: Directory,
) -> None:
    directory.claim("@mine", token="secret")
    changes: list[Callable[[], object]] = [
        lambda: directory.unregister("@mine", token="guess"),
        lambda: directory.retag("@mine", ["x"]),
        lambda: directory.set_busy("@mine", True, token="guess"),
    ]
    for change in changes:
        with pytest.raises(HeldByAnotherOwner, match="held by another owner"):
            change()
    assert directory.set_busy("@mine", True, token="secret").busy
    assert directory.unregister("@mine", force=True).address == "@mine"
    with pytest.raises(NotFound):
        directory.lookup("@mine")


def test_register_never_takes_over_an_address_even_an_unheld_one(directory: Directory) -> None:
    directory.register("weather")
    with pytest.raises(AlreadyRegistered, match="already registered"):
        directory.register("weather", token="t")
    with pytest.raises(AlreadyRegistered):
        directory.claim("weather")


def test_errors_carry_stable_codes_and_names() -> None:
    assert (NotFound.code, NotFound.name) == (1, "not_found")
    assert (AlreadyRegistered.code, AlreadyRegistered.name) == (2, "already_registered")
    assert (HeldByAnotherOwner.code, HeldByAnotherOwner.name) == (3, "held_by_another_owner")
