"""``paygate campaign``: start the fleet, drive the load in waves with CardCo faults and the
seeded disruptions, settle, check, report.

The load runs in waves of about ``WAVE_CHECKOUTS`` checkouts (and the payouts that go with them),
each wave with its own CardCo fault rules: ``POST /_control/faults`` replaces the rule set and its
counters, so a wave's rules name only its own client references and the next wave's replace them
(a resend or a late lookup of an earlier wave meets a working CardCo). After the last wave the
campaign waits until nothing is moving (attempts resolved or escalated past their deadline,
payouts executed, outbox drained, CardCo's webhooks delivered), at most ``SETTLE_S``, then checks.

What the run itself saw is evidence too: a fault-rule install CardCo refused, a
disruption or a client scenario that raised, a 5xx the gateway answered outside an injected
outage, a settle that reached its deadline (with what was still moving), a process not alive or
not ready at the end, fewer scenarios reaching an outcome than were asked for: each is a
violation in the snapshot, so the command exits non-zero.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from paygate_local.campaign import faults, invariants, provider_check, schedule, snapshot
from paygate_local.campaign.client import Gateway
from paygate_local.campaign.disruptions import Disruptions
from paygate_local.campaign.fleet import Fleet
from paygate_local.campaign.load import Checkout, Load, Payout, checkouts, payouts
from paygate_local.campaign.report import Result, escalations, faults_fired, outcomes, table

WAVE_CHECKOUTS = 25
# The longest wait the configured deadlines allow: a payout grant window (60 s) after the last
# wave, plus the time a lapsed attempt needs to be found and escalated.
SETTLE_S = 90.0
QUIET_CHECKS = 2
REDELIVERIES_PER_WAVE = 2
P_PAYOUT_RETURN = 0.3
# After a server is back, how long the web processes may take to reconnect before a 5xx they
# answer counts as unexpected (their pools notice a dead connection on its next use).
RECONNECT_GRACE_S = 5.0
# A web process is ready at the end if one of a few probes a second apart says so (a readiness
# probe's first use of a pooled connection the restarted broker closed fails once).
READY_PROBES = 3
READY_PROBE_INTERVAL_S = 1.0
# CardCo's control API lists everything it holds (every delivery of the run with its body): on 2
# loaded cores one listing late in a run has taken over 10 s.
CONTROL_TIMEOUT_S = 30.0


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
        result = asyncio.run(_campaign(options, fleet, progress, data_dir / "logs"))
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


async def _campaign(options: Options, fleet: Fleet, progress: Progress, logs: Path) -> Result:
    doc = fleet.document
    window_from = datetime.now(UTC) - timedelta(minutes=5)  # the whole run, for the reconciliation at the end
    async with httpx.AsyncClient(timeout=httpx.Timeout(15.0, connect=2.0),
                                 limits=httpx.Limits(max_connections=64)) as http, \
            httpx.AsyncClient(timeout=CONTROL_TIMEOUT_S) as cardco:
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
        disruptions = Disruptions(plan, fleet, gateway, progress)
        fault_counts: Counter[str] = Counter()
        failed_steps: list[str] = []
        progress(f"{waves} waves; refunds {'on' if refunds else 'off (no POST /v1/orders/{id}/refund)'}; "
                 f"disruptions: {', '.join(f'{d.action}@{d.wave + 1}' for d in plan)}")
        for wave in range(waves):
            mine = _share(all_checkouts, wave, waves), _share(all_payouts, wave, waves)
            rules = disruptions.rules(wave, _rules(rng, *mine), mine[1])
            fault_counts.update(faults.kind(rule) for rule in rules)
            await disruptions.install(cardco, doc["control_url"], rules, wave)
            done = await asyncio.gather(*(load.checkout(c) for c in mine[0]), *(load.payout(p) for p in mine[1]),
                                        *disruptions.of_wave(wave), return_exceptions=True)
            for outcome in done:
                if isinstance(outcome, BaseException):
                    load.operations["client-error"] += 1
                    failed_steps.append(f"wave {wave + 1}: {type(outcome).__name__}: {outcome}")
                    progress(f"client or disruption error: {type(outcome).__name__}: {outcome}")
            try:
                fault_counts.update(await _provider_events(cardco, doc["control_url"], provider_rng))
            except httpx.HTTPError as error:  # judged with the invariants as a failed step, not a crash
                failed_steps.append(f"wave {wave + 1}: CardCo's own events: {type(error).__name__}: {error}")
                progress(f"CardCo's own events failed: {type(error).__name__}: {error}")
            progress(f"wave {wave + 1}/{waves} done: kills {dict(fleet.kills)}, restarts {dict(fleet.restarts)}, "
                     f"pauses {dict(disruptions.pauses)}")
        await disruptions.finish()
        await disruptions.install(cardco, doc["control_url"], [], None)
        failed_steps += disruptions.failures
        still_moving = await _settle(fleet, cardco, progress)
        observed = await snapshot.read(cardco, doc, fleet.database_url, logs,
                                       dict(load.cancelled), dict(load.windows_open))
        # After the snapshot: what it forges at CardCo is not the run's and must not meet the invariants.
        reconciled, reconciliation = await provider_check.check(gateway, cardco, doc, window_from, tag, progress)
        failed_steps += reconciled
        observed = dataclasses.replace(
            observed, still_moving=still_moving, unhealthy=await _unhealthy(fleet, http),
            asked={"checkouts": options.checkouts, "payouts": options.payouts},
            made={"checkouts": load.made["checkout"], "payouts": load.made["payout"]},
            failed_steps=tuple(failed_steps), dead_letter_rounds=tuple(disruptions.dead_letter_rounds),
            unexpected_5xx=gateway.server_errors_outside(disruptions.windows, RECONNECT_GRACE_S))
    notes = {**gateway.counts, **disruptions.notes, **reconciliation,
             "sink-redeliveries": invariants.sink_redeliveries(observed)}
    return Result(seed=options.seed, checkouts=options.checkouts, payouts=options.payouts,
                  operations=load.operations, faults=fault_counts, kills=fleet.kills, restarts=fleet.restarts,
                  violations=invariants.check(observed), wall_s=time.monotonic() - progress.started, notes=notes,
                  faults_fired=faults_fired(observed),
                  outcomes=outcomes(observed, frozenset(c.order_id for c in all_checkouts),
                                    frozenset(p.payout_id for p in all_payouts)),
                  escalations=escalations(observed), pauses=disruptions.pauses, outages=disruptions.outages())


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


async def _settle(fleet: Fleet, cardco: httpx.AsyncClient, progress: Progress) -> tuple[str, ...]:
    """Wait until nothing is moving; what was still moving when the deadline came (empty if it
    settled)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    quiet = 0
    still: tuple[str, ...] = ()
    while loop.time() < deadline:
        moving = await asyncio.to_thread(snapshot.moving, fleet.database_url)
        pending = await snapshot.pending_webhooks(cardco, fleet.document["control_url"])
        still = tuple(f"{n} {what}" for what, n in moving.items()) + ((f"{pending} webhooks pending",)
                                                                      if pending else ())
        quiet = quiet + 1 if not still else 0
        if quiet >= QUIET_CHECKS:
            progress("settled: nothing is moving")
            return ()
        progress(f"settling: {', '.join(still) or 'quiet'}")
        await asyncio.sleep(3.0)
    progress(f"settle deadline ({SETTLE_S:.0f} s) reached: {', '.join(still)}")
    return still or ("settle deadline reached while quiet for too short a time",)


async def _unhealthy(fleet: Fleet, http: httpx.AsyncClient) -> tuple[str, ...]:
    """Every supervised process running and not stopped, every web process ready (``/readyz``)."""
    found = []
    for name in fleet.supervisor.names:
        pid = fleet.supervisor.pid(name)
        if pid is None or _stopped(pid):
            found.append(f"{name}: {'not running' if pid is None else 'stopped (SIGSTOP)'} at the end")
    for url in fleet.web_urls:
        answers: list[str] = []
        while len(answers) < READY_PROBES and "200" not in answers:
            answers.append(await _probe(http, f"{url}/readyz"))
        if "200" not in answers:
            found.append(f"{url}/readyz answered {', '.join(answers)} at the end")
    return tuple(found)


async def _probe(http: httpx.AsyncClient, url: str) -> str:
    """One readiness probe, as a load balancer makes it: the status, or the transport error."""
    try:
        answer = str((await http.get(url)).status_code)
    except httpx.HTTPError as error:
        answer = type(error).__name__
    if answer != "200":
        await asyncio.sleep(READY_PROBE_INTERVAL_S)
    return answer


def _stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state ``T`` in ``/proc/<pid>/stat``)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False
