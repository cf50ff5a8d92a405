"""DeadlineQueue: which outstanding requests have expired, with lazy deletion."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from switchboard.transport.deadlines import DeadlineQueue


def test_keys_expire_in_deadline_order_and_discarded_ones_never_do() -> None:
    queue = DeadlineQueue()
    assert queue.add(1, 30.0)
    assert not queue.add(2, 31.0)
    assert queue.add(3, 5.0)
    queue.discard(3)
    assert queue.next_deadline() == 30.0
    assert queue.expire(29.9) == []
    assert queue.expire(31.0) == [1, 2]
    assert queue.next_deadline() is None
    assert len(queue) == 0


def test_the_heap_stays_proportional_to_the_live_keys() -> None:
    queue = DeadlineQueue()
    for key in range(10_000):
        queue.add(key, 30.0 + key)
        queue.discard(key)
    queue.add(10_000, 1.0)
    assert len(queue._heap) <= 2 * len(queue) + 1024 + 1
    assert queue.expire(2.0) == [10_000]


@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=100), st.booleans()),
        max_size=60,
    ),
    st.floats(min_value=0, max_value=100),
)
def test_expire_returns_exactly_the_live_keys_at_or_before_now(
    entries: list[tuple[float, bool]], now: float
) -> None:
    queue = DeadlineQueue()
    for key, (deadline, keep) in enumerate(entries):
        queue.add(key, deadline)
        if not keep:
            queue.discard(key)
    expected = sorted(
        (deadline, key) for key, (deadline, keep) in enumerate(entries) if keep and deadline <= now
    )
    assert queue.expire(now) == [key for _, key in expected]
    later = [deadline for deadline, keep in entries if keep and deadline > now]
    assert queue.next_deadline() == (min(later) if later else None)
