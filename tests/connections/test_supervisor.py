"""Restart backoff: exponential, capped, jittered."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from switchboard.connections.supervisor import backoff_delay


@given(
    failures=st.integers(min_value=0, max_value=200),
    initial=st.floats(min_value=0.01, max_value=5),
    maximum=st.floats(min_value=5, max_value=120),
    seed=st.integers(),
)
def test_the_backoff_delay_stays_between_half_and_all_of_the_capped_exponential(
    failures: int, initial: float, maximum: float, seed: int
) -> None:
    delay = backoff_delay(failures, initial, maximum, random.Random(seed))
    base = min(maximum, initial * 2 ** min(failures, 30))
    assert base * 0.5 <= delay <= base


def test_the_backoff_delay_doubles_until_the_cap() -> None:
    rng = random.Random(1)
    bases = [backoff_delay(n, 1.0, 8.0, rng) for n in range(6)]
    assert bases[0] <= 1.0
    assert 4.0 <= bases[3] <= 8.0
    assert bases[5] <= 8.0
