"""Logs never carry card data, destination tokens, secrets or raw payloads (DESIGN.md, invariant 8)."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from gateway.logs import REDACTED, configure_logging, redact


def test_sensitive_keys_are_redacted_whoever_logs_them() -> None:
    event = redact(None, "info", {
        "event": "x", "attempt_id": "a1", "authorization": "Bearer pgt_x", "api_key": "ck_test_1",
        "destination_token": "dst_tok", "raw_body": "{...}", "webhook_secret": "whsec_x",
        "card_number": "4242", "token_id": 7,
    })
    assert event["attempt_id"] == "a1"
    assert event["token_id"] == 7
    for key in ("authorization", "api_key", "destination_token", "raw_body", "webhook_secret", "card_number"):
        assert event[key] == REDACTED


def test_json_logs_carry_bound_ids(capsys: pytest.CaptureFixture[str]) -> None:
    root_handlers = list(logging.getLogger().handlers)
    configure_logging("json", "info")
    try:
        with structlog.contextvars.bound_contextvars(correlation_id="cor_1"):
            structlog.get_logger("t").info("attempt_recorded", attempt_id="a1", api_key="ck_live_x")
        line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    finally:
        # The configured loggers hold this test's captured stderr, closed once the test ends.
        structlog.reset_defaults()
        logging.getLogger().handlers[:] = root_handlers
    assert line["correlation_id"] == "cor_1"
    assert line["attempt_id"] == "a1"
    assert line["api_key"] == REDACTED
