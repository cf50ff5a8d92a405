"""The writer's duplicate index on its own: claims, commit and eviction, rollback, rebuild, and a
model of "the most recent ``window`` stored messages"."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from switchboard.store import AppendResult
from switchboard.store.dedupe import DedupeIndex
from switchboard.store.wire import Key


def key(n: int, server: str = "demo") -> Key:
    return (server, "general", f"m-{n}")


def test_new_keys_take_consecutive_seqs_and_repeats_answer_with_the_first() -> None:
    index = DedupeIndex(10)

    results, fresh = index.claim([key(1), key(2), key(1), key(3)], 5)

    assert results == [
        AppendResult(5, False),
        AppendResult(6, False),
        AppendResult(5, True),
        AppendResult(7, False),
    ]
    assert fresh == [0, 1, 3]
    index.commit()
    assert index.claim([key(3), key(4)], 8) == (
        [AppendResult(7, True), AppendResult(8, False)],
        [1],
    )


def test_a_batch_of_only_new_keys_is_reported_as_all_new() -> None:
    index = DedupeIndex(10)

    results, fresh = index.claim([key(n) for n in range(4)], 1)

    assert results == [AppendResult(s, False) for s in range(1, 5)]
    assert all(type(r) is AppendResult for r in results)
    assert fresh is None


def test_commit_evicts_the_oldest_keys_beyond_the_window() -> None:
    index = DedupeIndex(3)
    index.claim([key(n) for n in range(5)], 1)
    assert len(index) == 5  # nothing is evicted before the commit

    index.commit()

    assert len(index) == 3
    assert [key(n) in index for n in range(5)] == [False, False, True, True, True]


def test_rollback_forgets_only_the_keys_claimed_since_the_last_commit() -> None:
    index = DedupeIndex(3)
    index.claim([key(0), key(1)], 1)
    index.commit()
    index.claim([key(2), key(3), key(4), key(0)], 3)

    index.rollback()

    assert len(index) == 2
    assert index.claim([key(3), key(1)], 3) == (
        [AppendResult(3, False), AppendResult(2, True)],
        [0],
    )


def test_a_window_of_zero_remembers_only_the_group_being_written() -> None:
    index = DedupeIndex(0)
    assert index.claim([key(1), key(1)], 1)[0] == [AppendResult(1, False), AppendResult(1, True)]

    index.commit()

    assert len(index) == 0
    with pytest.raises(ValueError, match="window"):
        DedupeIndex(-1)


def test_a_rebuilt_index_keeps_the_newest_window_and_the_newest_copy_of_a_key() -> None:
    # seqs 1..5 hold m-1, m-2, m-3, m-1 (stored again), m-4
    index = DedupeIndex.rebuild(3, [(1, [key(1), key(2)]), (3, [key(3), key(1)]), (5, [key(4)])])

    assert len(index) == 3
    assert key(2) not in index
    assert index.claim([key(1), key(3), key(2)], 6)[0] == [
        AppendResult(4, True),
        AppendResult(3, True),
        AppendResult(6, False),
    ]


batches_of_keys = st.lists(st.lists(st.integers(0, 9), max_size=6), max_size=12)


@settings(max_examples=200, deadline=None)
@given(window=st.integers(0, 8), batches=batches_of_keys, commit_every=st.integers(1, 3))
def test_answers_match_a_model_of_the_most_recent_stored_messages(
    window: int, batches: list[list[int]], commit_every: int
) -> None:
    index = DedupeIndex(window)
    stored: list[int] = []  # committed message numbers, in seq order (seq = position + 1)
    pending: list[int] = []
    for number, batch in enumerate(batches, 1):
        seq = len(stored) + len(pending) + 1
        results, _ = index.claim([key(n) for n in batch], seq)
        expected: list[AppendResult] = []
        remembered = stored[-window:] if window else []
        for n in batch:
            if n in pending:
                expected.append(AppendResult(len(stored) + pending.index(n) + 1, True))
            elif n in remembered:
                position = len(stored) - len(remembered) + remembered.index(n)
                expected.append(AppendResult(position + 1, True))
            else:
                pending.append(n)
                expected.append(AppendResult(len(stored) + len(pending), False))
        assert results == expected
        if number % commit_every == 0:
            index.commit()
            stored += pending
            pending = []
    index.rollback()
    assert len(index) == min(window, len(stored))


def test_keys_claimed_before_their_seqs_were_known_are_renumbered_at_commit() -> None:
    index = DedupeIndex(10)
    proposed = 1 << 62
    index.claim([key(1), key(2)], proposed)
    index.claim([key(2), key(3)], proposed + 2)  # a repeat within the group
    index.commit_from(proposed, 41)
    results, _ = index.claim([key(1), key(2), key(3)], 50)
    assert results == [AppendResult(41, True), AppendResult(42, True), AppendResult(43, True)]


def test_batches_stored_by_another_writer_are_learned_newest_copy_first() -> None:
    index = DedupeIndex(3)
    index.claim([key(1)], 1)
    index.commit()
    index.learn([(5, [key(2), key(1)]), (9, [key(4)])])
    results, _ = index.claim([key(1), key(4)], 20)
    assert results == [AppendResult(6, True), AppendResult(9, True)]
    assert len(index) <= 3 + 1  # the window holds, with this group pending


def test_learning_while_keys_are_pending_is_refused() -> None:
    index = DedupeIndex(10)
    index.claim([key(1)], 1)
    with pytest.raises(RuntimeError, match="pending"):
        index.learn([(5, [key(2)])])
