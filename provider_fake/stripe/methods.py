"""Stripe's test PaymentMethods, the declines they cause, and the PaymentMethod object.

docs/rehearsing-incidents.md "Stripe dialect": the documented test methods choose the outcome
(`pm_card_visa` succeeds; `pm_card_visa_chargeDeclined` and its siblings are declined with the
documented `decline_code`; `pm_card_authenticationRequired`, `pm_card_threeDSecure2Required` and
`pm_card_threeDSecureRequired` need 3-D Secure); any other `pm_...` succeeds; a method expired
through the shared control API (or `pm_card_expired`) is declined with `expired_card`. A decline's
`last_payment_error` (and the 402's error) has Stripe's card error shape.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from provider_fake.stripe.errors import DOCS

# Test PaymentMethod -> the failure it causes (a decline code, or a card error code).
DECLINING_METHODS = {
    "pm_card_visa_chargeDeclined": "generic_decline",
    "pm_card_chargeDeclined": "generic_decline",
    "pm_card_visa_chargeDeclinedInsufficientFunds": "insufficient_funds",
    "pm_card_chargeDeclinedInsufficientFunds": "insufficient_funds",
    "pm_card_visa_chargeDeclinedLostCard": "lost_card",
    "pm_card_chargeDeclinedLostCard": "lost_card",
    "pm_card_visa_chargeDeclinedStolenCard": "stolen_card",
    "pm_card_chargeDeclinedStolenCard": "stolen_card",
    "pm_card_chargeDeclinedExpiredCard": "expired_card",
    "pm_card_chargeDeclinedIncorrectCvc": "incorrect_cvc",
    "pm_card_chargeDeclinedProcessingError": "processing_error",
}
AUTHENTICATING_METHODS = frozenset(
    {"pm_card_authenticationRequired", "pm_card_threeDSecure2Required", "pm_card_threeDSecureRequired"}
)
BRANDS = {"mastercard": "mastercard", "amex": "amex", "discover": "discover"}

# Failure -> (error code, decline_code or None, message), as Stripe's card errors carry them.
CARD_ERRORS = {
    "expired_card": ("expired_card", None, "Your card has expired."),
    "incorrect_cvc": ("incorrect_cvc", None, "Your card's security code is incorrect."),
    "processing_error": (
        "processing_error", None, "An error occurred while processing your card. Try again in a little bit."
    ),
    "insufficient_funds": ("card_declined", "insufficient_funds", "Your card has insufficient funds."),
}
# CardCo's names for a failed or abandoned 3-D Secure (payments.authenticate_payment, objects.Payment).
AUTHENTICATION_FAILURES = frozenset({"authentication_failed", "action_expired"})
AUTHENTICATION_MESSAGE = (
    "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new "
    "PaymentMethod to attempt to fulfill this PaymentIntent again."
)


def payment_error(failure: str, charge: str | None, method: str | None, created: datetime) -> dict[str, Any]:
    """`last_payment_error` for a failure: a card error, or an authentication failure."""
    pm = payment_method_object(method, created, None) if method else None
    if failure in AUTHENTICATION_FAILURES:
        code = "payment_intent_authentication_failure"
        return {"code": code, "doc_url": DOCS + code.replace("_", "-"), "message": AUTHENTICATION_MESSAGE,
                "payment_method": pm, "type": "invalid_request_error"}
    code, decline_code, message = CARD_ERRORS.get(failure, ("card_declined", failure, "Your card was declined."))
    if failure in ("card_declined", "generic_decline"):
        decline_code = "generic_decline"
    error: dict[str, Any] = {"charge": charge, "code": code}
    if decline_code is not None:
        error["decline_code"] = decline_code
    return error | {"doc_url": DOCS + code.replace("_", "-"), "message": message, "payment_method": pm,
                    "type": "card_error"}


def payment_method_object(method: str, created: datetime, expired_at: datetime | None) -> dict[str, Any]:
    """The `payment_method` object of a test card; an expired one expired the month before."""
    expiry = (expired_at - timedelta(days=31)) if expired_at is not None else created.replace(year=created.year + 3)
    brand = next((b for name, b in BRANDS.items() if name in method), "visa")
    return {
        "id": method,
        "object": "payment_method",
        "billing_details": {"address": None, "email": None, "name": None, "phone": None},
        "card": {
            "brand": brand,
            "country": "US",
            "exp_month": expiry.month,
            "exp_year": expiry.year,
            "funding": "credit",
            "last4": "0005" if brand == "amex" else "4242",
        },
        "created": int(created.timestamp()),
        "customer": None,
        "livemode": False,
        "metadata": {},
        "type": "card",
    }
