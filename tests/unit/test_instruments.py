"""What a process counts before it flushes (gateway/instruments.py: "bounded label
sets (never an id, account token or free text as a label value)"; docs/decisions/0040)."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from gateway import instruments
from gateway.instruments import CLAIMS_LOST, PROVIDER_CALLS, VALIDATION_REFUSALS


def _taken() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(name, frozenset(labels)): value for (name, labels), value in instruments.take().items()}


@pytest.mark.parametrize("value", ["PAY-3107", "6a2a4ec6-4daf-4902-96f5-51e1104e7a6f", "cardco:acct_store:test",
                                   "dst_tok_secret_77", "refused because the clerk said so", "", "x" * 65])
def test_a_reason_that_is_not_a_code_is_counted_as_other(value: str) -> None:
    instruments.take()
    instruments.count(VALIDATION_REFUSALS, kind="payout", reason=value)
    assert _taken() == {("paygate_payout_validation_refusals_total",
                         frozenset({("kind", "payout"), ("reason", "other")})): 1.0}


def test_codes_kinds_and_enumerated_values_are_kept_and_anything_else_is_other() -> None:
    instruments.take()
    instruments.count(VALIDATION_REFUSALS, kind="payout_recall", reason="presenter.not-audience")
    instruments.count(CLAIMS_LOST, kind="PAY-3107")
    assert _taken() == {
        ("paygate_payout_validation_refusals_total",
         frozenset({("kind", "payout_recall"), ("reason", "presenter.not-audience")})): 1.0,
        ("paygate_payout_claims_lost_total", frozenset({("kind", "other")})): 1.0}


def test_a_family_takes_exactly_its_declared_labels() -> None:
    with pytest.raises(ValueError, match="takes labels"):
        instruments.count(CLAIMS_LOST, kind="payout", payout_id="PAY-3107")
    with pytest.raises(ValueError, match="is a histogram"):
        instruments.count(PROVIDER_CALLS, kind="payout", operation="create", account="cardco:a:test", outcome="ok")


def test_an_observation_fills_every_bucket_from_its_bound_up_and_the_sum_and_count() -> None:
    instruments.take()
    labels = {"kind": "payout", "operation": "lookup", "account": "cardco:acct_store:test", "outcome": "ok"}
    instruments.observe(PROVIDER_CALLS, 0.2, **labels)
    instruments.observe(PROVIDER_CALLS, 40.0, **labels)
    taken = _taken()
    base = set(labels.items())
    buckets = {dict(labels)["le"]: value for (name, labels), value in taken.items() if name.endswith("_bucket")}
    assert buckets == {"0.25": 1, "0.5": 1, "1.0": 1, "2.5": 1, "5.0": 1, "10.0": 1, "30.0": 1, "+Inf": 2}
    assert taken[("paygate_provider_call_seconds_count", frozenset(base))] == 2
    assert taken[("paygate_provider_call_seconds_sum", frozenset(base))] == pytest.approx(40.2)


@pytest.mark.parametrize(("status", "error", "outcome"), [
    (200, None, "ok"), (201, None, "ok"), (402, None, "rejected"), (404, None, "rejected"),
    (429, None, "rate_limited"), (500, None, "server_error"), (503, None, "server_error"),
    (None, httpx.ReadTimeout("read"), "timeout"), (None, TimeoutError(), "timeout"),
    (None, asyncio.CancelledError(), "timeout"), (None, httpx.ConnectError("refused"), "transport"),
    (None, httpx.RemoteProtocolError("cut"), "transport"), (None, ValueError("bug"), "error")])
def test_a_provider_call_comes_to_one_outcome(status: int | None, error: BaseException | None, outcome: str) -> None:
    assert instruments.call_outcome(status, error) == outcome


def test_every_operation_the_provider_call_client_makes_is_a_label_value() -> None:
    """ProviderCalls names each call's operation (gateway/providers/calls.py: create, read's lookup,
    payment_method and list); none of them may be counted as ``other``."""
    import inspect

    from gateway.payments import client
    from gateway.providers import calls
    named = {operation for module in (calls, client)
             for operation in re.findall(r'\.(?:answered|read)\("([a-z_]+)"', inspect.getsource(module))}
    assert named and named <= set(PROVIDER_CALLS.labels["operation"])


async def test_a_timed_call_is_observed_and_returns_or_raises_exactly_what_the_call_did() -> None:
    """Each call is observed once, in paygate_provider_call_seconds by what it was for (kind and
    operation) and the account it went to (the Overview's latency and error rate per account;
    docs/decisions/0065); an account label that is not an account id is counted as ``other``, a
    kind that is not a registered kind likewise."""
    instruments.take()

    async def answered() -> httpx.Response:
        return httpx.Response(429)

    async def cut() -> httpx.Response:
        raise httpx.ConnectError("refused")

    assert (await instruments.provider_call(answered(), account="cardco:acct_store:live", kind="payment_refund",
                                            operation="create")).status_code == 429
    with pytest.raises(httpx.ConnectError):
        await instruments.provider_call(cut(), account="ord_4411", kind="ord_4411", operation="payment_method")
    taken = _taken()
    counts = {(dict(labels)["kind"], dict(labels)["operation"], dict(labels)["account"], dict(labels)["outcome"]): value
              for (name, labels), value in taken.items() if name == "paygate_provider_call_seconds_count"}
    assert counts == {("payment_refund", "create", "cardco:acct_store:live", "rate_limited"): 1,
                      ("other", "payment_method", "other", "transport"): 1}
