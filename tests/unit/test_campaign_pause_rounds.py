"""A scheduled pause past a lease is not lost to a quiet moment of the load (seed 000 "lease
epochs": the fencing the pause exercises): a pause whose whole wait found no lease to catch looks
again, at most ``PAUSE_ROUNDS`` rounds, and is counted a pause only once a lease lapsed under it."""

from __future__ import annotations

import asyncio
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from paygate_local.campaign import disruptions, pauses, schedule


def _outcome(lapsed: int) -> pauses.Outcome:
    return pauses.Outcome(worker=1, lapsed=Counter({"payment": lapsed} if lapsed else {}), taken_over=lapsed,
                          stopped_s=2.0, blocked=0, not_taken_over=[], misses=0)


def _run(monkeypatch: pytest.MonkeyPatch, lapsed_by_round: list[int]) -> tuple[disruptions.Disruptions, int]:
    rounds = iter(lapsed_by_round)
    calls = 0

    async def pause_past_lease(*_: Any, **__: Any) -> pauses.Outcome:
        nonlocal calls
        calls += 1
        return _outcome(next(rounds))

    monkeypatch.setattr(pauses, "pause_past_lease", pause_past_lease)
    fleet = SimpleNamespace(database_url="postgresql://unused", pause=None, resume=None, worker_of=None)
    d = disruptions.Disruptions(plan=[], fleet=fleet, gateway=None, progress=lambda _: None)  # type: ignore[arg-type]
    asyncio.run(d._pause(schedule.Disruption(wave=8, delay_s=0.0, action="pause-worker", target=1, duration_s=2.0)))
    return d, calls


def test_a_pause_that_found_no_lease_looks_again_and_counts_once_one_lapsed(monkeypatch: pytest.MonkeyPatch) -> None:
    d, calls = _run(monkeypatch, [0, 1])
    assert calls == 2
    assert d.pauses == Counter({"worker.1": 1})
    assert d.notes["pause-rounds-that-found-no-lease"] == 1
    assert d.notes["pauses-without-a-lapsed-lease"] == 0


def test_a_pause_gives_up_after_its_rounds_and_says_it_caught_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    d, calls = _run(monkeypatch, [0] * disruptions.PAUSE_ROUNDS)
    assert calls == disruptions.PAUSE_ROUNDS
    assert not d.pauses
    assert d.notes["pauses-without-a-lapsed-lease"] == 1
    assert d.notes["pause-rounds-that-found-no-lease"] == disruptions.PAUSE_ROUNDS - 1


def test_a_pause_that_caught_a_lease_at_once_is_one_round(monkeypatch: pytest.MonkeyPatch) -> None:
    d, calls = _run(monkeypatch, [2])
    assert calls == 1 and d.pauses == Counter({"worker.1": 1})
