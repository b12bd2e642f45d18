"""The reference checkout page ``paygate up`` serves at ``/demo/shop`` (docs: README, "A reference
checkout page"): the merchant's example to copy, not part of the gateway.

A checkout page is two halves. The browser half (``shop.html``) picks a card, asks for a payment,
follows ``next_action`` and polls the status with back-off. This module is the merchant's backend
half: it holds the tokens server-side (the browser never sees the merchant token, nor the
customer's), creates the order with the merchant role and relays the customer's two calls (POST
the payment, GET its status) with the customer role, answering what the gateway answered. Relaying
keeps the page on one origin: the gateway sends no CORS headers, and a merchant's own site would
sign its customer in to its own backend anyway.

Mounted on the demo sinks' app (the merchant's side of the demo: its webhook sink lives there
too), configured by the JSON file ``PAYGATE_SHOP_CONFIG`` names (``paygate up`` writes it).
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

PAGE = Path(__file__).with_name("shop.html")
# The cards the page offers per provider account: the fake's test cards (provider_fake/payments.py,
# provider_fake/stripe/methods.py): one that pays, one that asks for 3-D Secure, one declined.
CARDS = {
    "cardco": {"pm_card_visa": "Visa (pays)", "pm_card_3ds": "Visa, 3-D Secure", "pm_card_declined": "Declined"},
    "stripe": {"pm_card_visa": "Visa (pays)", "pm_card_threeDSecureRequired": "Visa, 3-D Secure",
               "pm_card_chargeDeclined": "Declined"},
}
ACCOUNTS = ("cardco:acct_store:test", "stripe:acct_store:test")
AMOUNT_MINOR, CURRENCY = 4250, "EUR"


def _config() -> dict[str, Any]:
    """``{"gateway_url", "merchant_token", "customer_token", "customer_id"}``, read per request
    so the sinks app starts without it (``paygate campaign`` has no shop)."""
    loaded: dict[str, Any] = json.loads(Path(os.environ["PAYGATE_SHOP_CONFIG"]).read_text())
    return loaded


async def _gateway(method: str, path: str, token: str, body: dict[str, Any] | None = None) -> Response:
    """One call to the gateway, its status, body and Location passed back to the browser."""
    config = _config()
    async with httpx.AsyncClient(base_url=config["gateway_url"], timeout=10.0) as client:
        answer = await client.request(method, path, json=body, headers={"Authorization": f"Bearer {token}"})
    headers = {name: answer.headers[name] for name in ("retry-after", "location") if name in answer.headers}
    return Response(answer.content, status_code=answer.status_code, headers=headers,
                    media_type=answer.headers.get("content-type", "application/json"))


async def page(request: Request) -> Response:
    return HTMLResponse(PAGE.read_text())


async def catalogue(request: Request) -> Response:
    return JSONResponse({"accounts": [{"id": a, "cards": CARDS[a.split(":")[0]]} for a in ACCOUNTS],
                         "amount_minor": AMOUNT_MINOR, "currency": CURRENCY})


async def create_order(request: Request) -> Response:
    """The merchant role: the backend decides the amount; the browser only picks account and card."""
    choice = await request.json()
    account, card = choice.get("provider_account"), choice.get("payment_method")
    if account not in ACCOUNTS or card not in CARDS[account.split(":")[0]]:
        return JSONResponse({"error": "unknown account or card"}, status_code=422)
    config, order_id = _config(), f"SHOP-{secrets.token_hex(6)}"
    # 3-D Secure's redirect flow: the bank's page sends the customer back here, to this order.
    return_url = f"{request.url_for('page')}?order={order_id}"
    return await _gateway("POST", "/v1/orders", config["merchant_token"], {
        "order_id": order_id, "customer_id": config["customer_id"], "amount_minor": AMOUNT_MINOR,
        "currency": CURRENCY, "payment_method": card, "provider_account": account, "return_url": return_url})


async def pay(request: Request) -> Response:
    """The customer role: start (or report) the order's payment."""
    return await _gateway("POST", f"/v1/orders/{request.path_params['order_id']}/payment", _config()["customer_token"])


async def status(request: Request) -> Response:
    """The customer role: the payment's status (never sends anything)."""
    return await _gateway("GET", f"/v1/orders/{request.path_params['order_id']}/payment/status",
                          _config()["customer_token"])


def routes() -> list[Route]:
    return [
        Route("/demo/shop", page, name="page"),
        Route("/demo/shop/api/catalogue", catalogue),
        Route("/demo/shop/api/orders", create_order, methods=["POST"]),
        Route("/demo/shop/api/orders/{order_id}/payment", pay, methods=["POST"]),
        Route("/demo/shop/api/orders/{order_id}/payment/status", status),
    ]
