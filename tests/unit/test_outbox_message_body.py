"""The bytes an outbox delivery sends (gateway.outbox.delivery.message_body; seed 004 "Downstream
Work", API.md "Shapes"): compact JSON with sorted keys, the same for a row at every redelivery,
written by orjson where that gives the json module's bytes and by the json module otherwise."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from gateway.outbox.delivery import message_body


def _json_module(row: dict[str, Any]) -> bytes:
    payload = row["payload"]
    return json.dumps({"kind": row["kind"], "dedup_key": row["dedup_key"],
                       "attempt_id": str(row["attempt_id"]) if row["attempt_id"] else None,
                       "escalation_id": payload.get("escalation_id"), "payload": payload},
                      separators=(",", ":"), sort_keys=True).encode()


ATTEMPT = uuid.UUID("6f1c2a9e-0d4b-4c55-9b8e-1a2b3c4d5e6f")


@pytest.mark.parametrize("row", [
    {"kind": "order-confirmation", "dedup_key": f"attempt:{ATTEMPT}:order-confirmation", "attempt_id": ATTEMPT,
     "payload": {"order_id": "ORD-1", "amount_minor": 4250, "none": None, "yes": True,
                 "nested": [1, "a", {"z": 1, "a": 2}], "text": 'tab\t"q" \\ \x01 /'}},
    {"kind": "operator-alert", "dedup_key": "escalation:7:initial", "attempt_id": None,
     "payload": {"escalation_id": 7, "reason": "r\u00e9\u2028", "note": "\x7f"}},
    {"kind": "refund", "dedup_key": "k", "attempt_id": None, "payload": {"big": 2 ** 70}},
], ids=["ascii", "non-ascii-and-del-escaped", "beyond-64-bits"])
def test_the_body_is_the_json_modules_compact_sorted_escaped_document(row: dict[str, Any]) -> None:
    body = message_body(row)
    assert body == _json_module(row)
    assert body.isascii() and b"\x7f" not in body
    assert json.loads(body)["payload"] == row["payload"]
