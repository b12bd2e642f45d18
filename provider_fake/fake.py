"""CardCo: one fake provider instance, the state and rules its HTTP routes act on.

API.md "provider_fake: CardCo". A test builds `CardCo(config, clock=Clock(...),
http_client=...)`, serves it with `create_app(fake)` (in-process through `inprocess.mount`, or
under uvicorn), and drives time with `fake.clock.advance(...)` and webhooks with
`await fake.deliver_pending()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta

import httpx
from pydantic import BaseModel, ValidationError

from provider_fake.clock import Clock
from provider_fake.config import Account, CardCoConfig, demo_config
from provider_fake.errors import InternalError, InvalidRequest, KeyInFlight, ProviderError, Unauthorized
from provider_fake.faults import FaultBook, FaultRule
from provider_fake.objects import ProviderObject, Refund
from provider_fake.replies import ErrorReply, Reply, refusal
from provider_fake.store import Store
from provider_fake.stripe.webhooks import StripeEvents
from provider_fake.webhooks import Delivery, StandardWebhooks, Webhooks

BACKGROUND_TICK_S = 0.2


class CardCo:
    def __init__(
        self,
        config: CardCoConfig | None = None,
        *,
        clock: Clock | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        """`http_client` carries webhook deliveries (e.g. into an ASGI app); its owner closes it."""
        self.config = config or demo_config()
        self.clock = clock or Clock()
        self.store = Store()
        self.faults = FaultBook()
        self.webhooks = Webhooks(
            lambda: self.config,
            self.clock,
            self.faults,
            http_client,
            formats={"cardco": StandardWebhooks(), "stripe": StripeEvents()},
        )

    # Accounts -----------------------------------------------------------------------------

    def authenticate(self, account_id: str | None, api_key: str | None) -> Account:
        """The CardCo account named by `CardCo-Account`, if the bearer key is that account's own."""
        account = self.config.account(account_id or "")
        if account is None or account.dialect != "cardco" or api_key is None or not account.accepts_key(api_key):
            raise Unauthorized()
        return account

    def replace_accounts(self, accounts: list[Account]) -> None:
        """PUT /_control/accounts: new accounts and webhook URLs; the timings stay."""
        updated = self.config.model_dump() | {"accounts": [a.model_dump() for a in accounts]}
        try:
            self.config = CardCoConfig.model_validate(updated)
        except ValidationError as error:
            raise InvalidRequest(f"invalid accounts: {error}") from error

    # Time and lifecycle -------------------------------------------------------------------

    def reset(self) -> None:
        """API.md: clears rules, ledger, request log, pending webhooks and the clock offset."""
        self.store.clear()
        self.faults.replace([])
        self.webhooks.clear()
        self.clock.reset()

    def settle(self) -> None:
        """Apply every scheduled status change that is due by the fake clock, oldest first, until
        none is (a change may schedule the next one: a Stripe payout's `in_transit` its landing)."""
        now = self.clock.now()
        while due := [(o.scheduled.at, o) for o in self.store.with_schedule() if o.scheduled and o.scheduled.at <= now]:
            for at, obj in sorted(due, key=lambda pair: pair[0]):
                obj.apply_schedule()
                self.announce(obj, at)

    def start_processing(
        self, obj: ProviderObject, rule: FaultRule | None, final_status: str, failure_code: str
    ) -> None:
        """`processing` until `processing_complete_after_s` (or a `processing` rule's
        `complete_after_s`) by the fake clock, then `final_status` (or the rule's).
        """
        after_s = self.config.processing_complete_after_s
        if rule is not None and rule.action == "processing":
            after_s = after_s if rule.complete_after_s is None else rule.complete_after_s
            final_status = rule.final_status or final_status
            failure_code = rule.code or failure_code
        obj.start_processing(self.clock.now(), after_s, final_status, failure_code)

    def announce(self, obj: ProviderObject, at: datetime | None = None) -> None:
        """Emit the webhook event for the object's current status. A refund is announced through
        its payment: when it succeeds, the payment becomes `refunded` (naming the refund) and
        its event is sent (CardCo's `payment.refunded`, Stripe's `charge.refunded`); a CardCo
        refund's other statuses are learned by lookup (docs/decisions/0021), while a Stripe
        refund also announces itself (`refund.created`, `refund.updated`, `refund.failed`).
        `at`: when the change happened by the fake clock, if earlier than now (a scheduled one)."""
        at = at or self.clock.now()
        account = self.config.account(obj.account)
        if account is None:
            return
        if not isinstance(obj, Refund) or obj.announces_itself:
            self._emit(account, obj, at)
        if isinstance(obj, Refund):
            payment = self.store.payments.get(obj.payment)
            if obj.status != "succeeded" or payment is None:
                return
            payment.change("refunded")
            payment.refund = {"id": obj.id, "client_reference": obj.client_reference}
            self._emit(account, payment, at)

    def _emit(self, account: Account, obj: ProviderObject, at: datetime) -> None:
        """Every change is announced: the object remembers its new state and when (for a lagging
        index), and its event is queued."""
        obj.remember(at)
        self.webhooks.emit(account, obj)

    def record(self, obj: ProviderObject, rule: FaultRule | None) -> None:
        """Store a new object and announce it. The visibility delay, or a create rule's
        `not_found_for_s` if longer, hides it from lookups counted from the effect.
        """
        hidden_s = self.config.visibility_delay_s
        if rule is not None and rule.action == "not_found_for_s":
            hidden_s = max(hidden_s, rule.not_found_for_s)
        if hidden_s > 0:
            obj.hidden_until = obj.created_at + timedelta(seconds=hidden_s)
        self.store.add(obj)
        self.announce(obj)

    async def deliver_pending(self) -> list[Delivery]:
        """Settle due changes, then attempt every webhook delivery due by the fake clock."""
        async with self.store.lock:
            self.settle()
        return await self.webhooks.deliver_due()

    @contextlib.asynccontextmanager
    async def running(self, tick_s: float = BACKGROUND_TICK_S) -> AsyncIterator[CardCo]:
        """Run the background tick (settle + deliver) while the context is open."""
        task = asyncio.create_task(self._tick_forever(tick_s))
        try:
            yield self
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _tick_forever(self, tick_s: float) -> None:
        while True:
            await self.deliver_pending()
            await asyncio.sleep(tick_s)

    # Requests -----------------------------------------------------------------------------

    async def create(
        self,
        operation: str,
        account: Account,
        key: str | None,
        params: BaseModel,
        rule: FaultRule | None,
        effect: Callable[[], Reply],
        errors: ErrorReply = Reply.error,
    ) -> Reply:
        """API.md: an idempotent create. Scope (account, key); the saved reply wins within
        retention (marked `replayed`), different parameters are refused (CardCo: 409); a reply is
        saved only when the effect ran. On a replay the response faults still apply but the saved
        reply never changes. Without a key (Stripe's keys are optional) nothing is saved. A
        `hold_key_ms` rule keeps the key executing that long before the effect: another request under
        it meanwhile is answered 409 (`KeyInFlight`), nothing done and nothing saved for it.
        """
        refused = refusal(rule, errors)
        if refused is not None:
            return refused
        if key is not None and (account.id, key) in self.store.in_flight:
            return errors(KeyInFlight())
        async with self._holding(account.id, key, rule):
            fingerprint = operation + ":" + json.dumps(params.model_dump(mode="json"), sort_keys=True)
            async with self.store.lock:
                now = self.clock.now()
                try:
                    saved = None if key is None else self.store.saved_reply(account.id, key, fingerprint, now)
                    if saved is not None:
                        answer = _after_effect(saved, rule, errors)
                        return dataclasses.replace(saved, replayed=True) if answer is saved else answer
                    reply = _after_effect(effect(), rule, errors)
                except ProviderError as error:
                    return errors(error)
                if key is not None:
                    self.store.save_reply(
                        account.id, key, fingerprint, reply, now, self.config.idempotency_retention_s
                    )
                return reply

    @contextlib.asynccontextmanager
    async def _holding(self, account_id: str, key: str | None, rule: FaultRule | None) -> AsyncIterator[None]:
        """`hold_key_ms`: the key is executing (`Store.in_flight`) for the rule's `delay_ms` before
        the create goes on, and until it ends."""
        if key is None or rule is None or rule.action != "hold_key_ms":
            yield
            return
        self.store.in_flight.add((account_id, key))
        try:
            await asyncio.sleep(rule.delay_ms / 1000)
            yield
        finally:
            self.store.in_flight.discard((account_id, key))

    async def read(
        self, rule: FaultRule | None, produce: Callable[[], Reply], errors: ErrorReply = Reply.error
    ) -> Reply:
        """A lookup or other non-idempotent request under the request's fault rule."""
        refused = refusal(rule, errors)
        if refused is not None:
            return refused
        async with self.store.lock:
            try:
                return _after_effect(produce(), rule, errors)
            except ProviderError as error:
                return errors(error)

    def can_see(self, obj: ProviderObject, rule: FaultRule | None, *, consistent: bool = False) -> bool:
        """Lookups skip hidden objects, and those younger than a lookup rule's not_found_for_s.
        A `consistent` read (Stripe's retrieve by id) sees objects the visibility delay hides.
        No read sees an object the provider lost (`POST /_control/objects/{id}/forget`)."""
        now = self.clock.now()
        if obj.forgotten:
            return False
        if not consistent and not obj.visible_at(now):
            return False
        if rule is not None and rule.action == "not_found_for_s":
            return now >= obj.created_at + timedelta(seconds=rule.not_found_for_s)
        return True


def _after_effect(reply: Reply, rule: FaultRule | None, errors: ErrorReply) -> Reply:
    """`error_500_after_effect`: the effect ran, the answer (and what the key saves) is a 500."""
    if rule is not None and rule.action == "error_500_after_effect":
        return errors(InternalError(), status=rule.status)
    return reply
