"""wait_for_new: woken by commits, not by polling; honest about timeouts and closing."""

from __future__ import annotations

import anyio
import pytest

from switchboard.store import StoreClosedError
from switchboard.store.sqlite import MessageStore
from tests.store.storekit import build_record

pytestmark = pytest.mark.anyio


async def test_wait_for_new_wakes_when_another_task_commits(store: MessageStore) -> None:
    woke: list[bool] = []
    waiting = anyio.Event()

    async def reader() -> None:
        waiting.set()
        woke.append(await store.wait_for_new(0, timeout=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await waiting.wait()
            await anyio.wait_all_tasks_blocked()
            assert woke == []
            await store.append([build_record(1)], received_at=1.0)

    assert woke == [True]


async def test_a_waiter_is_not_woken_by_commits_at_or_below_its_seq(store: MessageStore) -> None:
    await store.append([build_record(1)], received_at=1.0)
    woke: list[bool] = []
    waiting = anyio.Event()

    async def reader() -> None:
        waiting.set()
        woke.append(await store.wait_for_new(2, timeout=30))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await waiting.wait()
            await store.append([build_record(2)], received_at=1.0)  # seq 2: not news
            await store.append([build_record(1)], received_at=1.0)  # a duplicate: not news
            await anyio.wait_all_tasks_blocked()  # the reader saw both commits and waits on
            assert woke == []
            await store.append([build_record(3)], received_at=1.0)  # seq 3

    assert woke == [True]


async def test_wait_for_new_returns_true_at_once_when_newer_messages_exist(
    store: MessageStore,
) -> None:
    await store.append([build_record(1), build_record(2)], received_at=1.0)

    with anyio.fail_after(5):
        assert await store.wait_for_new(1, timeout=3600) is True


async def test_wait_for_new_returns_false_when_nothing_arrives_before_the_timeout(
    store: MessageStore,
) -> None:
    with anyio.fail_after(5):
        assert await store.wait_for_new(0, timeout=0.05) is False
        assert await store.wait_for_new(0, timeout=0) is False


async def test_closing_the_store_wakes_waiters_with_store_closed_error(
    store: MessageStore,
) -> None:
    errors: list[BaseException] = []
    waiting = anyio.Event()

    async def reader() -> None:
        waiting.set()
        try:
            await store.wait_for_new(0, timeout=3600)
        except StoreClosedError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await waiting.wait()
            await store.aclose()

    assert len(errors) == 1
