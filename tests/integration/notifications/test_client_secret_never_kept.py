"""A Stripe PaymentIntent's ``client_secret`` (which lets whoever holds it confirm the payment with
Stripe.js) is in every PaymentIntent Stripe returns, the create's answer and each lookup's. paygate
reads the common evidence out of those answers and nothing else: the secret is never logged,
never stored (no table holds it: attempts, their events, evidence, escalations, outbox), and
neither the merchant's order nor the operator's attempt view shows it. Only the owning customer's
PaymentStatus carries it, read live while the Stripe.js challenge is current. Through the real fake's
Stripe dialect, on a card whose 3-D Secure challenge is Stripe.js's ``use_stripe_sdk``, and after
the customer completed it and the signed ``payment_intent.*`` events, each carrying the
PaymentIntent, were applied (docs/decisions/0078).
"""

from __future__ import annotations

import pytest

from tests.integration.checkout.conftest import Shop


async def _every_stored_text(shop: Shop) -> str:
    """Every row of every table in the gateway's schema, as text."""
    tables = await shop.services.db.fetch_all(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "AND table_type = 'BASE TABLE'")
    texts = []
    for table in tables:
        row = await shop.services.db.fetch_one(
            f'SELECT coalesce(string_agg(t::text, chr(10)), \'\') AS text FROM "{table["table_name"]}" t')
        texts.append(row["text"] if row else "")
    return "\n".join(texts)


@pytest.mark.parametrize("provider", ["stripe"])
async def test_the_payment_intents_client_secret_is_never_logged_stored_or_shown(
        shop: Shop, capsys: pytest.CaptureFixture[str]) -> None:
    await shop.order(payment_method="pm_card_3ds")
    challenged = (await shop.pay()).json()
    assert challenged["next_action"]["type"] == "use_stripe_sdk"
    [intent] = shop.cardco.store.payments.values()
    secret = intent.client_secret  # type: ignore[attr-defined]
    assert secret and f"{intent.id}_{secret}" in str(intent.public())  # type: ignore[attr-defined]
    assert challenged["client_secret"] == f"{intent.id}_{secret}"  # the owning customer's, and only theirs
    assert (await shop.status()).json()["client_secret"] == f"{intent.id}_{secret}"
    await shop.authenticate(challenged["provider_payment_id"])
    delivered = await shop.cardco.deliver_pending()  # the PaymentIntent in signed events, secret and all
    assert [(d.event.type, d.state) for d in delivered] == [
        ("payment_intent.requires_action", "delivered"), ("payment_intent.succeeded", "delivered")]

    operator = await shop.services.tokens.create("operator", "op-1")
    merchant_order = await shop.http.get("/v1/orders/ORD-5521", headers=shop.merchant)
    attempt_view = await shop.http.get(f"/v1/ops/attempts/{challenged['attempt_id']}",
                                       headers={"Authorization": f"Bearer {operator}"})
    assert merchant_order.status_code == 200 and attempt_view.status_code == 200, attempt_view.text
    assert merchant_order.json()["state"] == "Paid"
    captured = capsys.readouterr()
    # The answers were logged (the live reads of the secret too), the secret was not.
    assert "operation=client_secret" in captured.out + captured.err
    for where, text in (("logs", captured.out + captured.err), ("the database", await _every_stored_text(shop)),
                        ("the merchant's order", merchant_order.text), ("the operator's attempt", attempt_view.text)):
        assert secret not in text, f"the client secret is in {where}"
