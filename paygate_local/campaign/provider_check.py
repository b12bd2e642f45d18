"""The campaign's last check: provider-side reconciliation over the whole run (docs/decisions/0071).

After the settle and the snapshot the invariants judge, three things are done at CardCo behind the
gateway's back, one of each finding a person must hear about: a payment made through CardCo's API
directly (an orphan), an old succeeded payment's amount amended through the control API (a
disagreement), another one forgotten by CardCo (a missing object; old enough that the listing
delay and the send slack have passed). Then an operator starts one reconciliation run per
provider account over the whole campaign window (``POST /v1/ops/reconciliation/runs``), the
fleet's workers execute them, and the runs must find exactly those three: every other object the
provider holds matched to an attempt (or evidence applied), no other orphan, disagreement or
missing object. What does not hold is a failed step of the run, judged with the invariants.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from paygate_local.campaign.client import Gateway

FORGED = ("orphan", "disagreement", "missing")
RUN_TIMEOUT_S = 120.0
# Older than the send slack (60 s) and the listing delay: a run may call it missing. The check waits
# until the forgotten payment is that old (a short run's oldest payment may be younger).
MISSING_AGE_S = 75.0


async def check(gateway: Gateway, cardco: httpx.AsyncClient, doc: dict[str, Any], window_from: datetime,
                tag: str, progress: Callable[[str], None]) -> tuple[list[str], dict[str, int]]:
    """The failed steps (empty when the runs found exactly what was forged) and what was counted."""
    failures: list[str] = []
    try:
        forged = await _forge(cardco, doc, tag)
    except (httpx.HTTPError, LookupError) as error:
        return [f"reconciliation: could not forge its findings: {type(error).__name__}: {error}"], {}
    progress(f"reconciliation: forged {', '.join(f'{k} {v}' for k, v in forged.items() if k != 'ready_at')}")
    await asyncio.sleep(max(0.0, (forged.pop("ready_at") - datetime.now(UTC)).total_seconds()))
    window_to = datetime.now(UTC) + timedelta(seconds=1)
    found: dict[str, str] = {}
    counts: dict[str, int] = {}
    for account in (a["id"] for a in doc["provider_accounts"]):
        run, failure = await _run(gateway, account, window_from, window_to)
        if failure:
            failures.append(f"reconciliation of {account}: {failure}")
            continue
        for name, value in run["counts"].items():
            counts[f"reconciliation-{name}"] = counts.get(f"reconciliation-{name}", 0) + value
        found |= {f["provider_object_id"]: f["class"] for f in run["findings"] if f["class"] in FORGED}
    expected = {object_id: name for name, object_id in forged.items()}
    for object_id, name in sorted(found.items()):
        if expected.get(object_id) != name:
            failures.append(f"reconciliation found {name} {object_id}, which the campaign did not forge")
    for object_id, name in sorted(expected.items()):
        if found.get(object_id) != name:
            failures.append(f"reconciliation missed the forged {name} {object_id}")
    progress(f"reconciliation: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}; "
             f"{'exactly the forged findings' if not failures else f'{len(failures)} problem(s)'}")
    return failures, counts


async def _forge(cardco: httpx.AsyncClient, doc: dict[str, Any], tag: str) -> dict[str, Any]:
    """One orphan, one disagreement, one missing object on the first CardCo account: their ids,
    and ``ready_at``, when the missing one is old enough to be called missing."""
    [account] = [a for a in doc["provider_accounts"] if a["id"].startswith("cardco:")][:1]
    control = doc["control_url"]
    ledger = (await cardco.get(f"{control}/ledger")).json()["payments"]
    succeeded = sorted((p for p in ledger if p["account"] == account["id"] and p["status"] == "succeeded"),
                       key=lambda p: p["created_at"])
    if len(succeeded) < 2:
        raise LookupError("fewer than two succeeded payments to amend and forget")
    made = await cardco.post(f"{doc['provider_url']}/v1/payments", json={
        "amount_minor": 1234, "currency": "EUR", "payment_method": "pm_card_visa",
        "client_reference": f"OUTSIDE-{tag}"}, headers={
        "Authorization": f"Bearer {account['api_key']}", "CardCo-Account": account["id"],
        "Idempotency-Key": f"outside-{tag}"})
    made.raise_for_status()
    await _visible(cardco, doc["provider_url"], account, f"OUTSIDE-{tag}")
    amended, forgotten = succeeded[0]["id"], succeeded[1]["id"]
    (await cardco.post(f"{control}/objects/{amended}/amend",
                       json={"amount_minor": succeeded[0]["amount_minor"] + 1})).raise_for_status()
    (await cardco.post(f"{control}/objects/{forgotten}/forget")).raise_for_status()
    ready_at = datetime.fromisoformat(succeeded[1]["created_at"]) + timedelta(seconds=MISSING_AGE_S)
    return {"orphan": made.json()["id"], "disagreement": amended, "missing": forgotten, "ready_at": ready_at}


async def _visible(cardco: httpx.AsyncClient, provider_url: str, account: dict[str, Any], reference: str) -> None:
    """Wait until CardCo's lookups show the new payment (its listing lags by its visibility delay,
    and a run lists only what it can see)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RUN_TIMEOUT_S
    while loop.time() < deadline:
        listed = await cardco.get(f"{provider_url}/v1/payments", params={"client_reference": reference}, headers={
            "Authorization": f"Bearer {account['api_key']}", "CardCo-Account": account["id"]})
        if listed.status_code == 200 and listed.json()["data"]:
            return
        await asyncio.sleep(1.0)
    raise LookupError(f"CardCo never listed the payment made outside ({reference})")


async def _run(gateway: Gateway, account: str, window_from: datetime,
               window_to: datetime) -> tuple[dict[str, Any], str | None]:
    """Start a run as the operator and wait for the fleet to finish it: the run, or why not."""
    started = await gateway.call("POST", "/v1/ops/reconciliation/runs", "operator", {
        "provider_account": account, "from": window_from.isoformat(), "to": window_to.isoformat()})
    if started is None or started.status_code != 202:
        return {}, f"start answered {None if started is None else started.status_code}"
    run_id = started.json()["run_id"]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + RUN_TIMEOUT_S
    while loop.time() < deadline:
        shown = await gateway.call("GET", f"/v1/ops/reconciliation/runs/{run_id}", "operator")
        if shown is not None and shown.status_code == 200 and shown.json()["state"] != "Running":
            run: dict[str, Any] = shown.json()
            return run, None if run["state"] == "Finished" else f"run {run_id} {run['state']}: {run['failure']}"
        await asyncio.sleep(2.0)
    return {}, f"run {run_id} not finished within {RUN_TIMEOUT_S:.0f} s"
