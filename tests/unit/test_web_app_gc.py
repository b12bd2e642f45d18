"""The web and worker processes leave what they were built from out of the garbage collector's
full passes (gateway.collector.settle_collector, docs/decisions/0080 "The p99"): a full pass over
every module and class held a web worker's event loop for 30-100 ms, every request in it waiting.
Their young collections wait for 10,000 outstanding objects (docs/decisions/0086)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import gateway.app
from gateway.app import app_from_environment
from jobs.runtime import RuntimeLifecycle

ENV = {"DATABASE_URL": "postgresql:///x", "REDIS_URL": "redis://127.0.0.1:1/0", "PAYGATE_TOKEN_PEPPER": "p"}


@pytest.fixture
def web_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, int, int]]:
    """The web process's environment; this process's collector is left as it was found (its
    thresholds are yielded)."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(gateway.app, "configure_logging", lambda *_: None)  # this process's logging stays the tests'
    before = gc.get_threshold()
    gc.unfreeze()
    try:
        yield before
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def test_the_web_app_freezes_what_it_was_built_from(web_environment: tuple[int, int, int]) -> None:
    app_from_environment()
    assert gc.get_freeze_count() > 10_000


def test_the_web_app_collects_young_objects_by_the_ten_thousand(web_environment: tuple[int, int, int]) -> None:
    app_from_environment()
    assert gc.get_threshold() == (10_000, *web_environment[1:])


def test_a_worker_settles_its_collector_once_it_has_booted(web_environment: tuple[int, int, int]) -> None:
    """jobs.runtime.RuntimeLifecycle: the worker's actors are loaded before it boots."""
    RuntimeLifecycle().after_worker_boot(None, None)  # type: ignore[arg-type]  # neither is read
    assert gc.get_freeze_count() > 10_000
    assert gc.get_threshold() == (10_000, *web_environment[1:])
