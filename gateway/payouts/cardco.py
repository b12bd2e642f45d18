"""CardCo's payouts API as payout and recall attempts send to it (API.md, "provider_fake: CardCo":
``POST /v1/payouts`` with ``Idempotency-Key`` and ``expires_at``; the recall extension
``POST /v1/payouts/{id}/recalls``; lookups ``GET /v1/payouts?client_reference=`` and
``GET /v1/payout_recalls?client_reference=``). The calls themselves are the pipeline's
(gateway.pipeline.cardco), on the account stored on each attempt.

Every send of an attempt carries byte-identical parameters, the attempt's send deadline as
``expires_at``, and its fixed idempotency key.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.timestamps import rfc3339

PAYOUTS_PATH = "/v1/payouts"
RECALLS_LOOKUP_PATH = "/v1/payout_recalls"


def request_body(attempt: dict[str, Any], token: str) -> bytes:
    """The payout attempt's parameters, serialized the same way for every send of the attempt."""
    return json.dumps({"amount_minor": attempt["amount_minor"], "currency": attempt["currency"],
                       "destination_token": token, "client_reference": attempt["client_reference"],
                       "expires_at": rfc3339(attempt["send_deadline"])},
                      separators=(",", ":"), sort_keys=True).encode()


def recall_body(attempt: dict[str, Any]) -> bytes:
    """A recall attempt's reference and its send deadline as ``expires_at``; its own key goes in the header."""
    return json.dumps({"client_reference": attempt["client_reference"],
                       "expires_at": rfc3339(attempt["send_deadline"])}, separators=(",", ":"), sort_keys=True).encode()


def recall_path(provider_payout_id: str) -> str:
    """``POST /v1/payouts/{id}/recalls``: the provider payout being recalled is in the path."""
    return f"{PAYOUTS_PATH}/{provider_payout_id}/recalls"
