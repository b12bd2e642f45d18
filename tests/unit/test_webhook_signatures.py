"""Standard Webhooks verification (API.md "Provider notifications"; NOTES.md "Standard Webhooks":
the reference test vector, svix aliases, integer timestamps only, malformed headers are a 401,
never a 500; seed 004, "The Notification Handler": the account is the one whose secret verified).
Conformance: the reference ``standardwebhooks`` package signs, the gateway verifies."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from standardwebhooks import Webhook

from gateway.domain.webhook_verdicts import SIGNATURE_INVALID, TIMESTAMP_OUT_OF_TOLERANCE, Rejected, Verified
from gateway.providers.cardco.signatures import AccountKeys, verify
from provider_fake.signing import sign_v1

VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
OTHER_SECRET = "whsec_" + base64.b64encode(b"another-secret-another-secret!!").decode()
NOW = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
TEST = AccountKeys.from_config("cardco:acct_store:test", [VECTOR_SECRET], [])


def headers(msg_id: str, ts: int | str, signature: str, prefix: str = "webhook-") -> dict[str, str]:
    return {f"{prefix}id": msg_id, f"{prefix}timestamp": str(ts), f"{prefix}signature": signature}


def reference_signed(secret: str, body: bytes, at: datetime = NOW, msg_id: str = "msg_1") -> dict[str, str]:
    signature = Webhook(secret).sign(msg_id, at, body.decode())
    return headers(msg_id, int(at.timestamp()), signature)


def test_the_notes_test_vector_verifies_with_the_injected_clock() -> None:
    at_vector = datetime.fromtimestamp(VECTOR_TS, UTC)
    result = verify(headers(VECTOR_ID, VECTOR_TS, VECTOR_SIGNATURE), VECTOR_BODY, [TEST], at_vector)
    assert result == Verified("cardco:acct_store:test", VECTOR_ID, VECTOR_TS)
    # The same request today is long past the 300 s tolerance.
    assert verify(headers(VECTOR_ID, VECTOR_TS, VECTOR_SIGNATURE), VECTOR_BODY, [TEST], NOW) == Rejected(
        TIMESTAMP_OUT_OF_TOLERANCE, "webhook-timestamp is more than 300 s from now")


def test_conformance_reference_library_signs_and_the_gateway_verifies() -> None:
    body = b'{"id":"evt_1","type":"payment.succeeded"}'
    assert isinstance(verify(reference_signed(VECTOR_SECRET, body), body, [TEST], NOW), Verified)


def test_conformance_a_tampered_body_is_refused() -> None:
    signed = reference_signed(VECTOR_SECRET, b'{"amount_minor":4250}')
    assert verify(signed, b'{"amount_minor":4251}', [TEST], NOW).code == SIGNATURE_INVALID  # type: ignore[union-attr]


def test_conformance_rotated_secrets_both_verify_during_the_rotation() -> None:
    rotating = AccountKeys.from_config("cardco:acct_store:test", [VECTOR_SECRET, OTHER_SECRET], [])
    body = b"{}"
    for secret in (VECTOR_SECRET, OTHER_SECRET):
        assert isinstance(verify(reference_signed(secret, body), body, [rotating], NOW), Verified)
    # A signer sending both entries (old and new) verifies against either configuration.
    both = reference_signed(VECTOR_SECRET, body)
    both["webhook-signature"] += " " + Webhook(OTHER_SECRET).sign("msg_1", NOW, "{}")
    only_new = AccountKeys.from_config("cardco:acct_store:test", [OTHER_SECRET], [])
    assert isinstance(verify(both, body, [only_new], NOW), Verified)


@pytest.mark.parametrize("skew_s, accepted", [(-300, True), (300, True), (-301, False), (301, False)])
def test_conformance_timestamps_are_accepted_within_300_seconds_either_way(skew_s: int, accepted: bool) -> None:
    body = b"{}"
    result = verify(reference_signed(VECTOR_SECRET, body, NOW + timedelta(seconds=skew_s)), body, [TEST], NOW)
    assert isinstance(result, Verified) is accepted
    if not accepted:
        assert result.code == TIMESTAMP_OUT_OF_TOLERANCE  # type: ignore[union-attr]


def test_the_account_is_the_one_whose_secret_verified() -> None:
    live = AccountKeys.from_config("cardco:acct_store:live", [OTHER_SECRET], [])
    body = b"{}"
    result = verify(reference_signed(OTHER_SECRET, body), body, [TEST, live], NOW)
    assert isinstance(result, Verified) and result.account_id == "cardco:acct_store:live"


def test_svix_header_aliases_are_accepted() -> None:
    signed = reference_signed(VECTOR_SECRET, b"{}")
    aliased = {key.replace("webhook-", "svix-"): value for key, value in signed.items()}
    assert isinstance(verify(aliased, b"{}", [TEST], NOW), Verified)


def test_a_body_that_is_not_utf8_is_verified_as_raw_bytes() -> None:
    body = b"\xff\xfe not utf-8 \x80"
    signed = headers("msg_1", int(NOW.timestamp()), sign_v1(VECTOR_SECRET, "msg_1", int(NOW.timestamp()), body))
    assert isinstance(verify(signed, body, [TEST], NOW), Verified)


def test_v1a_ed25519_verifies_only_where_the_account_has_a_public_key() -> None:
    private = Ed25519PrivateKey.generate()
    public = "whpk_" + base64.b64encode(private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()
    ts = int(NOW.timestamp())
    entry = "v1a," + base64.b64encode(private.sign(f"msg_1.{ts}.".encode() + b"{}")).decode()
    with_key = AccountKeys.from_config("cardco:acct_store:test", [VECTOR_SECRET], [public])
    assert isinstance(verify(headers("msg_1", ts, entry), b"{}", [with_key], NOW), Verified)
    assert verify(headers("msg_1", ts, entry), b"{}", [TEST], NOW).code == SIGNATURE_INVALID  # type: ignore[union-attr]
    assert verify(headers("msg_1", ts, entry), b"{!}", [with_key], NOW).code == SIGNATURE_INVALID  # type: ignore[union-attr]


VALID_TS = str(int(NOW.timestamp()))


@pytest.mark.parametrize("bad_headers", [
    {},
    {"webhook-id": "msg_1", "webhook-timestamp": VALID_TS},
    {"webhook-id": "", "webhook-timestamp": VALID_TS, "webhook-signature": "v1,AAAA"},
    {"webhook-id": "msg 1", "webhook-timestamp": VALID_TS, "webhook-signature": "v1,AAAA"},
    {"webhook-id": "msg_1", "webhook-timestamp": VALID_TS + ".5", "webhook-signature": "v1,AAAA"},
    {"webhook-id": "msg_1", "webhook-timestamp": "1e9", "webhook-signature": "v1,AAAA"},
    {"webhook-id": "msg_1", "webhook-timestamp": "-5", "webhook-signature": "v1,AAAA"},
    {"webhook-id": "msg_1", "webhook-timestamp": "9" * 40, "webhook-signature": "v1,AAAA"},
    {"webhook-id": "msg_1", "webhook-timestamp": VALID_TS, "webhook-signature": "v1,not base64!"},
    {"webhook-id": "msg_1", "webhook-timestamp": VALID_TS, "webhook-signature": "v2,AAAA v1"},
    {"webhook-id": "msg_1", "webhook-timestamp": VALID_TS, "webhook-signature": "garbage"},
    {"webhook-id": "msg_1", "webhook-timestamp": VALID_TS, "webhook-signature": "v1,AAAA"},
])
def test_missing_or_malformed_headers_are_signature_invalid_never_an_exception(bad_headers: dict[str, str]) -> None:
    assert verify(bad_headers, b"{}", [TEST], NOW).code == SIGNATURE_INVALID  # type: ignore[union-attr]


def test_malformed_configuration_fails_at_start_up() -> None:
    with pytest.raises(ValueError):
        AccountKeys.from_config("a", ["whsec_%%%"], [])
    with pytest.raises(ValueError):
        AccountKeys.from_config("a", [], ["whpk_" + base64.b64encode(b"short").decode()])
