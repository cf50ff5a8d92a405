"""Per-channel lifecycle queues and the decision gate (channel-registry.md §5.6; issue #4
part 4: one channel's requests are serialized, different channels go in parallel)."""

from __future__ import annotations

import anyio
import pytest

from switchboard.channels import ChannelRef
from switchboard.lifecycle.queue import DecisionGate, LifecycleQueue

pytestmark = pytest.mark.anyio

A, B = ChannelRef("s", "a"), ChannelRef("s", "b")


async def test_runs_of_one_channel_take_turns_in_arrival_order() -> None:
    queue = LifecycleQueue()
    order: list[str] = []
    release = anyio.Event()

    async def run(name: str, wait: bool) -> None:
        async with queue.hold(A):
            order.append(f"{name} in")
            if wait:
                await release.wait()
            order.append(f"{name} out")

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "first", True)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(run, "second", False)
        await anyio.wait_all_tasks_blocked()
        assert order == ["first in"]
        assert queue.pending(A)
        release.set()
    assert order == ["first in", "first out", "second in", "second out"]
    assert not queue.pending(A)
    assert len(queue) == 0


async def test_runs_of_different_channels_do_not_wait_for_each_other() -> None:
    queue = LifecycleQueue()
    held = anyio.Event()
    other_done = anyio.Event()

    async def hold_a() -> None:
        async with queue.hold(A):
            await held.wait()

    async def run_b() -> None:
        async with queue.hold(B):
            other_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_a)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(run_b)
        with anyio.fail_after(5):
            await other_done.wait()
        assert queue.pending(A)
        assert not queue.pending(B)
        held.set()


async def test_settled_waits_for_work_queued_meanwhile_too() -> None:
    queue = LifecycleQueue()
    first, second = anyio.Event(), anyio.Event()
    settled = anyio.Event()

    async def run(gate: anyio.Event) -> None:
        async with queue.hold(A):
            await gate.wait()

    async def wait_settled() -> None:
        await queue.settled(A)
        settled.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, first)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(wait_settled)
        tg.start_soon(run, second)
        await anyio.wait_all_tasks_blocked()
        first.set()
        await anyio.wait_all_tasks_blocked()
        assert not settled.is_set()  # the second run still holds the channel
        second.set()
        with anyio.fail_after(5):
            await settled.wait()
    with anyio.fail_after(1):
        await queue.settled(B)  # nothing queued: returns at once


async def test_the_gate_holds_a_second_decision_until_the_first_is_released() -> None:
    gate = DecisionGate()
    gate.take([A])
    with pytest.raises(RuntimeError):
        gate.take([A])
    passed = anyio.Event()

    async def second() -> None:
        await gate.wait_free([B, A])
        passed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        assert not passed.is_set()
        assert gate.busy(A)
        gate.release([A])
        with anyio.fail_after(5):
            await passed.wait()
    assert not gate.busy(A)
