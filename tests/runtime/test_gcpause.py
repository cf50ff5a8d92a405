"""The garbage-collector pause restores exactly the state it found."""

from __future__ import annotations

import gc

from switchboard.runtime.gcpause import gc_paused, pause_collector


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


def test_a_pause_that_outlives_a_block_ends_when_its_resume_is_called_once() -> None:
    resume = pause_collector()
    assert resume is not None
    assert not gc.isenabled()
    resume()
    assert gc.isenabled()
    gc.disable()
    try:
        resume()  # a second call does nothing: it does not undo somebody else's pause
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_no_resume_is_handed_out_when_the_collector_is_off_already() -> None:
    gc.disable()
    try:
        assert pause_collector() is None
        assert not gc.isenabled()
    finally:
        gc.enable()
