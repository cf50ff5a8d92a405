"""The contracts of the channel leaves (``LeaveStore``) and the lifetime records
(``LifetimeRecords``)."""

from __future__ import annotations

import pytest

from switchboard.store import LeaveStore, LifetimeRecords
from tests.store.contract.conftest import Backend

pytestmark = pytest.mark.anyio


async def test_leaving_and_rejoining_are_recorded_once_each_and_raise_the_version(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        leaves: LeaveStore = stores.leaves
        before = leaves.version
        assert leaves.leave("ann", "s", "lobby")
        assert not leaves.leave("ann", "s", "lobby")
        assert ("ann", "s", "lobby") in leaves
        assert leaves.rows() == frozenset({("ann", "s", "lobby")})
        assert leaves.version > before
        assert leaves.rejoin("ann", "s", "lobby")
        assert not leaves.rejoin("ann", "s", "lobby")
        assert len(leaves) == 0


async def test_the_leaves_are_there_after_a_reopen(backend: Backend) -> None:
    async with backend.open() as stores:
        stores.leaves.leave("ann", "s", "lobby")
        stores.leaves.leave("bob", "s", "lab")
        stores.leaves.rejoin("bob", "s", "lab")
    async with backend.open() as stores:
        assert stores.leaves.rows() == frozenset({("ann", "s", "lobby")})


async def test_the_owner_token_is_kept_and_each_start_counts_a_new_incarnation(
    backend: Backend,
) -> None:
    async with backend.open() as stores:
        records: LifetimeRecords = stores.lifetimes
        token, counts = records.start(["ann", "bob"], {})
        assert counts == {"ann": 1, "bob": 1}
        again, counts = records.start(["ann"], {"ann": 5})
        assert again == token
        assert counts == {"ann": 6}
    async with backend.open() as stores:
        kept, counts = stores.lifetimes.start(["ann", "bob"], {})
        assert kept == token
        assert counts == {"ann": 7, "bob": 2}
