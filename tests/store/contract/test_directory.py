"""The directory's contract (``DirectoryStore``): addresses, claims under owner tokens, pages."""

from __future__ import annotations

import pytest

from switchboard.directory import (
    AlreadyRegistered,
    DirectoryStore,
    HeldByAnotherOwner,
    InvalidName,
    NotFound,
)
from tests.store.contract.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_a_claim_takes_a_free_address_refreshes_under_its_token_and_refuses_others(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        directory: DirectoryStore = stores.directory
        taken = directory.claim("@ann", token="t" * 32, holder="@ann", description="first")
        assert taken.outcome == "taken"
        assert taken.entry.online
        again = directory.claim("@ann", token="t" * 32, description="second")
        assert again.outcome == "refreshed"
        assert again.entry.description == "second"
        with pytest.raises(HeldByAnotherOwner):
            directory.claim("@ann", token="u" * 32)
        with pytest.raises(InvalidName):
            directory.claim("not an address!", token="t" * 32)


async def test_an_entry_without_a_token_is_taken_over_by_a_claim_with_one(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        directory = stores.directory
        directory.register("weather", capability="forecasts")
        with pytest.raises(AlreadyRegistered):
            directory.claim("weather")
        assert directory.claim("weather", token="t" * 32).outcome == "taken_over"


async def test_lists_and_searches_come_in_address_order_a_page_at_a_time(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        directory = stores.directory
        for address in ("@cy", "@ann", "research:summarize", "@bob"):
            directory.register(address, tags=("team",), description=f"about {address}")
        page = directory.list(prefix="@", limit=2)
        assert [e.address for e in page.entries] == ["@ann", "@bob"]
        assert page.total == 3
        rest = directory.list(prefix="@", limit=2, offset=2)
        assert [e.address for e in rest.entries] == ["@cy"]
        found = directory.search("SUMMAR")
        assert [e.address for e in found.entries] == ["research:summarize"]
        assert directory.list(kind="service").total == 1


async def test_the_host_may_set_flags_and_remove_an_entry_it_does_not_hold(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        directory = stores.directory
        directory.claim("@ann", token="t" * 32, holder="@ann")
        assert directory.set_busy("@ann", True, force=True).busy
        assert not directory.set_online("@ann", False, force=True).online
        with pytest.raises(HeldByAnotherOwner):
            directory.unregister("@ann", token="u" * 32)
        directory.unregister("@ann", force=True)
        with pytest.raises(NotFound):
            directory.lookup("@ann")


async def test_entries_and_their_claims_are_there_after_a_reopen(backend: Backend) -> None:
    async with backend.open() as stores:
        stores.directory.claim("@ann", token="t" * 32, tags=("x",))
    async with backend.open() as stores:
        assert stores.directory.lookup("@ann").tags == ("x",)
        assert stores.directory.claim("@ann", token="t" * 32).outcome == "refreshed"
        with pytest.raises(HeldByAnotherOwner):
            stores.directory.claim("@ann", token="u" * 32)
