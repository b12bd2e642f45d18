"""Payouts: the effects of the Stripe mount's payout requests.

docs/rehearsing-incidents.md "Stripe dialect". `POST /v1/payouts` creates a payout `pending`;
after `processing_complete_after_s` (or a `processing` rule's `complete_after_s`) it is
`in_transit`, and as long again later `paid`, or `failed` (a `processing` rule's `final_status`,
or a `decline` rule: failure code the rule's, default `account_closed`). A pending payout can be
canceled (`POST /v1/payouts/{id}/cancel`). A paid payout that comes back
(`POST /_control/payouts/{id}/return`) is `failed` with `account_closed`, as Stripe reports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from provider_fake.faults import FaultRule
from provider_fake.objects import new_id
from provider_fake.replies import Reply
from provider_fake.stripe.errors import invalid_request
from provider_fake.stripe.objects import StripePayout
from provider_fake.stripe.payments import Amount, Currency, StripeParams, owned

if TYPE_CHECKING:
    from provider_fake.config import Account
    from provider_fake.fake import CardCo

DEFAULT_DESTINATION = "default_for_currency"


class PayoutParams(StripeParams):
    amount: Amount
    currency: Currency
    destination: str | None = None
    method: Literal["standard", "instant"] = "standard"
    description: str | None = None
    statement_descriptor: str | None = None
    source_type: Literal["bank_account", "card", "fpx"] | None = None


class PayoutCancelParams(StripeParams):
    payout: str


def create_payout(
    fake: CardCo, account: Account, key: str | None, params: PayoutParams, rule: FaultRule | None
) -> Reply:
    """The effect of `POST /v1/payouts`."""
    now = fake.clock.now()
    payout = StripePayout(
        id=new_id(StripePayout.id_prefix), account=account.id, client_reference=params.client_reference,
        idempotency_key=key or "", amount_minor=params.amount, currency=params.currency, status="processing",
        created_at=now, destination_token=params.destination or DEFAULT_DESTINATION, expires_at=now,
        metadata=dict(params.metadata), method=params.method, description=params.description,
        statement_descriptor=params.statement_descriptor, livemode=account.livemode,
    )
    if rule is not None and rule.action == "decline":
        fake.start_processing(payout, None, "failed", rule.code or "account_closed")
    else:
        fake.start_processing(payout, rule, "paid", "could_not_process")
    fake.record(payout, rule)
    return Reply.ok(payout.public())


def cancel_payout(fake: CardCo, account: Account, params: PayoutCancelParams) -> Reply:
    """The effect of `POST /v1/payouts/{id}/cancel`: only a pending payout can be canceled."""
    payout = owned(fake.store.payouts, StripePayout, account, params.payout)
    if payout.status != "processing":
        raise invalid_request(f"Payout {payout.id} cannot be canceled: only a pending payout can be canceled.",
                              param="payout")
    payout.change("canceled")
    fake.announce(payout)
    return Reply.ok(payout.public())
