"""CardCo's in-memory state: objects, saved idempotent replies and the request log.

API.md "provider_fake: CardCo": same key and same parameters within the retention window return
the saved result of the first request; the same key with different parameters is a 409 with no
effect. The idempotency scope is (account, key): the same key in two accounts is two requests.
One asyncio lock guards the state so concurrent requests see a consistent check-then-effect.
Lookups by client reference, and the settling of scheduled changes that precedes every request,
read indexes kept by :meth:`Store.add`, so their cost does not grow with the ledger: an object's
kind, account and client reference never change once stored, and a scheduled change is only ever
set when an object is created (processing, a 3-D Secure action), before it is stored, or by the
object itself while it applies the previous one (a Stripe payout: `in_transit`, then its landing).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from provider_fake.errors import IdempotencyKeyInUse
from provider_fake.objects import Payment, Payout, PayoutRecall, ProviderObject, Refund
from provider_fake.replies import Reply


@dataclass(frozen=True)
class SavedReply:
    fingerprint: str
    reply: Reply
    expires_at: datetime


@dataclass
class Store:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    payments: dict[str, Payment] = field(default_factory=dict)
    payouts: dict[str, Payout] = field(default_factory=dict)
    recalls: dict[str, PayoutRecall] = field(default_factory=dict)
    refunds: dict[str, Refund] = field(default_factory=dict)
    saved: dict[tuple[str, str], SavedReply] = field(default_factory=dict)
    # (account, key) of creates still executing (a `hold_key_ms` rule): another request under the key is a 409.
    in_flight: set[tuple[str, str]] = field(default_factory=set)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # (kind, account, client reference) -> those objects by id, in the order they were stored.
    references: dict[tuple[str, str, str], dict[str, ProviderObject]] = field(default_factory=dict)
    # Objects stored with a scheduled change, by id, until the change is applied or cleared.
    scheduled: dict[str, ProviderObject] = field(default_factory=dict)
    # Payment methods expired through the control API, with when (payment_methods.py).
    expired_methods: dict[str, datetime] = field(default_factory=dict)

    def clear(self) -> None:
        self.expired_methods.clear()
        self.payments.clear()
        self.payouts.clear()
        self.recalls.clear()
        self.refunds.clear()
        self.references.clear()
        self.scheduled.clear()
        self.saved.clear()
        self.requests.clear()

    def add(self, obj: ProviderObject) -> None:
        if isinstance(obj, Payment):
            self.payments[obj.id] = obj
        elif isinstance(obj, Payout):
            self.payouts[obj.id] = obj
        elif isinstance(obj, PayoutRecall):
            self.recalls[obj.id] = obj
        elif isinstance(obj, Refund):
            self.refunds[obj.id] = obj
        else:
            return
        self.references.setdefault((obj.kind, obj.account, obj.client_reference), {})[obj.id] = obj
        if obj.scheduled is not None:
            self.scheduled[obj.id] = obj

    def by_reference(self, kind: str, account: str, client_reference: str) -> list[ProviderObject]:
        """The account's objects of ``kind`` with this client reference, oldest stored first."""
        return list(self.references.get((kind, account, client_reference), {}).values())

    def of_kind(self, kind: str) -> list[ProviderObject]:
        """Every object of ``kind`` (payment, refund, payout, payout_recall), in the order stored."""
        objects: dict[str, dict[str, Any]] = {Payment.kind: self.payments, Refund.kind: self.refunds,
                                              Payout.kind: self.payouts, PayoutRecall.kind: self.recalls}
        return list(objects[kind].values())

    def with_schedule(self) -> list[ProviderObject]:
        """Every stored object that still has a scheduled change (forgetting those that do not):
        payments, then payouts and recalls, each in the order they were stored."""
        for done in [key for key, obj in self.scheduled.items() if obj.scheduled is None]:
            del self.scheduled[done]
        pending = list(self.scheduled.values())
        return [o for o in pending if isinstance(o, Payment)] + [o for o in pending if not isinstance(o, Payment)]

    def saved_reply(self, account: str, key: str, fingerprint: str, now: datetime) -> Reply | None:
        """The reply saved under (account, key) if still retained; 409 if the params differ."""
        saved = self.saved.get((account, key))
        if saved is None or now >= saved.expires_at:
            return None
        if saved.fingerprint != fingerprint:
            raise IdempotencyKeyInUse()
        return saved.reply

    def save_reply(
        self, account: str, key: str, fingerprint: str, reply: Reply, now: datetime, retention_s: float
    ) -> None:
        expires_at = now + timedelta(seconds=retention_s)
        self.saved[(account, key)] = SavedReply(fingerprint, reply, expires_at)

    def ledger(self) -> dict[str, list[dict[str, Any]]]:
        """API.md "CardCo control API": every payment and payout that took effect, and (extension,
        docs/decisions/0021) every refund that did: "nothing refunded twice" is one per payment; and
        (extension) every payout recall with its status and the payout it names."""
        return {
            "payments": [p.ledger_entry() for p in self.payments.values()],
            "payouts": [p.ledger_entry() for p in self.payouts.values()],
            "recalls": [r.ledger_entry() | {"payout": r.payout} for r in self.recalls.values()],
            "refunds": [r.ledger_entry() | {"payment": r.payment} for r in self.refunds.values()
                        if r.status == "succeeded"],
        }
