"""backoff.Backoff: delays grow to a cap, with jitter; one log line per change of state."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docshelf.backoff import Backoff

log = logging.getLogger("tests.backoff")


@given(
    st.floats(0.01, 10),
    st.floats(1, 600),
    st.lists(st.floats(0, 0.999), min_size=1, max_size=40),
)
def test_delays_double_up_to_the_cap_within_the_jitter(
    base: float, cap: float, jitters: list[float]
) -> None:
    now = [0.0]
    draws = iter(jitters)
    backoff = Backoff(
        base=base, cap=cap, logger=log, what="x", clock=lambda: now[0], jitter=lambda: next(draws)
    )
    for n, jitter in enumerate(jitters, 1):
        wait = backoff.failed("down")
        nominal = min(cap, base * 2.0 ** (n - 1))
        assert wait == pytest.approx(nominal * (0.5 + jitter))
        assert 0.5 * nominal <= wait < 1.5 * nominal
        assert not backoff.due() and backoff.remaining() == pytest.approx(wait)
        now[0] += wait
        assert backoff.due()
    assert backoff.attempts == len(jitters)


def test_one_line_when_it_fails_and_one_when_it_recovers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backoff = Backoff(base=1, cap=8, logger=log, what="the broker", clock=lambda: 0.0)
    with caplog.at_level(logging.INFO, logger="tests.backoff"):
        for _ in range(10):
            backoff.failed("refused", "polling meanwhile")
        backoff.succeeded()
        backoff.succeeded()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "the broker: refused; polling meanwhile; retrying with backoff",
        "the broker: available again after 10 failed tries",
    ]
    assert not backoff.failing and backoff.due()
