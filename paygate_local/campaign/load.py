"""The campaign's customers, merchants and clerks ("Drives load through HTTP only, like
real clients").

Checkouts: cards that succeed, decline, need 3-D Secure that is completed, abandoned or left to
expire; customers who double-click and poll the status; cancellations racing the payment; a
customer who tries again after a failed attempt; merchants refunding paid orders (when the gateway
offers ``POST /v1/orders/{id}/refund``). Payouts: decision, acknowledgement or approval where the
policy asks for one, execution by the workers, and a few recalls of paid payouts. A client only
waits as long as a person would (``PATIENCE_S``); whatever is still open then is left to the
system, and the settle and the invariants judge the outcome. A scenario is counted (``made``, and
``operations["checkout:<kind>"]``) once it reached its end, not when it started: one the
gateway never answered, or that raised, is missing from the count.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from paygate_local.campaign.client import Gateway

PATIENCE_S = 8.0
POLL_S = 0.5
FINAL = frozenset({"Succeeded", "Failed", "NotApplied"})
PAYOUT_FINAL = frozenset({"Paid", "Failed", "Cancelled"})
# How often each kind of checkout is chosen (refunds only where the gateway offers them).
CHECKOUT_KINDS: dict[str, int] = {
    "succeed": 30, "decline": 10, "3ds-completed": 8, "3ds-abandoned": 5, "3ds-expired": 5,
    "double-click": 12, "cancel-race": 20, "refund": 10,
}
# A racing cancellation is sent this long after the payment (seeded, per checkout): spread over
# the span in which the gateway inserts the attempt and then moves it to Started, so some land
# between the two (seed 004 "Cancellation goes through the same lock"; that span is a median of
# about 18 ms, 95% under 45 ms, in a 300-checkout run on 2 loaded cores).
CANCEL_AFTER_S = (0.0, 0.08)
METHODS = {"decline": "pm_card_declined", "3ds-completed": "pm_card_3ds", "3ds-abandoned": "pm_card_3ds",
           "3ds-expired": "pm_card_3ds"}
# "scheduled" payouts are released a few seconds ahead, so their jobs wait in the broker as delayed
# messages (and in the worker that prefetched them) when a worker is killed or the broker restarts.
PAYOUT_KINDS: dict[str, int] = {"plain": 45, "scheduled": 20, "above-limit": 12, "new-destination": 13, "recall": 10}
SCHEDULED_AHEAD_S = (6.0, 15.0)
ABOVE_LIMIT_MINOR = 600_000  # the demo clerk may request up to 500,000 without an approver
NEW_DESTINATION = "DST-CAMPAIGN-NEW"
RECALL_POLICY = ("payout.recall", "recall-policy/campaign")


@dataclass(frozen=True)
class Checkout:
    order_id: str
    kind: str
    account: str
    amount_minor: int
    cancel_after_s: float = 0.0  # a cancel-race's cancellation, after the payment

    @property
    def reference(self) -> str:
        return f"{self.order_id}-a1"


@dataclass(frozen=True)
class Payout:
    payout_id: str
    kind: str
    amount_minor: int
    release_in_s: float = 0.0

    @property
    def reference(self) -> str:
        return f"{self.payout_id}-a1"


def checkouts(rng: random.Random, tag: str, count: int, accounts: list[str], refunds: bool) -> list[Checkout]:
    kinds = {k: w for k, w in CHECKOUT_KINDS.items() if refunds or k != "refund"}
    names, weights = list(kinds), list(kinds.values())
    chosen = []
    for n in range(1, count + 1):
        kind = rng.choices(names, weights)[0]
        account, amount = rng.choice(accounts), rng.randrange(100, 20_000)
        after = round(rng.uniform(*CANCEL_AFTER_S), 4) if kind == "cancel-race" else 0.0
        chosen.append(Checkout(f"C{tag}-{n:05d}", kind, account, amount, after))
    return chosen


def payouts(rng: random.Random, tag: str, count: int) -> list[Payout]:
    names, weights = list(PAYOUT_KINDS), list(PAYOUT_KINDS.values())
    chosen = []
    for n in range(1, count + 1):
        kind = rng.choices(names, weights)[0]
        amount = ABOVE_LIMIT_MINOR + rng.randrange(1, 100_000) if kind == "above-limit" else rng.randrange(500, 50_000)
        ahead = round(rng.uniform(*SCHEDULED_AHEAD_S), 1) if kind == "scheduled" else 0.0
        chosen.append(Payout(f"P{tag}-{n:04d}", kind, amount, ahead))
    return chosen


class Load:
    def __init__(self, gateway: Gateway, cardco: httpx.AsyncClient, document: dict[str, Any]) -> None:
        self.gateway = gateway
        self._cardco = cardco
        self._doc = document
        self.operations: Counter[str] = Counter()
        self.made: Counter[str] = Counter()  # scenarios that reached their end: "checkout", "payout"
        # orders whose cancellation the gateway accepted, and when it committed: the order's
        # ``updated_at`` in the answer, stamped under the order's lock
        self.cancelled: dict[str, datetime] = {}
        # payouts asked for, and when each one's grant may first be valid: its release time less the
        # grant lead the gateway runs with (seed 000)
        self.windows_open: dict[str, datetime] = {}

    async def setup(self) -> bool:
        """Reference data through the admin API: a daily limit the run cannot exhaust, a newly
        registered destination (whose payouts need an acknowledgement) and a published recall
        policy (without one every recall is Deferred ``context.unavailable`` and no recall is ever
        sent). True if refunds exist."""
        tenant = {"daily_limit_minor": 10**11, "currency": "EUR", "payouts_suspended": False,
                  "settlement_time_zone": "Europe/Berlin"}
        await self._ok("PUT", f"/v1/tenants/{self._doc['tenant_id']}", "admin", tenant)
        await self._ok("PUT", f"/v1/destinations/{NEW_DESTINATION}", "admin",
                       {"beneficiary_id": self._doc["beneficiary_id"], "provider_token": "dst_tok_campaign_new"})
        await self._ok("PUT", f"/v1/policy/{RECALL_POLICY[0]}", "admin", {"version": RECALL_POLICY[1]})
        described = await self._ok("GET", "/openapi.json", "admin")
        return "/v1/orders/{order_id}/refund" in described.json()["paths"]

    async def _ok(self, method: str, path: str, role: str, body: dict[str, Any] | None = None) -> httpx.Response:
        response = await self.gateway.call(method, path, role, body)
        if response is None or response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code if response else 'no answer'}")
        return response

    # -- checkouts ---------------------------------------------------------------------------

    async def checkout(self, c: Checkout) -> None:
        order = {"order_id": c.order_id, "customer_id": self._doc["customer_id"], "amount_minor": c.amount_minor,
                 "currency": "EUR", "payment_method": METHODS.get(c.kind, "pm_card_visa"),
                 "provider_account": c.account}
        if await self.gateway.call("POST", "/v1/orders", "merchant", order) is None:
            return
        if c.kind == "double-click":
            await asyncio.gather(self._pay(c), self._pay(c))
        elif c.kind == "cancel-race":
            await asyncio.gather(self._pay(c), self._cancel(c, c.cancel_after_s))
        else:
            await self._pay(c)
        state = await self._follow(c)
        if state in ("Failed", "NotApplied") and c.kind in ("succeed", "refund", "double-click"):
            self.operations["checkout-retry-after-failure"] += 1
            await self._pay(c)
            state = await self._follow(c)
        if c.kind == "refund" and state == "Succeeded":
            self.operations["order-refund"] += 1
            await self.gateway.call("POST", f"/v1/orders/{c.order_id}/refund", "merchant", {})
        self.operations[f"checkout:{c.kind}"] += 1
        self.made["checkout"] += 1

    async def _cancel(self, c: Checkout, after_s: float) -> None:
        """The merchant cancels ``after_s`` into the customer's payment. An accepted cancellation
        is noted with the moment the gateway stamped on the order (``updated_at``): the cancelling
        transaction takes it under the order's lock, after every send intent that lock let through
        before it (the Started transition takes its time before it waits for that lock)."""
        await asyncio.sleep(after_s)
        self.operations["order-cancel"] += 1
        response = await self.gateway.call("POST", f"/v1/orders/{c.order_id}/cancel", "merchant")
        if response is not None and response.status_code == 200 and \
                response.json()["state"] in ("Cancelled", "CancelRequested"):
            stamped = datetime.fromisoformat(response.json()["updated_at"].replace("Z", "+00:00"))
            self.cancelled.setdefault(c.order_id, stamped)
            self.operations[f"order-cancel:{response.json()['state']}"] += 1

    async def _pay(self, c: Checkout) -> httpx.Response | None:
        self.operations["payment-post"] += 1
        return await self.gateway.call("POST", f"/v1/orders/{c.order_id}/payment", "customer")

    async def _follow(self, c: Checkout) -> str | None:
        """Poll the status URL like the checkout page, acting on a 3-D Secure challenge as this
        customer does; the last state seen when the customer stops waiting."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE_S
        acted = False
        state: str | None = None
        while loop.time() < deadline:
            self.operations["status-poll"] += 1
            response = await self.gateway.call("GET", f"/v1/orders/{c.order_id}/payment/status", "customer",
                                               patience_s=PATIENCE_S)
            if response is not None and response.status_code in (200, 202):
                status = response.json()
                state = str(status["state"])
                if state in FINAL:
                    return state
                action = status.get("next_action")
                if action and not acted and c.kind in ("3ds-completed", "3ds-abandoned"):
                    acted = True
                    result = "succeeded" if c.kind == "3ds-completed" else "failed"
                    self.operations[f"3ds-{result}"] += 1
                    await self._cardco.post(_action_url(action), json={"result": result})
            elif response is not None and response.status_code == 404:
                return None  # the cancellation won: no attempt was made
            await asyncio.sleep(POLL_S)
        return state

    # -- payouts -----------------------------------------------------------------------------

    async def payout(self, p: Payout) -> None:
        destination = NEW_DESTINATION if p.kind == "new-destination" else self._doc["destination_id"]
        release_at = datetime.now(UTC) + timedelta(seconds=p.release_in_s)
        self.windows_open[p.payout_id] = release_at - timedelta(
            seconds=float(self._doc["settings"]["payout_grant_lead_s"]))
        terms = {"beneficiary_id": self._doc["beneficiary_id"], "destination_id": destination,
                 "amount_minor": p.amount_minor, "currency": "EUR", "purpose": "campaign payout",
                 "release_at": release_at.isoformat().replace("+00:00", "Z")}
        if await self.gateway.call("POST", "/v1/payouts", "clerk", {"payout_id": p.payout_id, **terms}) is None:
            return
        decision = await self.gateway.call("POST", f"/v1/payouts/{p.payout_id}/submit", "clerk", terms)
        if decision is None:
            return
        outcome = decision.json().get("outcome") if decision.status_code == 200 else None
        self.operations[f"payout-decision:{outcome}"] += 1
        if outcome == "AcknowledgmentRequired":
            await self.gateway.call("POST", f"/v1/payouts/{p.payout_id}/acknowledge", "clerk",
                                    {"reason_code": "destination.recently-changed"})
        elif outcome == "EscalationRecommended":
            self.operations["payout-approve"] += 1
            await self.gateway.call("POST", f"/v1/payouts/{p.payout_id}/approve", "approver", {})
        if p.kind != "scheduled":  # a scheduled one is released later: the clerk does not wait
            await self._see_through(p)
        self.operations[f"payout:{p.kind}"] += 1
        self.made["payout"] += 1

    async def _see_through(self, p: Payout) -> None:
        """Follow a released payout to its end as the clerk does: reauthorize one proven never
        applied, recall a paid one when that is the scenario."""
        state = await self._follow_payout(p.payout_id)
        if state == "Approved:retry":
            # Proven never applied: a materially new attempt needs a fresh decision (seed 000).
            self.operations["payout-reauthorize"] += 1
            await self.gateway.call("POST", f"/v1/payouts/{p.payout_id}/reauthorize", "clerk", {})
            state = await self._follow_payout(p.payout_id)
        if p.kind == "recall" and state == "Paid":
            self.operations["payout-recall"] += 1
            answer = await self.gateway.call("POST", f"/v1/payouts/{p.payout_id}/recall", "clerk", {})
            decided = answer.json().get("outcome") if answer is not None and answer.status_code == 200 else None
            self.operations[f"payout-recall-decision:{decided or (answer.status_code if answer else None)}"] += 1

    async def _follow_payout(self, payout_id: str) -> str | None:
        """The payout's state once final, ``Approved:retry`` once its attempt was proven never
        applied, else the last state seen when the clerk stops waiting."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE_S * 2
        state: str | None = None
        while loop.time() < deadline:
            self.operations["payout-poll"] += 1
            response = await self.gateway.call("GET", f"/v1/payouts/{payout_id}", "clerk")
            if response is not None and response.status_code == 200:
                payout = response.json()
                state = str(payout["state"])
                if state in PAYOUT_FINAL:
                    return state
                if state == "Approved" and payout["attempts"] and \
                        payout["attempts"][-1]["state"] in ("NotApplied", "NotStarted"):
                    return "Approved:retry"
            await asyncio.sleep(POLL_S * 2)
        return state


def _action_url(action: dict[str, Any]) -> str:
    """Where the customer completes 3-D Secure: CardCo's ``url``, or the Stripe dialect's
    ``redirect_to_url.url`` / ``use_stripe_sdk.stripe_js`` (the gateway passes the provider's
    next action through)."""
    url = action.get("url") or action.get("redirect_to_url", {}).get("url") or \
        action.get("use_stripe_sdk", {}).get("stripe_js")
    if not isinstance(url, str):
        raise ValueError(f"a next action without a URL: {action}")
    return url
