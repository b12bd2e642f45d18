"""Fault rules (API.md "CardCo control API"): matching by operation, client reference and
occurrence, and every request action's exact semantics.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from provider_fake import CardCo
from tests.provider_fake.support import pay, send_payout, set_faults


async def ledger_size(control: httpx.AsyncClient) -> int:
    return len((await control.get("/ledger")).json()["payments"])


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({}, [500, 200, 200, 200, 200]),
        ({"nth": 2}, [200, 500, 200, 200, 200]),
        ({"nth": 2, "times": 2}, [200, 500, 500, 200, 200]),
        ({"nth": 3, "times": 0}, [200, 200, 500, 500, 500]),
    ],
)
async def test_nth_and_times_select_the_occurrences(client, control, rule, expected) -> None:
    """nth is 1-based among matching requests; times (default 1) from nth; 0 means forever."""
    await set_faults(control, {"operation": "create_payment", "action": "error_500_before_effect", **rule})
    statuses = [(await pay(client, key=f"k{i}")).status_code for i in range(5)]
    assert statuses == expected


async def test_a_rule_with_a_reference_counts_only_that_reference(client, control) -> None:
    await set_faults(
        control, {"operation": "create_payment", "action": "decline", "client_reference": "B", "nth": 2}
    )
    statuses = [
        (await pay(client, key=key, reference=reference)).status_code
        for key, reference in [("1", "A"), ("2", "B"), ("3", "A"), ("4", "B")]
    ]
    assert statuses == [200, 200, 200, 402]


async def test_replacing_rules_resets_counters_and_keeps_the_ledger(client, control) -> None:
    await pay(client, key="k0")
    await set_faults(control, {"operation": "create_payment", "action": "error_500_before_effect", "nth": 2})
    assert (await pay(client, key="k1")).status_code == 200
    await set_faults(control, {"operation": "create_payment", "action": "error_500_before_effect", "nth": 2})
    assert (await pay(client, key="k2")).status_code == 200
    assert (await pay(client, key="k3")).status_code == 500
    await set_faults(control)
    assert (await control.get("/faults")).json() == {"rules": []}
    assert await ledger_size(control) == 3


@pytest.mark.parametrize(
    "rule",
    [
        {"operation": "get_payment", "action": "decline"},
        {"operation": "create_payment", "action": "duplicate"},
        {"operation": "webhook", "action": "drop_response"},
        {"operation": "create_payment", "action": "explode"},
        {"operation": "charge", "action": "decline"},
        {"operation": "create_payment", "action": "processing", "final_status": "paid"},
        {"operation": "create_payment", "action": "decline", "nth": 0},
        {"operation": "create_payment", "action": "decline", "surprise": 1},
    ],
)
async def test_rules_that_cannot_apply_are_rejected(control, rule) -> None:
    response = await control.post("/faults", json={"rules": [rule]})
    assert response.status_code == 400
    assert (await control.get("/faults")).json() == {"rules": []}


async def test_drop_response_commits_the_effect_and_never_answers(client, control) -> None:
    """In-process, the caller gets httpx.ReadTimeout after the payment took effect; a resend
    with the same key then returns the saved result."""
    await set_faults(control, {"operation": "create_payment", "action": "drop_response"})
    with pytest.raises(httpx.ReadTimeout):
        await pay(client, key="k")
    assert await ledger_size(control) == 1
    resent = await pay(client, key="k")
    assert resent.status_code == 200
    assert resent.json()["id"] == (await control.get("/ledger")).json()["payments"][0]["id"]


async def test_timeout_before_effect_never_answers_and_has_no_effect(client, control) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "timeout_before_effect"})
    with pytest.raises(httpx.ReadTimeout):
        await pay(client, key="k")
    assert await ledger_size(control) == 0
    assert (await pay(client, key="k")).status_code == 200


async def test_error_500_before_effect_has_no_effect_and_saves_nothing(client, control) -> None:
    await set_faults(
        control, {"operation": "create_payment", "action": "error_500_before_effect", "status": 503}
    )
    failed = await pay(client, key="k")
    assert (failed.status_code, failed.json()["error"]["code"]) == (503, "internal_error")
    assert await ledger_size(control) == 0
    assert (await pay(client, key="k", amount=1)).status_code == 200


@pytest.mark.parametrize("action", ["malformed_body", "empty_body"])
async def test_broken_bodies_hide_an_effect_that_a_same_key_resend_reveals(client, control, action) -> None:
    """The payment takes effect, only the body is broken; the key holds the true result
    (docs/decisions/0002-cardco-fault-semantics.md)."""
    await set_faults(control, {"operation": "create_payment", "action": action})
    broken = await pay(client, key="k")
    assert broken.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken.content)
    resent = await pay(client, key="k")
    assert resent.json()["status"] == "succeeded"
    assert await ledger_size(control) == 1


async def test_delay_ms_answers_late_after_the_effect(client, control) -> None:
    await set_faults(control, {"operation": "create_payment", "action": "delay_ms", "delay_ms": 200})
    answer = asyncio.create_task(pay(client, key="k"))
    await asyncio.sleep(0.05)
    assert not answer.done()
    assert await ledger_size(control) == 1
    assert (await answer).status_code == 200


async def test_decline_rule_declines_a_good_card_with_its_code(client, control) -> None:
    await set_faults(
        control, {"operation": "create_payment", "action": "decline", "code": "insufficient_funds"}
    )
    response = await pay(client, method="pm_card_visa")
    assert (response.status_code, response.json()["error"]["code"]) == (402, "card_declined")
    assert response.json()["error"]["payment"]["failure_code"] == "insufficient_funds"


async def test_requires_action_rule_sets_its_expiry(client, control) -> None:
    await set_faults(
        control, {"operation": "create_payment", "action": "requires_action", "expires_in_s": 30}
    )
    payment = (await pay(client)).json()
    assert payment["status"] == "requires_action"
    assert payment["next_action"]["expires_at"] == "2026-11-29T16:00:30Z"


@pytest.mark.parametrize(("final", "code"), [("succeeded", None), ("failed", "card_declined")])
async def test_processing_completes_by_the_fake_clock(client, control, fake: CardCo, final, code) -> None:
    """processing completes after complete_after_s (checked lazily on every request)."""
    await set_faults(
        control,
        {
            "operation": "create_payment",
            "action": "processing",
            "complete_after_s": 10,
            "final_status": final,
        },
    )
    payment = (await pay(client)).json()
    assert payment["status"] == "processing"
    fake.clock.advance(9)
    assert (await client.get(f"/v1/payments/{payment['id']}")).json()["status"] == "processing"
    fake.clock.advance(1)
    done = (await client.get(f"/v1/payments/{payment['id']}")).json()
    assert (done["status"], done["failure_code"], done["sequence"]) == (final, code, 2)
    events = (await control.get("/webhooks")).json()["events"]
    assert [e["type"] for e in events] == ["payment.processing", f"payment.{final}"]


async def test_not_found_for_s_on_create_hides_the_payment_from_the_effect(
    client, control, fake: CardCo
) -> None:
    await set_faults(
        control, {"operation": "create_payment", "action": "not_found_for_s", "not_found_for_s": 20}
    )
    payment = (await pay(client)).json()
    fake.clock.advance(19)
    assert (await client.get(f"/v1/payments/{payment['id']}")).status_code == 404
    fake.clock.advance(1)
    assert (await client.get(f"/v1/payments/{payment['id']}")).status_code == 200


async def test_not_found_for_s_on_a_lookup_hides_young_objects(client, control, fake: CardCo) -> None:
    payment = (await pay(client, reference="R")).json()
    await set_faults(
        control,
        {"operation": "list_payments", "action": "not_found_for_s", "not_found_for_s": 5, "times": 0},
    )
    assert (await client.get("/v1/payments", params={"client_reference": "R"})).json() == {"data": []}
    assert (await client.get(f"/v1/payments/{payment['id']}")).status_code == 200
    fake.clock.advance(5)
    assert (await client.get("/v1/payments", params={"client_reference": "R"})).json() == {"data": [payment]}


@pytest.mark.parametrize(
    ("operation", "action", "check"),
    [
        ("get_payment", "error_500_after_effect", 500),
        ("get_payment", "rate_limit", 429),
        ("list_payments", "empty_body", 200),
        ("list_payments", "timeout_before_effect", httpx.ReadTimeout),
        ("list_payouts", "drop_response", httpx.ReadTimeout),
    ],
)
async def test_request_actions_apply_to_lookups(client, control, operation, action, check) -> None:
    payment = (await pay(client, reference="R")).json()
    await send_payout(client, reference="R")
    await set_faults(control, {"operation": operation, "action": action})
    path = {
        "get_payment": f"/v1/payments/{payment['id']}",
        "list_payments": "/v1/payments?client_reference=R",
        "list_payouts": "/v1/payouts?client_reference=R",
    }[operation]
    if isinstance(check, int):
        assert (await client.get(path)).status_code == check
    else:
        with pytest.raises(check):
            await client.get(path)
    assert (await client.get(path)).status_code == 200


async def test_a_fault_on_a_replay_answers_but_keeps_the_saved_result(client, control) -> None:
    """Outcome rules need a new effect; response rules apply to replays too."""
    first = await pay(client, key="k")
    await set_faults(
        control,
        {"operation": "create_payment", "action": "decline"},
        {"operation": "create_payment", "action": "error_500_after_effect", "nth": 2},
    )
    assert (await pay(client, key="k")).content == first.content
    assert (await pay(client, key="k")).status_code == 500
    assert (await pay(client, key="k")).content == first.content
