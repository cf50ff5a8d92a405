"""The garbage-collector pause restores exactly the state it found."""

from __future__ import annotations

import gc

from switchboard.gcpause import gc_paused


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_outer_one_in_force() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_no_pause_is_asked_for_small_batches() -> None:
    with gc_paused(False):
        assert gc.isenabled()


def test_the_collector_comes_back_when_the_block_raises() -> None:
    try:
        with gc_paused():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()
