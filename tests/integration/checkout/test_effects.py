"""Seed 001 over real checkout (the Shop, real PostgreSQL, CardCo in-process, one ManualClock):
the effect record written with the attempt, every send gated by its digest, the protocol ledger
following the attempt, and a certificate that verifies offline, also through the CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.clock import ManualClock
from gateway.domain.certificates import verify
from gateway.effects.certify import Certifier
from gateway.payments import attempts as attempts_module
from gateway.payments.attempts import stored_request
from gateway.payments.sends import payment_intent, persist_payment
from gateway.recovery.loop import Recovery
from tests.integration.checkout.conftest import Shop

FIRST_SEND = ["PROPOSED", "POLICY_EVALUATED", "APPROVED", "INTENT_PERSISTED", "AUTHORIZATION_ISSUED", "EXECUTING"]


async def ledger(shop: Shop, attempt_id: Any) -> list[str]:
    rows = await shop.services.db.fetch_all(
        "SELECT to_state FROM effect_ledger WHERE attempt_id = %(a)s ORDER BY sequence", {"a": attempt_id})
    return [row["to_state"] for row in rows]


async def escalations(shop: Shop) -> list[str]:
    rows = await shop.services.db.fetch_all("SELECT escalation_key FROM payment_escalations ORDER BY escalation_id")
    return [row["escalation_key"] for row in rows]


async def test_a_paid_checkout_has_its_effect_record_ledger_and_a_verifiable_certificate(shop: Shop) -> None:
    """Seed 001: the record commits before the send; EFFECT_CONFIRMED is certified in the same
    transaction; the certificate names the digest, the provider reference and the evidence."""
    await shop.order()
    response = await shop.pay()
    body = response.json()
    attempt = (await shop.attempts())[0]
    record = await shop.services.db.fetch_one("SELECT * FROM effect_records WHERE attempt_id = %(a)s",
                                              {"a": attempt["attempt_id"]})
    assert record is not None and record["created_at"] == attempt["created_at"]
    derived = payment_intent(stored_request(attempt), attempt["attempt_id"])
    assert bytes(record["effect_digest"]) == derived.digest
    assert body["effect"] == {"effect_digest": derived.digest.hex(), "idempotency_key": attempt["idempotency_key"],
                              "protocol_state": "CERTIFIED"}
    assert await ledger(shop, attempt["attempt_id"]) == [*FIRST_SEND, "EFFECT_CONFIRMED", "CERTIFIED"]
    certificate = await shop.http.get("/v1/orders/ORD-5521/payment/certificate", headers=shop.customer)
    assert certificate.status_code == 200, certificate.text
    document = certificate.json()
    assert verify(document, Certifier.of(shop.services.settings).public_keys())
    issued = document["certificate"]
    assert (issued["effect_digest"], issued["provider_reference"], issued["order_id"], issued["amount_minor"]) == \
        (derived.digest.hex(), attempt["provider_payment_id"], "ORD-5521", "4250")
    events = await shop.services.db.fetch_all(
        "SELECT event_id FROM payment_attempt_events WHERE attempt_id = %(a)s AND kind = 'send_result'",
        {"a": attempt["attempt_id"]})
    assert set(issued["evidence_event_ids"]) >= {row["event_id"] for row in events}
    keys = await shop.http.get("/v1/keys/certificates")
    assert keys.status_code == 200 and keys.json()["keys"][0]["active"] is True


async def test_certificates_are_hidden_from_everyone_but_the_orders_owners(shop: Shop) -> None:
    await shop.order()
    await shop.pay()
    stranger = await shop.services.tokens.create("customer", "cus_other")
    hidden = await shop.http.get("/v1/orders/ORD-5521/payment/certificate",
                                 headers={"Authorization": f"Bearer {stranger}"})
    assert (hidden.status_code, hidden.json()["code"]) == (404, "order.not_found")
    assert (await shop.http.get("/v1/orders/ORD-5521/payment/certificate", headers=shop.merchant)).status_code == 200


async def test_a_declined_payment_fails_its_effect_and_has_no_certificate(shop: Shop) -> None:
    await shop.order(payment_method="pm_card_declined")
    assert (await shop.pay()).json()["effect"]["protocol_state"] == "EFFECT_FAILED"
    missing = await shop.http.get("/v1/orders/ORD-5521/payment/certificate", headers=shop.customer)
    assert (missing.status_code, missing.json()["code"]) == (404, "certificate.not_found")


async def test_a_first_send_with_a_drifted_body_is_refused_before_anything_reaches_cardco(shop: Shop) -> None:
    """No code path can improvise a different payment under the same identity."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", shop.customer_id)
    await shop.services.db.fetch_one(
        "UPDATE payment_attempts SET request_body = replace(request_body, '4250', '42500') "
        "WHERE attempt_id = %(a)s RETURNING 1", {"a": attempt["attempt_id"]})
    body = (await shop.pay()).json()
    assert (body["state"], body["outcome_reason"]) == ("Unknown", "request.not-buildable.effect-digest-mismatch")
    assert shop.provider_requests() == []
    assert f"attempt:{attempt['attempt_id']}:effect-digest-mismatch" in await escalations(shop)
    assert await ledger(shop, attempt["attempt_id"]) == [*FIRST_SEND[:5], "OUTCOME_UNKNOWN"]


async def test_a_body_that_drifted_after_the_attempt_was_read_is_refused_before_anything_reaches_cardco(
        shop: Shop) -> None:
    """The Started transition sends the send gate's rows for the record the attempt's insert
    wrote, derived from the attempt as it was read; the stored body changed since, so those rows
    are rolled back with the transition and the gate, run again on the body as stored, refuses it
    (seed 001, "Stable identity and exact bytes")."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", shop.customer_id)
    await shop.services.db.fetch_one(
        "UPDATE payment_attempts SET request_body = replace(request_body, '4250', '42500') "
        "WHERE attempt_id = %(a)s RETURNING 1", {"a": attempt["attempt_id"]})
    status = await shop.services.checkout._start_and_send(attempt)
    assert (status.state, status.body["outcome_reason"]) == \
        ("Unknown", "request.not-buildable.effect-digest-mismatch")
    assert shop.provider_requests() == []
    assert f"attempt:{attempt['attempt_id']}:effect-digest-mismatch" in await escalations(shop)
    assert await ledger(shop, attempt["attempt_id"]) == [*FIRST_SEND[:5], "OUTCOME_UNKNOWN"]


async def test_a_recovery_resend_with_a_drifted_body_is_refused_before_anything_reaches_cardco(
        shop: Shop, clock: ManualClock) -> None:
    """The same-key resend re-derives the digest too: a tampered stored body never leaves."""
    await shop.order()
    await shop.faults({"operation": "create_payment", "action": "error_500_before_effect"})
    assert (await shop.pay()).json()["state"] == "Unknown"
    await shop.faults()
    attempt = (await shop.attempts())[0]
    await shop.services.db.fetch_one(
        "UPDATE payment_attempts SET request_body = replace(request_body, 'pm_card_visa', 'pm_card_other') "
        "WHERE attempt_id = %(a)s RETURNING 1", {"a": attempt["attempt_id"]})
    clock.advance(60)
    services = shop.services
    recovery = Recovery(services.settings, clock, services.db, services.attempts, services.payments, owner="r-1")
    outcome = await recovery.run_pass(attempt["attempt_id"])
    # Recovery checks the stored request against its effect record before it commits a send
    # intent, so the drifted request gets no intent at all (the send gate would refuse it too).
    assert outcome == "escalated:resend-not-safe:request-drifted"
    posts = [r for r in shop.provider_requests() if r["method"] == "POST"]
    assert len(posts) == 1  # the first send only; the lookup found nothing and nothing was resent
    assert (await shop.events(attempt["attempt_id"])).count("send_intent") == 1
    assert f"attempt:{attempt['attempt_id']}:resend-not-safe:request-drifted" in await escalations(shop)


async def test_re_persisting_an_intent_is_idempotent_and_a_different_one_is_refused_and_escalated(
        shop: Shop, clock: ManualClock) -> None:
    """Seed 001: ON CONFLICT DO NOTHING, then the stored key and digest must be identical."""
    await shop.order()
    attempt = await shop.services.attempts.get_or_create_live("ORD-5521", shop.customer_id)
    stored = stored_request(attempt)
    drifted = stored_request({**attempt, "request_body": attempt["request_body"].replace("4250", "1")})
    async with shop.services.db.transaction() as conn:
        assert await persist_payment(conn, attempt, stored, now=clock.now(), reminder_interval_s=900)
        assert not await persist_payment(conn, attempt, drifted, now=clock.now(), reminder_interval_s=900)
    record = await shop.services.db.fetch_one("SELECT effect_digest FROM effect_records WHERE attempt_id = %(a)s",
                                              {"a": attempt["attempt_id"]})
    assert record is not None
    assert bytes(record["effect_digest"]) == payment_intent(stored, attempt["attempt_id"]).digest
    assert await escalations(shop) == [f"attempt:{attempt['attempt_id']}:effect-intent-mismatch"]
    assert await ledger(shop, attempt["attempt_id"]) == FIRST_SEND[:4]


def _verify_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway.cli", "certificate", "verify", *args], capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, "PAYGATE_DATA_DIR": "/nonexistent"})


async def test_the_cli_verifies_a_good_certificate_offline_and_rejects_a_tampered_one(
        shop: Shop, tmp_path: Path) -> None:
    await shop.order()
    await shop.pay()
    document = (await shop.http.get("/v1/orders/ORD-5521/payment/certificate", headers=shop.customer)).json()
    keys = (await shop.http.get("/v1/keys/certificates")).json()
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    (tmp_path / "good.json").write_text(json.dumps(document, indent=2))
    tampered = json.loads(json.dumps(document))
    tampered["certificate"]["amount_minor"] = "1"
    (tmp_path / "bad.json").write_text(json.dumps(tampered))
    good = _verify_cli(str(tmp_path / "good.json"), "--key", str(tmp_path / "keys.json"))
    assert (good.returncode, "valid" in good.stdout) == (0, True), good.stderr
    bad = _verify_cli(str(tmp_path / "bad.json"), "--key", str(tmp_path / "keys.json"))
    assert bad.returncode == 1 and "INVALID" in bad.stderr and "altered" in bad.stderr
    public_key = keys["keys"][0]["public_key"]
    (tmp_path / "key.b64").write_text(public_key)
    assert _verify_cli(str(tmp_path / "good.json"), "--key", str(tmp_path / "key.b64")).returncode == 0
    assert _verify_cli(str(tmp_path / "good.json")).returncode == 2  # no key source: a usage error


async def test_an_attempt_whose_record_its_insert_could_not_write_is_escalated_and_never_sent(
        shop: Shop, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 001: the record commits with the attempt that makes it sendable, "ON CONFLICT DO
    NOTHING; assert stored == K, d". The attempt's own statement writes its record and COMMIT goes
    with it; when the record is not written (here a record is already stored under the id the new
    attempt drew), the attempt is committed without its own, the mismatch is escalated after the
    commit, and the send gate refuses every send of it: the provider sees nothing."""
    await shop.order()
    first = await shop.services.attempts.get_or_create_live("ORD-5521", shop.customer_id)
    await shop.services.db.fetch_one(  # closed never-sent, as recovery closes a stale NotStarted
        "UPDATE payment_attempts SET state = 'NotApplied', outcome_reason = 'never-sent', version = version + 1 "
        "WHERE attempt_id = %(a)s RETURNING 1", {"a": first["attempt_id"]})
    taken = uuid.uuid4()  # a record another writer stored under this id, with its own key
    async with shop.services.db.transaction() as conn:
        assert await persist_payment(conn, {**first, "attempt_id": taken},
                                     dataclasses.replace(stored_request(first), idempotency_key="another-key"),
                                     now=clock.now(), reminder_interval_s=900)
    drawn = iter([taken, uuid.uuid4()])  # the attempt id, then its key
    monkeypatch.setattr(attempts_module, "uuid", SimpleNamespace(uuid4=lambda: next(drawn)))
    paid = await shop.pay()
    [attempt] = [a for a in await shop.attempts() if a["attempt_id"] == taken]
    assert paid.json()["state"] == "Unknown"
    assert attempt["outcome_reason"] == "request.not-buildable.effect-digest-mismatch"
    assert await escalations(shop) == [f"attempt:{taken}:effect-intent-mismatch",
                                       f"attempt:{taken}:effect-digest-mismatch"]
    assert [r for r in shop.provider_requests() if r["method"] == "POST"] == []
