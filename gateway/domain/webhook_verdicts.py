"""What verifying a provider notification answers, whatever the provider's signature scheme (seed
004, "The Notification Handler": the provider account comes from the verified context, such as
which configured secret validated the signature, never from a payload field; API.md "Provider
notifications": a rejection is a 401 naming one of two codes).

A scheme (CardCo's Standard Webhooks, Stripe's ``Stripe-Signature``; each in its provider's
package) returns :class:`Verified`, naming the account whose key verified the request, or
:class:`Rejected`; a missing or malformed header is a rejection, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RejectionCode = Literal["webhook.signature_invalid", "webhook.timestamp_out_of_tolerance"]
SIGNATURE_INVALID: RejectionCode = "webhook.signature_invalid"
TIMESTAMP_OUT_OF_TOLERANCE: RejectionCode = "webhook.timestamp_out_of_tolerance"


@dataclass(frozen=True)
class Verified:
    account_id: str
    webhook_id: str
    timestamp: int


@dataclass(frozen=True)
class Rejected:
    code: RejectionCode
    reason: str
