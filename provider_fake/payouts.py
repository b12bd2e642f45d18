"""Payouts: create, and the later `returned`.

API.md "provider_fake: CardCo": a request received after `expires_at` plus the skew (30 s by
default) is rejected with no effect (400 `request_expired`); otherwise the payout is
`processing` and becomes `paid` after `processing_complete_after_s` by the fake clock. A
`decline` rule (default code `destination_closed`) answers 200 with status `failed`: a
documented no-effect (API.md "CardCo control API"). `returned` is a later event, made with
`POST /_control/payouts/{id}/return` (extension).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from provider_fake.errors import InvalidRequest, RequestExpired
from provider_fake.faults import FaultRule
from provider_fake.objects import Payout
from provider_fake.payments import AmountMinor, ClientReference, Currency
from provider_fake.replies import Reply

if TYPE_CHECKING:
    from provider_fake.config import Account
    from provider_fake.fake import CardCo


class PayoutRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    amount_minor: AmountMinor
    currency: Currency
    destination_token: Annotated[str, Field(min_length=1)]
    client_reference: ClientReference
    expires_at: AwareDatetime


def create_payout(
    fake: CardCo, account: Account, key: str, params: PayoutRequest, rule: FaultRule | None
) -> Reply:
    """The effect of `POST /v1/payouts`, after the expiry check."""
    now = fake.clock.now()
    if now > params.expires_at + timedelta(seconds=fake.config.request_expiry_skew_s):
        raise RequestExpired()
    payout = Payout.taken(
        account=account.id,
        idempotency_key=key,
        request=params,
        now=now,
        status="failed",
        destination_token=params.destination_token,
        expires_at=params.expires_at,
    )
    if rule is not None and rule.action == "decline":
        payout.failure_code = rule.code or "destination_closed"
    else:
        fake.start_processing(payout, rule, "paid", "destination_closed")
    fake.record(payout, rule)
    return Reply.ok(payout.public())


def return_payout(fake: CardCo, payout: Payout) -> None:
    """A paid payout comes back from the bank: `paid` -> `returned`, `payout.returned`."""
    if payout.status != "paid":
        raise InvalidRequest(f"payout is {payout.status}; only a paid payout can be returned")
    payout.change("returned", "account_closed")
    fake.announce(payout)
