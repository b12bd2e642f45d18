"""The web process's app leaves what it was built from out of the garbage collector's full passes
(gateway.app.app_from_environment, docs/decisions/0080 "The p99"): a full pass over every module
and class held a worker's event loop for 30-100 ms, every request in it waiting."""

from __future__ import annotations

import gc

import pytest

import gateway.app
from gateway.app import app_from_environment

ENV = {"DATABASE_URL": "postgresql:///x", "REDIS_URL": "redis://127.0.0.1:1/0", "PAYGATE_TOKEN_PEPPER": "p"}


def test_the_web_app_freezes_what_it_was_built_from(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(gateway.app, "configure_logging", lambda *_: None)  # this process's logging stays the tests'
    gc.unfreeze()
    try:
        app_from_environment()
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
