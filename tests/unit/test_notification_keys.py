"""Notification deduplication keys and escalation keys (seed 004, "Notification Deduplication";
"Escalations"; matrix: "An unkeyed notification is always recorded and handled, never mistaken
for a duplicate; an empty event ID is treated as missing"; "A notification without an event ID,
delivered twice, produces the same synthesized key from its canonical fields, despite different
delivery timestamps and signatures ... Two distinct notifications that report the same status
for the same payment do not collide")."""

from __future__ import annotations

import json

import pytest

from gateway.domain.notification_keys import (
    WEBHOOK_ID_PREFIX,
    CanonicalFields,
    escalation_key,
    notification_key,
    synthesized_key,
)
from gateway.providers.cardco.notifications import (
    Notification,
    Unreadable,
    from_detail,
    parse,
)

ACCOUNT = "cardco:acct_store:test"


def fields(**overrides: object) -> CanonicalFields:
    values: dict[str, object] = {"provider_payment_id": "pay_1", "client_reference": "ORD-1-a1",
                                 "event_type": "payment.succeeded", "status": "succeeded", "amount_minor": 4250,
                                 "currency": "EUR", "sequence": 3}
    return CanonicalFields.of(**{**values, **overrides})  # type: ignore[arg-type]


def key(event_id: object = None, webhook_id: object = "msg_1", synthesize: bool = True, stable: bool = False,
        **overrides: object) -> str | None:
    return notification_key(event_id=event_id, webhook_id=webhook_id, fields=fields(**overrides),
                            synthesize=synthesize, webhook_id_stable=stable)


def test_the_provider_event_id_is_the_key_when_present() -> None:
    assert key("evt_1") == "evt_1"
    assert key("  evt_1 ") == "evt_1"


@pytest.mark.parametrize("blank", ["", "   ", "\t\n", None, 17])
def test_a_blank_or_missing_event_id_counts_as_missing(blank: object) -> None:
    """Matrix: "an empty event ID is treated as missing"."""
    assert key(blank, synthesize=False) is None
    assert key(blank) == synthesized_key(fields())


def test_a_synthesized_key_is_versioned_and_ignores_per_delivery_values() -> None:
    first = key(None, webhook_id="msg_delivery_1")
    second = key(None, webhook_id="msg_delivery_2")
    assert first == second and first is not None and first.startswith("v1:") and len(first) == 3 + 64


def test_canonical_fields_normalize_case_whitespace_and_unicode() -> None:
    decomposed = "Cafe\u0301-a1"  # "Café" with a combining accent; NFC composes it
    assert fields(client_reference=decomposed) == fields(client_reference=" Caf\u00e9-a1 ")
    assert synthesized_key(fields(event_type="Payment.Succeeded ", status="SUCCEEDED", currency="eur")) == \
        synthesized_key(fields())
    # Provider ids are case-sensitive: a different case is a different payment.
    assert synthesized_key(fields(provider_payment_id="PAY_1")) != synthesized_key(fields())


def test_two_distinct_notifications_with_the_same_status_do_not_collide() -> None:
    assert synthesized_key(fields(sequence=3)) != synthesized_key(fields(sequence=5))
    assert synthesized_key(fields(amount_minor=4251)) != synthesized_key(fields())


@pytest.mark.parametrize("missing", ["provider_payment_id", "event_type", "sequence"])
def test_no_synthesized_key_without_the_fields_that_name_one_event(missing: str) -> None:
    assert synthesized_key(fields(**{missing: None})) is None
    assert key(None, **{missing: None}) is None


def test_no_synthesized_key_unless_the_account_allows_it() -> None:
    assert key(None, synthesize=False) is None


def test_the_webhook_id_is_a_key_only_where_the_account_says_it_is_stable() -> None:
    assert key(None, synthesize=False, stable=True, webhook_id=" msg_1 ") == WEBHOOK_ID_PREFIX + "msg_1"
    assert key(None, synthesize=False, stable=True, webhook_id="  ") is None
    assert key("evt_1", stable=True) == "evt_1"


def test_escalation_keys_name_the_notification_never_a_delivery() -> None:
    """Seed 004, "Escalations": keyed, else payment id, else reference, else one per account."""
    assert escalation_key(ACCOUNT, "unmatched", notification_key="evt_1", provider_object_id="pay_1",
                          client_reference="R") == f"notification:{ACCOUNT}:evt_1:unmatched"
    assert escalation_key(ACCOUNT, "unmatched", notification_key=None, provider_object_id="pay_1",
                          client_reference="R") == f"notification:{ACCOUNT}:pay_1:unmatched"
    assert escalation_key(ACCOUNT, "unmatched", notification_key=None, provider_object_id=None,
                          client_reference="R") == f"notification:{ACCOUNT}:R:unmatched"
    assert escalation_key(ACCOUNT, "unmatched", notification_key=None, provider_object_id=None,
                          client_reference=None) == f"notification:{ACCOUNT}:unmatched-unidentified"


def payload(**object_overrides: object) -> dict[str, object]:
    return {"id": "evt_1", "type": "payment.succeeded", "created": "2026-11-29T16:00:05Z",
            "data": {"object": {"object": "payment", "id": "pay_1", "client_reference": "ORD-1-a1",
                                "amount_minor": 4250, "currency": "EUR", "status": "succeeded",
                                "failure_code": None, "next_action": None, "sequence": 3, **object_overrides}}}


def test_a_cardco_payload_is_read_and_its_detail_holds_no_raw_payload() -> None:
    parsed = parse(json.dumps(payload()).encode())
    assert isinstance(parsed, Notification)
    detail = parsed.detail()
    assert detail["provider_event_id"] == "evt_1" and detail["client_reference"] == "ORD-1-a1"
    assert detail["canonical"] == fields().as_detail()
    assert "created" not in json.dumps(detail)
    assert from_detail(json.loads(json.dumps(detail))) == parsed


def test_a_payout_destination_token_is_never_kept() -> None:
    body = {"id": "evt_2", "type": "payout.paid", "data": {"object": {
        "object": "payout", "id": "po_1", "client_reference": "PO-1-a1", "amount_minor": 100, "currency": "EUR",
        "status": "paid", "destination_token": "tok_secret", "sequence": 2}}}
    parsed = parse(json.dumps(body).encode())
    assert isinstance(parsed, Notification) and parsed.kind == "payout"
    assert "tok_secret" not in json.dumps(parsed.detail())


@pytest.mark.parametrize("body, reason", [
    (b"\xff\xfe", "malformed-json"),
    (b"not json", "malformed-json"),
    (b"[]", "malformed-payload"),
    (json.dumps({"id": "evt_9", "type": "payment.disputed", "data": {}}).encode(), "unknown-type"),
    (json.dumps({"id": "evt_9", "type": ["x"], "data": {}}).encode(), "unknown-type"),
    (json.dumps(payload(amount_minor="4250x")).encode(), "malformed-object"),
    (json.dumps(payload(status="failed")).encode(), "type-status-mismatch"),
])
def test_unreadable_bodies_are_values_not_exceptions(body: bytes, reason: str) -> None:
    parsed = parse(body)
    assert isinstance(parsed, Unreadable) and parsed.reason == reason
    assert from_detail(parsed.detail()) is None
