"""The bound on PDF page renders at once (api/renders.py): server-wide, a fair share per
user, a short wait in a short line, then ``Busy`` (HTTP 503 with Retry-After)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from docshelf.api.renders import RenderGate
from docshelf.errors import Busy


def test_sized_from_the_cores_with_half_for_one_user() -> None:
    gate = RenderGate(total=4)
    assert (gate.total, gate.per_user) == (4, 2)
    assert RenderGate(total=1).per_user == 1
    assert RenderGate().total >= 1


def test_over_a_share_or_the_total_is_busy_at_once_without_a_wait() -> None:
    gate = RenderGate(total=2, per_user=1, wait_s=0)
    with gate.slot("alice"):
        with pytest.raises(Busy) as busy, gate.slot("alice"):
            pass
        assert busy.value.retry_after > 0
        with gate.slot("bob"), pytest.raises(Busy), gate.slot("carol"):  # the two are taken
            pass
    assert gate.running() == 0
    with gate.slot("carol"):  # freed, whatever was refused
        assert gate.running("carol") == 1


def test_a_request_over_its_share_waits_for_a_slot_in_a_short_line() -> None:
    gate = RenderGate(total=2, per_user=1, wait_s=60, queue=1)
    entered = threading.Event()

    def second() -> None:
        with gate.slot("alice"):
            entered.set()

    with ThreadPoolExecutor(1) as pool:
        with gate.slot("alice"):
            waiter = pool.submit(second)
            with gate.changed:
                assert gate.changed.wait_for(lambda: gate.waiting("alice") == 1, timeout=30)
            assert not entered.is_set()
            with pytest.raises(Busy), gate.slot("alice"):  # the line (one) is full
                pass
        waiter.result(timeout=30)
    assert entered.is_set() and gate.running() == 0 and gate.waiting("alice") == 0
