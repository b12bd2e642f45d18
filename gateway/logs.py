"""Structured logs (structlog): JSON in production, carrying correlation, attempt, order and
payout ids, and never card data, destination tokens, secrets or raw payloads.

The :func:`redact` processor is the one place that rule is enforced: any event key that names a
secret or a raw payload is replaced before rendering, whoever logged it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

REDACTED = "[redacted]"
_SENSITIVE = (
    "authorization", "api_key", "secret", "password", "token", "pepper", "card", "pan", "cvc",
    "destination_token", "payload", "body", "raw", "signature",
)
# Keys that contain a sensitive word but only carry an identifier or a count.
_ALLOWED = {"token_id", "body_bytes", "lease_token_present"}


def _is_sensitive(key: str) -> bool:
    lowered = key.lower()
    return lowered not in _ALLOWED and any(word in lowered for word in _SENSITIVE)


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Replace the value of every sensitive key (see module docstring)."""
    for key in list(event):
        if _is_sensitive(key):
            event[key] = REDACTED
    return event


def configure_logging(log_format: str = "json", level: str = "info") -> None:
    """Configure structlog and route the standard library's logging through the same output."""
    renderer: Any = (
        structlog.processors.JSONRenderer() if log_format == "json" else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact,
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
