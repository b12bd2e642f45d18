"""``paygate campaign``: start the fleet, drive the load in waves with CardCo faults and the
seeded disruptions, settle, check, report (issue 12).

The load runs in waves of about ``WAVE_CHECKOUTS`` checkouts (and the payouts that go with them),
each wave with its own CardCo fault rules: ``POST /_control/faults`` replaces the rule set and its
counters, so a wave's rules name only its own client references and the next wave's replace them
(a resend or a late lookup of an earlier wave meets a working CardCo). After the last wave the
campaign waits until nothing is moving (attempts resolved or escalated past their deadline,
payouts executed, outbox drained, CardCo's webhooks delivered), at most ``SETTLE_S``, then checks.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gateway.campaign import faults, invariants, schedule, snapshot
from gateway.campaign.client import Gateway
from gateway.campaign.fleet import Fleet
from gateway.campaign.load import Checkout, Load, Payout, checkouts, payouts
from gateway.campaign.report import Result, table

WAVE_CHECKOUTS = 25
# The longest wait the configured deadlines allow: a payout grant window (60 s) after the last
# wave, plus the time a lapsed attempt needs to be found and escalated.
SETTLE_S = 90.0
QUIET_CHECKS = 2
REDELIVERIES_PER_WAVE = 2
P_PAYOUT_RETURN = 0.3


@dataclass(frozen=True)
class Options:
    seed: int
    checkouts: int
    payouts: int
    data_dir: Path | None
    json_path: Path | None


class Progress:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f}s] {text}", flush=True)


def run(options: Options) -> int:
    progress = Progress()
    own_dir = options.data_dir is None
    if options.data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="paygate-campaign-"))
    else:
        data_dir = options.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        if any(data_dir.iterdir()):
            print(f"paygate: --data-dir {data_dir} is not empty; a campaign needs a fresh one", file=sys.stderr)
            return 2
    progress(f"seed {options.seed}: starting PostgreSQL, Valkey and the fleet in {data_dir}")
    fleet = Fleet.start(data_dir, lambda text: progress(f"supervisor: {text}"))
    try:
        progress(f"fleet up: web {', '.join(fleet.web_urls)}; CardCo {fleet.document['provider_url']}")
        result = asyncio.run(_campaign(options, fleet, progress))
    finally:
        fleet.stop()
    print(table(result), flush=True)
    if options.json_path is not None:
        options.json_path.write_text(json.dumps(result.document(), indent=2) + "\n")
    if result.failed:
        print(f"paygate: logs of every process are in {data_dir / 'logs'}", file=sys.stderr)
    elif own_dir:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 1 if result.failed else 0


async def _campaign(options: Options, fleet: Fleet, progress: Progress) -> Result:
    doc = fleet.document
    async with httpx.AsyncClient(timeout=httpx.Timeout(15.0, connect=2.0),
                                 limits=httpx.Limits(max_connections=64)) as http, \
            httpx.AsyncClient(timeout=10.0) as cardco:
        gateway = Gateway(http, fleet.web_urls, doc["tokens"])
        load = Load(gateway, cardco, doc)
        refunds = await load.setup()
        rng = random.Random(options.seed)
        # What CardCo does on its own depends on what it delivered so far: its own stream, so the
        # timing of one run never shifts the next wave's choices.
        provider_rng = random.Random(f"provider:{options.seed}")
        tag = f"{options.seed}x{int(time.time()) % 100_000}"
        accounts = [a["id"] for a in doc["provider_accounts"]]
        all_checkouts = checkouts(rng, tag, options.checkouts, accounts, refunds)
        all_payouts = payouts(rng, tag, options.payouts)
        waves = max(schedule.MIN_WAVES, math.ceil(options.checkouts / WAVE_CHECKOUTS))
        plan = schedule.plan(options.seed, waves)
        fault_counts: Counter[str] = Counter()
        progress(f"{waves} waves; refunds {'on' if refunds else 'off (no POST /v1/orders/{id}/refund)'}; "
                 f"disruptions: {', '.join(f'{d.action}@{d.wave}' for d in plan)}")
        for wave in range(waves):
            mine = _share(all_checkouts, wave, waves), _share(all_payouts, wave, waves)
            rules = _rules(rng, *mine)
            fault_counts.update(faults.kind(rule) for rule in rules)
            await cardco.post(f"{doc['control_url']}/faults", json={"rules": rules})
            disruptions = [_disrupt(d, fleet, gateway, progress) for d in plan if d.wave == wave]
            outcomes = await asyncio.gather(*(load.checkout(c) for c in mine[0]), *(load.payout(p) for p in mine[1]),
                                            *disruptions, return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    load.operations["client-error"] += 1
                    progress(f"client error: {type(outcome).__name__}: {outcome}")
            fault_counts.update(await _provider_events(cardco, doc["control_url"], provider_rng))
            progress(f"wave {wave + 1}/{waves} done: kills {dict(fleet.kills)}, restarts {dict(fleet.restarts)}")
        await cardco.post(f"{doc['control_url']}/faults", json={"rules": []})
        await _settle(fleet, cardco, progress)
        observed = await snapshot.read(cardco, doc["control_url"], doc["merchant_sink_url"], fleet.database_url,
                                       frozenset(load.cancelled))
    notes = {**gateway.counts, "sink-redeliveries": invariants.sink_redeliveries(observed)}
    return Result(seed=options.seed, checkouts=options.checkouts, payouts=options.payouts,
                  operations=load.operations, faults=fault_counts, kills=fleet.kills, restarts=fleet.restarts,
                  violations=invariants.check(observed), wall_s=time.monotonic() - progress.started, notes=notes)


def _share(items: list[Any], wave: int, waves: int) -> list[Any]:
    return items[len(items) * wave // waves: len(items) * (wave + 1) // waves]


def _rules(rng: random.Random, wave_checkouts: list[Checkout], wave_payouts: list[Payout]) -> list[faults.Rule]:
    rules = []
    for c in wave_checkouts:
        rules += faults.choose(rng, "payment", c.reference)
        if c.kind in ("refund", "cancel-race"):  # a merchant's refund, or one a late payment is owed
            rules += faults.choose(rng, "refund", f"{c.order_id}-r1")
    for p in wave_payouts:
        rules += faults.choose(rng, "payout", p.reference)
        if p.kind == "recall":
            rules += faults.choose(rng, "recall", f"{p.payout_id}-r1")
    return rules


async def _provider_events(cardco: httpx.AsyncClient, control_url: str, rng: random.Random) -> Counter[str]:
    """What a provider does on its own between requests: send an old event again (same event id,
    new delivery) and, now and then, report a paid payout returned by the bank."""
    done: Counter[str] = Counter()
    delivered = sorted({d["event_id"] for d in (await cardco.get(f"{control_url}/webhooks")).json()["deliveries"]
                        if d["state"] == "delivered"})
    for event_id in rng.sample(delivered, min(REDELIVERIES_PER_WAVE, len(delivered))):
        await cardco.post(f"{control_url}/webhooks/redeliver/{event_id}")
        done["webhook:redeliver"] += 1
    paid = sorted(p["id"] for p in (await cardco.get(f"{control_url}/ledger")).json()["payouts"]
                  if p["status"] == "paid")
    if paid and rng.random() < P_PAYOUT_RETURN:
        await cardco.post(f"{control_url}/payouts/{rng.choice(paid)}/return")
        done["payout:return"] += 1
    return done


async def _disrupt(d: schedule.Disruption, fleet: Fleet, gateway: Gateway, progress: Progress) -> None:
    await asyncio.sleep(d.delay_s)
    if d.action == "kill-web":
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5.0
        while not gateway.busy(d.target) and loop.time() < deadline:
            await asyncio.sleep(0.005)
        busy = gateway.busy(d.target)
        fleet.kill("web", d.target)
        progress(f"SIGKILL web.{d.target} ({'mid-request' if busy else 'idle'})")
    elif d.action == "kill-worker":
        fleet.kill("worker", d.target)
        progress(f"SIGKILL worker.{d.target}")
    elif d.action == "kill-clock":
        fleet.kill("clock")
        progress("SIGKILL clock")
    elif d.action == "restart-postgres":
        progress("restarting PostgreSQL (fast shutdown, start)")
        restarted = await asyncio.to_thread(fleet.restart, "postgres")
        progress("PostgreSQL is back" if restarted else "DATABASE_URL is not ours: PostgreSQL not restarted")
    else:
        progress("restarting Valkey, losing its data")
        restarted = await asyncio.to_thread(fleet.restart, "broker")
        progress("Valkey is back, empty" if restarted else "REDIS_URL is not ours: the broker not restarted")


async def _settle(fleet: Fleet, cardco: httpx.AsyncClient, progress: Progress) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    quiet = 0
    while loop.time() < deadline:
        moving = await asyncio.to_thread(snapshot.moving, fleet.database_url)
        pending = await snapshot.pending_webhooks(cardco, fleet.document["control_url"])
        quiet = quiet + 1 if moving == pending == 0 else 0
        if quiet >= QUIET_CHECKS:
            progress("settled: nothing is moving")
            return
        progress(f"settling: {moving} attempts, payouts or outbox rows moving, {pending} webhooks pending")
        await asyncio.sleep(3.0)
    progress(f"settle deadline ({SETTLE_S:.0f} s) reached; checking what is there")
