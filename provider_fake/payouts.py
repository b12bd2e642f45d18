"""Payouts: create, the later `returned`, and recalls (extension).

API.md "provider_fake: CardCo": a request received after `expires_at` plus the skew (30 s by
default) is rejected with no effect (400 `request_expired`); otherwise the payout is
`processing` and becomes `paid` after `processing_complete_after_s` by the fake clock. A
`decline` rule (default code `destination_closed`) answers 200 with status `failed`: a
documented no-effect (API.md "CardCo control API"). `returned` is a later event, made with
`POST /_control/payouts/{id}/return` (extension).

Recalls (extension, docs/rehearsing-incidents.md): `POST /v1/payouts/{id}/recalls` with an
`Idempotency-Key` and `{"client_reference", "expires_at"}` creates a recall object of its own
(`prc_...`), `processing` and then `recalled` after `processing_complete_after_s`; the same expiry
rule as payouts. It answers 200 `failed` (a documented no-effect) with `recall_window_closed`
when the payout was created more than `payout_recall_window_s` ago, `payout_not_paid` when the
payout is not `paid`, `already_recalled` when another recall of it is processing or recalled.
The payout itself keeps its status: a recall is a separate operation.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from provider_fake.errors import InvalidRequest, NotFound
from provider_fake.faults import FaultRule
from provider_fake.objects import Payout, PayoutRecall, new_id
from provider_fake.payments import AmountMinor, ClientReference, Currency, check_expiry
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


class RecallRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    client_reference: ClientReference
    expires_at: AwareDatetime


class RecallParams(RecallRequest):
    """What the key's fingerprint covers: the body and the payout it names."""

    payout_id: str


def create_payout(
    fake: CardCo, account: Account, key: str, params: PayoutRequest, rule: FaultRule | None
) -> Reply:
    """The effect of `POST /v1/payouts`, after the expiry check."""
    now = check_expiry(fake, params.expires_at)
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


def create_recall(fake: CardCo, account: Account, key: str, params: RecallParams, rule: FaultRule | None) -> Reply:
    """The effect of `POST /v1/payouts/{id}/recalls`, after the expiry check."""
    now = check_expiry(fake, params.expires_at)
    payout = fake.store.payouts.get(params.payout_id)
    if payout is None or payout.account != account.id:
        raise NotFound()
    recall = PayoutRecall(id=new_id(PayoutRecall.id_prefix), account=account.id,
                          client_reference=params.client_reference, idempotency_key=key,
                          amount_minor=payout.amount_minor, currency=payout.currency, status="failed",
                          created_at=now, payout=payout.id, expires_at=params.expires_at)
    live = [r for r in fake.store.recalls.values() if r.payout == payout.id and r.status in ("processing", "recalled")]
    if payout.status != "paid":
        recall.failure_code = "payout_not_paid"
    elif live:
        recall.failure_code = "already_recalled"
    elif now > payout.created_at + timedelta(seconds=fake.config.payout_recall_window_s):
        recall.failure_code = "recall_window_closed"
    else:
        fake.start_processing(recall, rule, "recalled", "recall_rejected")
    fake.record(recall, rule)
    return Reply.ok(recall.public())
