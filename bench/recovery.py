"""Benchmark: attempts reconciled per second by the recovery loop (bench/README.md).

    python bench/recovery.py [--attempts 10000] [--workers 1 4] [--duration 10]

For each worker count, a fresh backlog of ``--attempts`` Unknown checkout attempts, all due now,
is prepared in an embedded PostgreSQL the way the checkout leaves them (order, attempt, and the
send_intent, send_result and transition of a first send whose answer was lost), and CardCo (its
own uvicorn server on loopback, answering at once) takes each attempt's stored request under its
key, so it holds a succeeded payment for every client reference. Then that many worker processes,
each a ``Recovery`` with its own pool and HTTP client, sweep until nothing is due (at most 60 s):
every pass claims a lease, looks the payment up by client reference, verifies it and records
Succeeded with its confirmation row. Ceilings, in the same run with the same number of clients:
- pgbench running the SQL of one pass (bench/pgbench_scripts.py ``recovery``, generated from the
  product's named SQL) for ``--duration`` seconds;
- CardCo's lookup rate: the same processes and payment client, looking up without the database.

``--lookup-rate R`` (docs/decisions/0042) configures the account's
``lookup_rate_per_s`` (burst ``--lookup-burst``, default one second's worth) and prints, per run, the
configured rate against the achieved one: CardCo's lookups of the backlog per second of the run,
the most it received in any one second, and the ``R x seconds + burst`` they may not exceed. Without
it the account's rate is the largest the settings accept, so the loop itself is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pgbench_scripts  # noqa: E402
from bench.support import (  # noqa: E402
    ACCOUNT,
    SERVER_PIDS,
    WireCounter,
    cpu_seconds,
    embedded_database,
    in_processes,
    insert_orders,
    progress,
    run_sql,
    uvicorn,
)
from gateway.clock import SystemClock  # noqa: E402
from gateway.logs import configure_logging  # noqa: E402
from gateway.outbound import outbound_client  # noqa: E402
from gateway.payments.attempts import Attempts  # noqa: E402
from gateway.payments.client import PaymentClient  # noqa: E402
from gateway.recovery.loop import DEFERRED, Recovery  # noqa: E402
from gateway.settings import Settings, build_settings  # noqa: E402
from gateway.store.db import Database  # noqa: E402

API_KEY = "ck_bench"
BATCH = 100  # jobs/recovery.py's BATCH (importing jobs needs a broker): attempts listed per sweep
MAX_RUN_S = 60
MAX_CEILING_S = 20
SEED_CONCURRENCY = 32
WIRE_COUNT = 200  # attempts reconciled through the wire counter
UNLIMITED = (100_000.0, 1_000_000)  # the largest lookup rate and burst the settings accept
IDLE_S = 0.05  # a worker whose sweep could only defer waits this long (the clock's tick, shortened)

# What Checkout leaves when the first send's answer is lost: Started -> Unknown with the send's
# intent and result, the escalation deadline stamped (key window 24 h minus the 1 h margin), and
# next_check_at moved to now so the whole backlog is due at once.
_BACKLOG = """
INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account, endpoint,
                              api_version, client_reference, idempotency_key, request_body, amount_minor, currency,
                              state, outcome_reason, created_at, first_sent_at, escalation_deadline, next_check_at,
                              version)
SELECT md5(%(prefix)s || g)::uuid, %(prefix)s || g, 'cus_bench', 1, %(account)s, %(endpoint)s, '2026-11-01',
       %(prefix)s || g || '-a1', gen_random_uuid()::text,
       '{"amount_minor":4250,"currency":"EUR","payment_method":"pm_card_visa","client_reference":"'
           || %(prefix)s || g || '-a1"}',
       4250, 'EUR', 'Unknown', 'provider.no-response.caller', now() - interval '5 min', now() - interval '5 min',
       now() + interval '23 hours', now(), 2
  FROM generate_series(1, %(count)s) g;
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
SELECT md5(%(prefix)s || g)::uuid, now() - interval '5 min', 'send_intent', 'endpoint',
       jsonb_build_object('endpoint', %(endpoint)s::text, 'api_version', '2026-11-01',
                          'provider_account', %(account)s::text, 'send', 'first')
  FROM generate_series(1, %(count)s) g;
INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, detail)
SELECT md5(%(prefix)s || g)::uuid, now() - interval '5 min', kind, 'endpoint', detail
  FROM generate_series(1, %(count)s) g,
       (VALUES (1, 'send_result', jsonb_build_object('finding', 'unknown', 'reason', 'provider.no-response.caller',
                                                     'provider_account', %(account)s::text, 'decision', 'Unknown')),
               (2, 'transition', '{"from": "Started", "to": "Unknown", "reason": "provider.no-response.caller"}'))
           AS later (position, kind, detail)
 ORDER BY g, position
"""

_PARK = """
UPDATE payment_attempts SET next_check_at = now() + interval '1 day'
 WHERE order_id LIKE %(like)s AND state IN ('NotStarted', 'Started', 'Unknown')
"""


def settings_for(url: str, cardco: str, concurrency: int = 1, limit: tuple[float, int] = UNLIMITED) -> Settings:
    return build_settings({
        "database_url": url, "redis_url": "redis://127.0.0.1:1/0", "token_pepper": "bench", "log_level": "warning",
        "recovery_concurrency": concurrency, "lookup_rate_per_s": limit[0], "lookup_burst": limit[1],
        "provider_accounts": [{"id": ACCOUNT, "base_url": cardco, "api_key": API_KEY,
                               "webhook_endpoint_id": "cardco-test"}]})


def insert_backlog(url: str, cardco: str, prefix: str, count: int) -> None:
    """``count`` Unknown attempts ``<prefix><n>`` (attempt_id md5 of that), due now."""
    insert_orders(url, prefix, count)
    run_sql(url, _BACKLOG, {"prefix": prefix, "count": count, "account": ACCOUNT,
                            "endpoint": f"{cardco}/v1/payments"})


def prepare_backlog(url: str, cardco: str, prefix: str, count: int) -> None:
    """The backlog, and CardCo holding a succeeded payment for each of its attempts."""
    insert_backlog(url, cardco, prefix, count)
    with psycopg.connect(url) as conn:
        sends = conn.execute("SELECT idempotency_key, request_body FROM payment_attempts WHERE order_id LIKE %s",
                             (f"{prefix}%",)).fetchall()
    asyncio.run(_take_payments(cardco, sends))


async def _take_payments(cardco: str, sends: list[tuple[str, str]]) -> None:
    pending = iter(sends)
    headers = {"Authorization": f"Bearer {API_KEY}", "CardCo-Account": ACCOUNT, "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=cardco, headers=headers) as http:
        async def sender() -> None:
            for key, body in pending:
                response = await http.post("/v1/payments", content=body, headers={"Idempotency-Key": key})
                response.raise_for_status()

        await asyncio.gather(*(sender() for _ in range(SEED_CONCURRENCY)))


async def reconcile(index: int, url: str, cardco: str, concurrency: int, limit: tuple[float, int],
                    profile: Path | None, start: Callable[[], None]) -> dict[str, Any]:
    """One worker process: sweep until nothing is due (or MAX_RUN_S); a sweep that could only defer
    (the account's lookup tokens spent) is followed by a short wait, as the clock's tick would.
    With ``profile``, the sweeps run under cProfile with a CPU timer, dumped to ``<profile>-<index>.prof``."""
    configure_logging("json", "warning")
    settings = settings_for(url, cardco, concurrency, limit)
    clock = SystemClock()
    db = await Database.open(url, size=max(2, concurrency), name=f"bench-recovery-{index}")
    outcomes: Counter[str] = Counter()
    async with outbound_client() as http:  # the jobs runtime's client (aiohttp, docs/decisions/0077)
        recovery = Recovery(settings, clock, db, Attempts(db, clock, settings), PaymentClient(settings, clock, http))
        profiler = cProfile.Profile(time.process_time) if profile else None
        start()
        began, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        while time.perf_counter() - began < MAX_RUN_S:
            report = await recovery.sweep(BATCH)
            if not report.outcomes:
                break
            outcomes.update(report.outcomes)
            if set(report.outcomes) == {DEFERRED}:
                await asyncio.sleep(IDLE_S)
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        if profiler and profile:
            profiler.disable()
            profiler.dump_stats(f"{profile}-{index}.prof")
    await db.close()
    return {"seconds": seconds, "outcomes": outcomes, "cpu": cpu}


async def look_up(index: int, url: str, cardco: str, references: list[str], duration: float, concurrency: int,
                  start: Callable[[], None]) -> dict[str, Any]:
    """One ceiling process: the same payment client's lookups, ``concurrency`` in flight (as many as
    a worker's passes), each one after another, no database."""
    settings = settings_for(url, cardco)
    async with outbound_client() as http:
        client = PaymentClient(settings, SystemClock(), http)
        start()
        done = 0
        began, cpu = time.perf_counter(), time.process_time()

        async def lookups(lane: int) -> None:
            nonlocal done
            n = lane
            while time.perf_counter() - began < duration:
                reference = references[(index * concurrency + n) % len(references)]
                found = await client.find_payment(ACCOUNT, client_reference=reference)
                if found.payment is None:
                    raise RuntimeError(f"the ceiling's lookup found nothing: {found}")
                done += 1
                n += concurrency

        await asyncio.gather(*(lookups(lane) for lane in range(concurrency)))
        return {"seconds": time.perf_counter() - began, "lookups": done, "cpu": time.process_time() - cpu}


def wire_trips(url: str, cardco: str, count: int) -> float:
    """Round trips per reconciled attempt as PostgreSQL sees them (bench/support.py WireCounter):
    one worker, one pass at a time, ``count`` attempts."""
    prefix = "W-"
    prepare_backlog(url, cardco, prefix, count)
    with WireCounter(url) as counter:
        results = in_processes(reconcile, 1, counter.url, cardco, 1, UNLIMITED, None)
        trips, _ = counter.count()
    run_sql(url, _PARK, {"like": f"{prefix}%"})
    return trips / max(1, results[0]["outcomes"]["found:succeeded->Succeeded"])


def postgres_cpu(url: str) -> float:
    """CPU seconds the embedded PostgreSQL has used so far: the postmaster, its live backends and
    the ones that have exited (the postmaster's children's times, /proc/<pid>/stat)."""
    data = Path(parse_qs(urlsplit(url).query)["host"][0])
    master = int((data / "postmaster.pid").read_text().split()[0])
    fields = Path(f"/proc/{master}/stat").read_text().rsplit(")", 1)[1].split()
    total = cpu_seconds(master) + (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == master:
                total += cpu_seconds(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue  # a backend that exited meanwhile is in the postmaster's children's times
    return total


class CpuMeter:
    """CPU seconds of CardCo's server and PostgreSQL over a stretch of the run (the workers count
    their own): CPU per pass is what a busy, shared machine changes least (bench/README.md)."""

    def __init__(self, url: str, cardco: str) -> None:
        self._url, self._cardco = url, SERVER_PIDS[cardco]
        self._start = self._now()

    def _now(self) -> tuple[float, float]:
        return cpu_seconds(self._cardco), postgres_cpu(self._url)

    def used(self) -> tuple[float, float]:
        now = self._now()
        return now[0] - self._start[0], now[1] - self._start[1]


def check_resolved(url: str, prefix: str, count: int) -> str | None:
    """None if every attempt of the backlog is Succeeded, its order Paid and its confirmation
    queued once; else what is wrong."""
    with psycopg.connect(url) as conn:
        row = conn.execute("""
            SELECT count(*) FILTER (WHERE a.state = 'Succeeded'), count(*) FILTER (WHERE o.state = 'Paid'),
                   (SELECT count(*) FROM outbox_messages m WHERE m.dedup_key LIKE 'attempt:%%:order-confirmation'
                       AND m.attempt_id IN (SELECT attempt_id FROM payment_attempts WHERE order_id LIKE %(like)s))
              FROM payment_attempts a JOIN orders o USING (order_id) WHERE a.order_id LIKE %(like)s""",
                           {"like": f"{prefix}%"}).fetchone()
    if row != (count, count, count):
        return f"succeeded, paid, confirmations = {row}, expected {count} each"
    return None


def lookups_received(cardco: str, prefix: str) -> list[float]:
    """When CardCo received each lookup of the backlog ``prefix`` (its request log), in seconds."""
    log = httpx.get(f"{cardco}/_control/requests", timeout=60).json()["requests"]
    return sorted(datetime.fromisoformat(r["received_at"].replace("Z", "+00:00")).timestamp() for r in log
                  if r["method"] == "GET" and r["path"].startswith(f"/v1/payments?client_reference={prefix}"))


def busiest_second(times: list[float]) -> int:
    """The most lookups CardCo received within any one second."""
    most, first = 0, 0
    for last, moment in enumerate(times):
        while moment - times[first] >= 1.0:
            first += 1
        most = max(most, last - first + 1)
    return most


def run(url: str, cardco: str, workers: int, count: int, duration: int, concurrency: int,
        limit: tuple[float, int] | None, profile: Path | None = None) -> dict[str, Any]:
    """One backlog run down by ``workers`` processes, then CardCo's lookup rate for as many."""
    prefix = f"R{workers}-"
    progress(f"preparing {count} Unknown attempts and their CardCo payments")
    prepare_backlog(url, cardco, prefix, count)
    pace = "" if limit is None else f", lookups at {limit[0]:g}/s (burst {limit[1]})"
    progress(f"{workers} recovery worker(s), {concurrency} pass(es) each at once{pace}, running the backlog down")
    meter = CpuMeter(url, cardco)
    # Profiled: every worker process of the run, one file each (bench/README.md, "Where the time goes").
    dump = profile / f"recovery-{workers}w" if profile else None
    results = in_processes(reconcile, workers, url, cardco, concurrency, limit or UNLIMITED, dump)
    cardco_cpu, postgres_cpu_s = meter.used()
    outcomes: Counter[str] = sum((r["outcomes"] for r in results), Counter())
    deferred = outcomes.pop(DEFERRED, 0)
    seconds = max(r["seconds"] for r in results)
    received = lookups_received(cardco, prefix)
    capped = seconds >= MAX_RUN_S
    problem = None if capped else check_resolved(url, prefix, count)
    # A run stopped at MAX_RUN_S leaves attempts due; the next run must not sweep them.
    run_sql(url, _PARK, {"like": f"{prefix}%"})
    references = [f"{prefix}{n}-a1" for n in range(1, count + 1)]
    progress(f"CardCo's lookup rate from {workers} process(es)")
    meter = CpuMeter(url, cardco)
    lookups = in_processes(look_up, workers, url, cardco, references, duration, concurrency)
    lookup_cardco_cpu, _ = meter.used()
    passes, looked_up = max(1, sum(outcomes.values())), max(1, sum(r["lookups"] for r in lookups))
    return {
        "workers": workers,
        "concurrency": concurrency,
        "reconciled": outcomes["found:succeeded->Succeeded"],
        "rate": outcomes["found:succeeded->Succeeded"] / seconds,
        "seconds": seconds,
        "passes": sum(outcomes.values()),
        "other": {k: v for k, v in outcomes.items() if k != "found:succeeded->Succeeded"},
        "problem": problem,
        "capped": capped,
        "lookup_rate": None if limit is None else limit[0],
        "lookup_burst": None if limit is None else limit[1],
        "lookups": len(received),
        "achieved_lookup_rate": len(received) / seconds,
        # What the rate alone allowed: the lookups beyond the first burst, per second of the run.
        "achieved_after_burst": (len(received) - (0 if limit is None else limit[1])) / seconds,
        # The share of the configured rate the loop achieved beyond the burst (None without a rate).
        "ratio_allowed": None if limit is None else (len(received) - limit[1]) / seconds / limit[0],
        "busiest_second": busiest_second(received),
        "deferred": deferred,
        "lookup_ceiling": sum(r["lookups"] for r in lookups) / max(r["seconds"] for r in lookups),
        # CPU microseconds per pass (worker processes, CardCo, PostgreSQL) and per lookup alone.
        "worker_cpu_us": 1e6 * sum(r["cpu"] for r in results) / passes,
        "cardco_cpu_us": 1e6 * cardco_cpu / passes,
        "postgres_cpu_us": 1e6 * postgres_cpu_s / passes,
        "lookup_worker_cpu_us": 1e6 * sum(r["cpu"] for r in lookups) / looked_up,
        "lookup_cardco_cpu_us": 1e6 * lookup_cardco_cpu / looked_up,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=10_000, help="Unknown attempts in each backlog")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--concurrency", type=int, default=8, help="passes each worker runs at once "
                        "(recovery_concurrency); CardCo's ceiling keeps as many lookups in flight")
    parser.add_argument("--duration", type=int, default=10, help=f"seconds per ceiling (at most {MAX_CEILING_S})")
    parser.add_argument("--lookup-rate", type=float, help="the account's lookup_rate_per_s (default: unlimited)")
    parser.add_argument("--lookup-burst", type=int, help="its lookup_burst (default: one second's worth, at least 3)")
    parser.add_argument("--json", type=Path, help="write the figures to this file (bench/README.md)")
    parser.add_argument("--profile", type=Path, help="directory for a cProfile (CPU timer) of each run's workers")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    limit = None if args.lookup_rate is None else (
        args.lookup_rate, args.lookup_burst or max(3, math.ceil(args.lookup_rate)))
    duration = min(args.duration, MAX_CEILING_S)
    configure_logging("json", "warning")
    with embedded_database() as (url, work):
        config = work / "cardco.json"
        config.write_text(json.dumps({"accounts": [{"id": ACCOUNT, "api_key": API_KEY}]}))
        with uvicorn(["provider_fake.app:app"], {"CARDCO_CONFIG": str(config)}) as cardco:
            progress("counting round trips on the wire")
            trips = wire_trips(url, cardco, WIRE_COUNT)
            rows = [run(url, cardco, workers, args.attempts, duration, args.concurrency, limit, args.profile)
                    for workers in args.workers]
            # Only now: pgbench's attempts stay due, and no worker may sweep them.
            insert_backlog(url, cardco, "PGB-", args.attempts)
            for row in rows:
                progress(f"pgbench, {row['workers'] * args.concurrency} client(s)")
                row["pgbench_tps"] = pgbench_scripts.ceiling(url, "recovery", work, row["workers"] * args.concurrency,
                                                             duration, args.attempts)
    for row in rows:
        row.update(round_trips=trips, ratio_lookup=row["rate"] / row["lookup_ceiling"],
                   ratio_pgbench=row["rate"] / row["pgbench_tps"])
    report(rows, args.attempts, duration)
    if args.json:
        args.json.write_text(json.dumps({"runs": rows}, indent=1) + "\n")


def report(rows: list[dict[str, Any]], count: int, duration: int) -> None:
    print(f"\nrecovery: Unknown attempts reconciled per second, backlogs of {count}, CardCo on loopback "
          f"(bench/README.md); ceilings over {duration} s\n")
    print(f"{'workers':>7} {'passes at once':>14} {'reconciled/s':>12} {'seconds':>7} {'trips/pass':>10} "
          f"{'pgbench tps':>11} {'ratio':>6} {'CardCo/s':>9} {'ratio':>6}")
    for row in rows:
        print(f"{row['workers']:>7} {row['concurrency']:>14} {row['rate']:>12.0f} {row['seconds']:>7.1f} "
              f"{row['round_trips']:>10.1f} {row['pgbench_tps']:>11.0f} {row['ratio_pgbench']:>6.2f} "
              f"{row['lookup_ceiling']:>9.0f} {row['ratio_lookup']:>6.2f}")
    if len(rows) > 1:
        print(f"  {rows[-1]['workers']} workers vs {rows[0]['workers']}: {rows[-1]['rate'] / rows[0]['rate']:.2f}x")
    for row in rows:
        print(f"  {row['workers']} worker(s), CPU us per pass: workers {row['worker_cpu_us']:.0f}, CardCo "
              f"{row['cardco_cpu_us']:.0f}, PostgreSQL {row['postgres_cpu_us']:.0f}; per lookup alone: "
              f"client {row['lookup_worker_cpu_us']:.0f}, CardCo {row['lookup_cardco_cpu_us']:.0f}")
    for row in rows:
        if row["lookup_rate"] is not None:
            allowed = row["lookup_rate"] * row["seconds"] + row["lookup_burst"]
            print(f"  {row['workers']} worker(s): lookup rate configured {row['lookup_rate']:g}/s (burst "
                  f"{row['lookup_burst']}), achieved {row['achieved_lookup_rate']:.1f}/s "
                  f"({row['achieved_after_burst']:.1f}/s beyond the burst, {row['ratio_allowed']:.2f} of the rate): "
                  f"{row['lookups']} lookups in "
                  f"{row['seconds']:.1f} s (rate x seconds + burst = {allowed:.0f}), at most "
                  f"{row['busiest_second']} in any one second; {row['deferred']} passes deferred")
        if row["other"]:
            print(f"  {row['workers']} worker(s), other outcomes: {row['other']}")
        if row["capped"]:
            print(f"  {row['workers']} worker(s): stopped after {MAX_RUN_S} s with {row['reconciled']} reconciled")
        if row["problem"]:
            print(f"  {row['workers']} worker(s), NOT RESOLVED: {row['problem']}")


if __name__ == "__main__":
    main()
