"""The decision gate taken by channel id for a large admission (issue #14, item 4): one shared
event per batch, woken only when the batch's last channel is free, and the ref form and the
channel-id form see each other."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.channels import ChannelRef
from switchboard.lifecycle.queue import DecisionGate

pytestmark = pytest.mark.anyio

A, B, C = ChannelRef("s", "a"), ChannelRef("s", "b"), ChannelRef("t", "a")


def test_channels_taken_by_id_are_busy_as_refs_and_free_again_after_release() -> None:
    gate = DecisionGate()
    gate.take_channels("s", dict.fromkeys(["a", "b"]))
    assert gate.busy(A)
    assert gate.busy(B)
    assert not gate.busy(C)  # the same id on another server is another channel
    gate.release_channels("s", ["a", "b"])
    assert not gate.busy(A)
    assert not gate.busy(B)


def test_taking_a_busy_channel_or_one_named_twice_is_refused_whichever_form_took_it() -> None:
    gate = DecisionGate()
    gate.take([A])
    with pytest.raises(RuntimeError):
        gate.take_channels("s", ["b", "a"])
    assert not gate.busy(B)  # a refused take marks nothing
    with pytest.raises(RuntimeError):
        gate.take([B, B])
    assert not gate.busy(B)
    gate.take_channels("s", ["b"])
    with pytest.raises(RuntimeError):
        gate.take([C, B])
    assert not gate.busy(C)


async def test_a_waiter_on_a_batch_wakes_only_when_the_batch_is_wholly_released() -> None:
    gate = DecisionGate()
    gate.take_channels("s", dict.fromkeys(["a", "b"]))
    passed = anyio.Event()

    async def waiter() -> None:
        await gate.wait_free([A])
        passed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        gate.release([B])  # part of the batch: A is still held
        await anyio.wait_all_tasks_blocked()
        assert not passed.is_set()
        assert gate.busy(A)
        gate.release([A])
        with anyio.fail_after(5):
            await passed.wait()


async def test_waiting_by_channel_id_waits_for_a_single_decision_taken_by_ref() -> None:
    gate = DecisionGate()
    gate.take([B])
    passed = anyio.Event()

    async def admission() -> None:
        await gate.wait_free_channels("s", dict.fromkeys(["a", "b"]))
        gate.take_channels("s", dict.fromkeys(["a", "b"]))
        passed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(admission)
        await anyio.wait_all_tasks_blocked()
        assert not passed.is_set()
        gate.release([B])
        with anyio.fail_after(5):
            await passed.wait()
    assert gate.busy(A)
    assert gate.busy(B)
    with anyio.fail_after(5):
        await gate.wait_free([C])  # another server's channel: never waits


async def test_waiting_for_free_channels_never_awaits() -> None:
    gate = DecisionGate()
    gate.take([C])
    with anyio.fail_after(5):
        await gate.wait_free_channels("s", ["a"])
        await gate.wait_free([A, B])


ops = st.lists(
    st.tuples(
        st.sampled_from(["take", "take_channels", "release", "release_channels"]),
        st.lists(st.sampled_from([A, B, C, ChannelRef("t", "b")]), max_size=4),
    ),
    max_size=12,
)


@given(ops)
def test_the_gate_agrees_with_a_set_of_busy_refs(steps: list[tuple[str, list[ChannelRef]]]) -> None:
    gate = DecisionGate()
    model: set[ChannelRef] = set()
    for op, refs in steps:
        if op.startswith("take"):
            if op == "take_channels":
                refs = [r for r in refs if r.server_id == "s"]
            clash = len(set(refs)) != len(refs) or bool(model & set(refs))
            if op == "take":
                if clash:
                    with pytest.raises(RuntimeError):
                        gate.take(refs)
                else:
                    gate.take(refs)
                    model |= set(refs)
            elif clash:
                with pytest.raises(RuntimeError):
                    gate.take_channels("s", [r.channel_id for r in refs])
            else:
                gate.take_channels("s", [r.channel_id for r in refs])
                model |= set(refs)
        elif op == "release":
            gate.release(refs)
            model -= set(refs)
        else:
            gate.release_channels("s", [r.channel_id for r in refs if r.server_id == "s"])
            model -= {r for r in refs if r.server_id == "s"}
        for ref in (A, B, C, ChannelRef("t", "b")):
            assert gate.busy(ref) == (ref in model)
