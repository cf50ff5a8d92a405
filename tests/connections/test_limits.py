"""The per-connector limits: the token bucket, the registration budget, the refusals' words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from switchboard.connections.limits import (
    CHANNEL_CAP_REASON,
    REGISTRATION_RATE_REASON,
    RegistrationLimits,
    TokenBucket,
    message_rate_refusal,
    storage_unavailable_error,
)


class Clock:
    """A hand-moved monotonic clock (the buckets take their clock as an argument)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_starts_full_and_refuses_a_batch_it_cannot_cover_with_the_wait() -> None:
    clock = Clock()
    bucket = TokenBucket(10, 10, clock=clock)
    assert bucket.take(10) == 0.0
    assert bucket.take(5) == pytest.approx(0.5)
    clock.now += 0.5
    assert bucket.take(5) == 0.0
    assert bucket.take(1) == pytest.approx(0.1)


def test_a_batch_larger_than_the_burst_passes_when_the_bucket_is_full_and_leaves_a_debt() -> None:
    clock = Clock()
    bucket = TokenBucket(10, 10, clock=clock)
    assert bucket.take(25) == 0.0
    assert bucket.available() == 0
    clock.now += 1.0
    assert bucket.available() == 0  # 15 owed, 10 refilled
    clock.now += 1.0
    assert bucket.take(25) == pytest.approx(0.5)  # 5 there; a full bucket is needed
    clock.now += 0.5
    assert bucket.take(25) == 0.0


@given(
    st.lists(
        st.tuples(st.floats(0, 2, allow_nan=False), st.integers(1, 30)), min_size=1, max_size=60
    )
)
def test_a_bucket_never_grants_more_than_its_burst_plus_its_rate_over_the_time(
    steps: list[tuple[float, int]],
) -> None:
    clock = Clock()
    rate, burst = 10.0, 20.0
    bucket = TokenBucket(rate, burst, clock=clock)
    granted, start = 0, clock.now
    for elapsed, n in steps:
        clock.now += elapsed
        if n <= burst and bucket.take(n) == 0.0:
            granted += n
    assert granted <= burst + rate * (clock.now - start) + 1e-6


def test_registrations_past_the_cap_are_refused_one_by_one_with_the_cap_reason() -> None:
    limits = RegistrationLimits(50, None)
    budget = limits.budget(lambda: 45)
    reasons = [budget.admit() for _ in range(8)]
    assert reasons == [None] * 5 + [CHANNEL_CAP_REASON.format(limit=50)] * 3
    assert budget.finish() == 5
    assert "at most 50 channels" in CHANNEL_CAP_REASON.format(limit=50)


def test_the_room_is_counted_at_the_first_admission_so_removals_before_it_free_places() -> None:
    registered = [50]
    budget = RegistrationLimits(50, None).budget(lambda: registered[0])
    registered[0] = 48  # a channels/changed removed two before its additions
    assert [budget.admit() for _ in range(3)] == [None, None, CHANNEL_CAP_REASON.format(limit=50)]


def test_the_first_max_channels_register_at_once_then_new_ones_at_the_rate() -> None:
    clock = Clock()
    limits = RegistrationLimits(100, 10, clock=clock)
    first = limits.budget(lambda: 0)
    assert all(first.admit() is None for _ in range(100))
    assert first.finish() == 100
    # Churn: 100 removed, 30 new at once: the rate allows none yet, then 10 a second.
    churn = limits.budget(lambda: 0)
    assert churn.admit() == REGISTRATION_RATE_REASON.format(rate=10)
    churn.finish()
    clock.now += 1.0
    later = limits.budget(lambda: 0)
    assert [later.admit() for _ in range(11)] == [None] * 10 + [
        REGISTRATION_RATE_REASON.format(rate=10)
    ]


def test_a_batch_over_the_message_rate_is_refused_with_the_reason_and_when_to_resend() -> None:
    error = message_rate_refusal(500, 0.0314)
    assert error.to_wire() == {
        "code": -32603,
        "message": "Rate limit exceeded: at most 500 messages per second for this connector "
        "(max_messages_per_second); nothing of this batch was accepted, send it again after "
        "data.retryAfterMs",
        "data": {"reason": "rate-limited", "retryAfterMs": 32, "limit": 500},
    }


def test_a_storage_failure_is_an_internal_error_with_the_reason_and_the_detail() -> None:
    wire = storage_unavailable_error("database or disk is full").to_wire()
    assert wire["code"] == -32603
    assert wire["data"] == {"reason": "storage-unavailable", "detail": "database or disk is full"}
    assert "send it again later" in wire["message"]
