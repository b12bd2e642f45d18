"""Stripe webhook signatures: checked against the official ``stripe`` package both
ways, with rotation, the 300 s tolerance on the injected clock, and every malformed header a
rejection (401), never an exception."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import stripe

from gateway.domain.webhook_verdicts import SIGNATURE_INVALID, TIMESTAMP_OUT_OF_TOLERANCE, Rejected, Verified
from gateway.providers.stripe.signatures import EndpointSecrets, verify
from tests.stripe_support import STRIPE_ACCOUNT, STRIPE_SECRET, event, payment_intent, stripe_signature

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
T = int(NOW.timestamp())
BODY = event("payment_intent.succeeded", payment_intent())
ACCOUNT = EndpointSecrets(STRIPE_ACCOUNT, (STRIPE_SECRET.encode(),))


def test_the_official_stripe_package_verifies_the_headers_paygates_test_helper_makes() -> None:
    """`stripe` verifies the headers paygate's test helper makes."""
    header = stripe_signature(BODY, T)
    assert stripe.WebhookSignature.verify_header(BODY.decode(), header, STRIPE_SECRET, tolerance=None)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.WebhookSignature.verify_header(BODY.decode() + " ", header, STRIPE_SECRET, tolerance=None)


def test_paygate_verifies_headers_the_official_stripe_package_makes() -> None:
    """Paygate verifies headers made the way Stripe documents; the account is the one
    whose secret verified (seed 004: from the verified context, never the payload)."""
    header = stripe.WebhookSignature.generate_signature_header(BODY.decode(), STRIPE_SECRET, timestamp=T)
    assert verify({"Stripe-Signature": header}, BODY, [ACCOUNT], NOW) == Verified(STRIPE_ACCOUNT, "", T)
    tampered = BODY.replace(b"4250", b"4251")
    assert verify({"Stripe-Signature": header}, tampered, [ACCOUNT], NOW).code == SIGNATURE_INVALID  # type: ignore[union-attr]


def test_during_a_secret_roll_any_v1_entry_under_any_configured_secret_verifies() -> None:
    """Stripe signs with the old and the new secret while both are active: an account configured
    with both accepts a header signed with either, or with both."""
    rolled = EndpointSecrets(STRIPE_ACCOUNT, (b"whsec_old", b"whsec_new"))
    for secrets in (("whsec_old",), ("whsec_new",), ("whsec_other", "whsec_new")):
        assert isinstance(verify({"stripe-signature": stripe_signature(BODY, T, *secrets)}, BODY, [rolled], NOW),
                          Verified)
    assert verify({"stripe-signature": stripe_signature(BODY, T, "whsec_other")}, BODY, [rolled], NOW) == Rejected(
        SIGNATURE_INVALID, "no v1 entry verifies under the endpoint's secrets")


def test_the_account_whose_secret_verified_is_the_notifications_account() -> None:
    live = EndpointSecrets("stripe:acct_store:live", (b"whsec_live",))
    verified = verify({"stripe-signature": stripe_signature(BODY, T, "whsec_live")}, BODY, [ACCOUNT, live], NOW)
    assert isinstance(verified, Verified) and verified.account_id == "stripe:acct_store:live"


@pytest.mark.parametrize("offset", [301, -301])
def test_a_timestamp_more_than_300_s_from_the_injected_clock_is_out_of_tolerance(offset: int) -> None:
    header = stripe_signature(BODY, T)
    assert verify({"Stripe-Signature": header}, BODY, [ACCOUNT], NOW + timedelta(seconds=offset)).code \
        == TIMESTAMP_OUT_OF_TOLERANCE  # type: ignore[union-attr]
    assert isinstance(verify({"Stripe-Signature": header}, BODY, [ACCOUNT], NOW + timedelta(seconds=300)), Verified)


@pytest.mark.parametrize("header", [
    None, "", "v1=" + "0" * 64, f"t={T}", f"t=abc,v1={'0' * 64}", f"t={T}.5,v1={'0' * 64}", f"t={T},v1=zz",
    f"t={T},v0={'0' * 64}", f"t={T},v1", "garbage,,,=", "t=" + "9" * 40,
])
def test_every_missing_or_malformed_header_is_a_signature_rejection_never_an_exception(header: str | None) -> None:
    headers = {} if header is None else {"Stripe-Signature": header}
    assert verify(headers, BODY, [ACCOUNT], NOW).code == SIGNATURE_INVALID  # type: ignore[union-attr]
