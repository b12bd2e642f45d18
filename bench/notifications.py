"""Benchmark: verified notifications per second through the real gateway (bench/README.md).

    python bench/notifications.py [--duration 10] [--connections 16 64] [--events 100000]
                                  [--web-workers 1] [--json PATH] [--profile DIR]

An embedded PostgreSQL (paygate_local/servers.py) holds the schema and prepared Started attempts;
the gateway runs as the Procfile's ``web`` process (``python -m gateway.web``: uvicorn, uvloop,
httptools, no access log) with ``--web-workers`` worker processes (``web_workers``; 1 by default, as
the setting's default: docs/decisions/0084) on loopback; wrk
replays pre-signed Standard Webhooks requests (bench/replay.lua), so every request is a real,
verified CardCo ``payment.succeeded`` notification that resolves an attempt, queues its
confirmation and commits. Three mixes per sender count: ``unique``; ``duplicates``, every event
twice, the copy eight requests later; ``redeliveries``, 2,000 notifications recorded first, then
replayed over and over (every request a duplicate of a committed notification: what a web process
answers from the keys it saw committed, docs/decisions/0064; ``wrapped`` is large by design). Each
load runs ``--duration`` seconds (at most 20). Ceilings measured
in the same run, on the same database, with the same connection counts:
- pgbench running the notification transaction's statements (bench/pgbench_scripts.py
  ``notification``, generated from the product's named SQL); with ``--certified``, those of a
  certified notification (``notification_certified``: the certificate's too, each row used once),
  the record-less one's kept as ``pgbench_tps_without_record``;
- a bare Starlette POST (bench/bare_app.py) under uvicorn with as many workers and the same wrk script.
Before the load runs, round trips and statements per notification are counted on the wire
(bench/support.py WireCounter) and the gateway's CPU per request (all its worker processes) is read
from /proc during every run, and how the senders' connections are split between its worker processes
midway through it (``worker_connections``, docs/decisions/0081); ``--profile`` samples the gateway with
py-spy during each load run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

import httpx
import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pgbench_scripts  # noqa: E402
from bench.support import (  # noqa: E402
    ACCOUNT,
    BENCH,
    SERVER_PIDS,
    WireCounter,
    checkpoint_cycle,
    embedded_database,
    insert_orders,
    profiled,
    progress,
    run_sql,
    sampled_midway,
    tree_cpu_seconds,
    uvicorn,
    web,
    worker_connections,
)
from gateway.clock import SystemClock  # noqa: E402
from gateway.payments.attempts import Attempts  # noqa: E402
from gateway.settings import load_settings  # noqa: E402
from gateway.store.db import Database  # noqa: E402
from paygate_local.servers import free_port  # noqa: E402
from provider_fake.signing import sign_v1  # noqa: E402

ENDPOINT = "cardco-test"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
PGBENCH_ATTEMPTS = 10_000
# The certified ceiling's rows per second of --duration: each serves one transaction (pgbench -t),
# so a run takes about --duration where that ceiling runs ~3,000/s (on 2 cores; bench/README.md).
CERTIFIED_ROWS_PER_S = 3_000
MAX_DURATION_S = 20
WIRE_COUNT = 500  # notifications sent one at a time through the wire counter
REDELIVERED = 2_000  # notifications recorded before the redeliveries run, then replayed over and over
MIXES = ("unique", "duplicates", "redeliveries")

# How a benchmark's Started attempts get their effect records (prepare_attempts).
Records = Literal["none", "by_sql", "by_product"]

_ATTEMPTS = """
INSERT INTO payment_attempts (attempt_id, order_id, customer_id, attempt_number, provider_account, endpoint,
                              api_version, client_reference, idempotency_key, request_body, amount_minor, currency,
                              state, created_at, first_sent_at, escalation_deadline, next_check_at,
                              provider_payment_id)
SELECT gen_random_uuid(), %(prefix)s || g, 'cus_bench', 1, %(account)s, 'http://cardco.test/v1/payments',
       '2026-11-01', %(prefix)s || g || '-a1', gen_random_uuid()::text, '{}', 4250, 'EUR', 'Started', now(),
       now(), now() + interval '1 day', now() + interval '1 day',
       CASE WHEN %(with_payment_id)s THEN 'pay_' || lower(rtrim(%(prefix)s, '-')) || '_' || g END
  FROM generate_series(1, %(count)s) g
"""
# Each attempt's effect record and its ledger through EXECUTING, as a checkout's send gate leaves
# them (bench/pgbench_scripts.py executing_record, executing_rows).
_RECORDS = """
INSERT INTO effect_records (attempt_id, attempt_kind, rail, provider_account, idempotency_key, effect_digest,
                            policy_digest, approval_set_digest, manifest, created_at)
SELECT attempt_id, 'payment', split_part(provider_account, ':', 1), provider_account, idempotency_key,
       sha256(idempotency_key::bytea), NULL, NULL, %(manifest)s, now()
  FROM payment_attempts WHERE order_id LIKE %(prefix)s || '%%';
INSERT INTO effect_ledger (attempt_id, sequence, from_state, to_state, effect_digest, idempotency_key, occurred_at,
                           actor, detail)
SELECT r.attempt_id, s.sequence, s.from_state, s.to_state, r.effect_digest, r.idempotency_key, now(), 'endpoint',
       s.detail
  FROM payment_attempts a JOIN effect_records r USING (attempt_id),
       jsonb_to_recordset(%(entries)s::jsonb) AS s(sequence int, from_state text, to_state text, detail jsonb)
 WHERE a.order_id LIKE %(prefix)s || '%%'
"""


def prepare_attempts(url: str, prefix: str, count: int, *, with_payment_id: bool = False,
                     records: Records = "none") -> None:
    """``count`` Started attempts ``<prefix><n>`` with their Open orders, then the tables analysed,
    as autovacuum keeps a production database's statistics: without it a load run starts on a
    run's rows the planner has not seen (the table several times what its statistics say), and the
    gateway and pgbench run on plans made for the smaller table (bench/README.md, "Ingest on
    analysed tables"). ``records``: "none", inserted by SQL without an effect record, so a
    notification of their success writes no ledger row and no certificate; "by_sql", with their
    effect records at EXECUTING, also by SQL (the ``notification_certified`` ceiling's rows);
    "by_product", made and started by the product itself (:func:`start_attempts`), each with its
    effect record, as a checkout's attempts are."""
    insert_orders(url, prefix, count)
    if records == "by_product":
        asyncio.run(start_attempts(url, prefix, count))
    else:
        with psycopg.connect(url) as conn:
            conn.execute(_ATTEMPTS, {"account": ACCOUNT, "prefix": prefix, "count": count,
                                     "with_payment_id": with_payment_id})
    if records == "by_sql":
        run_sql(url, _RECORDS, {"prefix": prefix, "manifest": Jsonb(pgbench_scripts.executing_record()["manifest"]),
                                "entries": Jsonb(pgbench_scripts.executing_rows())})
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE orders, payment_attempts, effect_records, effect_ledger")


def records_for(certified: bool) -> Records:
    """``--certified``: attempts the product started, as production's are; else record-less."""
    return "by_product" if certified else "none"


async def start_attempts(url: str, prefix: str, count: int, *, writers: int = 4) -> None:
    """Attempts of the Open orders ``<prefix>1`` .. ``<prefix><count>`` made and started by the
    product's own code (``Attempts.get_or_create_live`` and ``mark_started``, as a checkout does
    before its provider call), ``writers`` at a time: each with its effect record and ledger through
    AUTHORIZATION_ISSUED (seed 001), so a notification of its success does what a real one does, the
    record's rows up to CERTIFIED and, with a signing key, its certificate."""
    db = await Database.open(url, size=writers)
    try:
        attempts = Attempts(db, SystemClock(), load_settings(gateway_env(url)))

        async def start(first: int) -> None:
            for n in range(first, count + 1, writers):
                await attempts.mark_started(await attempts.get_or_create_live(f"{prefix}{n}", "cus_bench"))

        await asyncio.gather(*(start(first) for first in range(1, writers + 1)))
    finally:
        await db.close()


def signed_lines(prefix: str, count: int, duplicate_mix: bool) -> list[str]:
    """Pre-signed requests for attempts ``<prefix><n>``; with the mix, every event is sent twice,
    the second copy eight requests after the first (some arrive while the first is in flight)."""
    timestamp = int(time.time())
    unique = count // 2 if duplicate_mix else count
    lines = []
    for n in range(1, unique + 1):
        body = json.dumps({"id": f"evt_{prefix}{n}", "type": "payment.succeeded", "created": "2026-11-29T16:00:05Z",
                           "data": {"object": {"object": "payment", "id": f"pay_{prefix}{n}",
                                               "client_reference": f"{prefix}{n}-a1", "amount_minor": 4250,
                                               "currency": "EUR", "status": "succeeded", "failure_code": None,
                                               "next_action": None, "sequence": 2}}}, separators=(",", ":"))
        msg_id = f"msg_{prefix}{n}"
        signature = sign_v1(SECRET, msg_id, timestamp, body.encode())
        lines.append(f"/v1/webhooks/{ENDPOINT}\t{msg_id}\t{timestamp}\t{signature}\t{body}")
    if not duplicate_mix:
        return lines
    mixed: list[str] = []
    for index, line in enumerate(lines):
        mixed.append(line)
        if index >= 8:
            mixed.append(lines[index - 8])
    return mixed + lines[-8:]


def wrk(base: str, requests_file: Path, connections: int, duration: int, threads: int = 2) -> dict[str, float]:
    output = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(BENCH / "replay.lua"),
         base],
        env={**os.environ, "REQUESTS_FILE": str(requests_file), "THREADS": str(threads)},
        capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    percentiles = {}
    for percent in (50, 90, 99):  # wrk --latency's distribution
        found = re.search(rf"\s{percent}%\s+([\d.]+)(us|ms|s)", output)
        percentiles[f"p{percent}_ms"] = float(found.group(1)) * scale[found.group(2)] if found else float("nan")
    return {"rps": rps, "non_2xx": float(non_2xx.group(1)) if non_2xx else 0.0, **percentiles,
            "wrapped": float(re.search(r"WRAPPED (\d+)", output).group(1))}  # type: ignore[union-attr]


def prime(base: str, lines: list[str]) -> None:
    """Deliver each pre-signed request once, one at a time: recorded before the redeliveries run."""
    with httpx.Client(base_url=base) as client:
        for line in lines:
            path, msg_id, timestamp, signature, body = line.split("\t")
            client.post(path, content=body, headers={
                "content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": timestamp,
                "webhook-signature": signature}).raise_for_status()


def gateway_env(url: str, *, signing: bool = False) -> dict[str, str]:
    """The gateway's environment; ``signing``: with a certificate signing key, as in production."""
    account = {"id": ACCOUNT, "base_url": "http://cardco.test", "api_key": "ck_bench", "webhook_endpoint_id": ENDPOINT,
               "webhook_secrets": [SECRET]}
    env = {"DATABASE_URL": url, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "PAYGATE_TOKEN_PEPPER": "bench",
           "PAYGATE_LOG_LEVEL": "warning", "PAYGATE_PROVIDER_ACCOUNTS": json.dumps([account])}
    if signing:
        key = {"key_id": "bench-1", "active": True, "private_key": base64.b64encode(secrets.token_bytes(32)).decode()}
        env["PAYGATE_CERTIFICATE_KEYS"] = json.dumps([key])
    return env


def wire_trips(url: str, count: int, workers: int, certified: bool = False) -> dict[str, float]:
    """Round trips and statements per notification as PostgreSQL sees them (bench/support.py
    WireCounter): a gateway whose database connection runs through the counting proxy takes
    ``count`` unique notifications one at a time, then the same ones again as duplicates."""
    prefix = "W-"
    prepare_attempts(url, prefix, count, records=records_for(certified))
    lines = [line.split("\t") for line in signed_lines(prefix, count, False)]
    figures: dict[str, float] = {}
    with WireCounter(url) as counter, \
            web(gateway_env(counter.url, signing=certified), workers) as base, \
            httpx.Client(base_url=base) as client:
        pid = SERVER_PIDS[base]
        for mix in ("unique", "duplicates"):
            trips, statements = counter.count()
            cpu_before = tree_cpu_seconds(pid)
            for path, msg_id, timestamp, signature, body in lines:
                response = client.post(path, content=body, headers={
                    "content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": timestamp,
                    "webhook-signature": signature})
                response.raise_for_status()
            after_trips, after_statements = counter.count()
            figures[f"{mix}_cpu_us"] = (tree_cpu_seconds(pid) - cpu_before) * 1e6 / count
            figures[f"{mix}_trips"] = (after_trips - trips) / count
            figures[f"{mix}_statements"] = (after_statements - statements) / count
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help=f"seconds per load run (at most {MAX_DURATION_S})")
    parser.add_argument("--connections", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--mixes", nargs="+", choices=MIXES, default=list(MIXES), help="which mixes to run")
    parser.add_argument("--events", type=int, default=100_000,
                        help="pre-signed requests per gateway run: more than it sends, else it wraps (NOT CLEAN)")
    parser.add_argument("--web-workers", type=int, default=1,
                        help="the gateway's web_workers (worker processes of its web process; docs/decisions/0084)")
    parser.add_argument("--certified", action="store_true",
                        help="notify attempts the product started (effect records; a signing key), as in production")
    parser.add_argument("--profile", type=Path, help="directory for py-spy profiles of the gateway's runs")
    parser.add_argument("--json", type=Path, help="write the figures to this file (bench/README.md)")
    args = parser.parse_args()
    duration = min(args.duration, MAX_DURATION_S)
    with embedded_database() as (url, work):
        prepare_attempts(url, "PGB-", PGBENCH_ATTEMPTS, with_payment_id=True)
        progress("counting round trips on the wire")
        trips = wire_trips(url, WIRE_COUNT, args.web_workers, args.certified)
        runs = []
        rows = [CERTIFIED_ROWS_PER_S * duration // connections * connections for connections in args.connections]
        if args.certified:
            progress(f"preparing {sum(rows)} attempts with effect records for the certified ceiling")
            prepare_attempts(url, "PGC-", sum(rows), with_payment_id=True, records="by_sql")
        with uvicorn(["bench.bare_app:app"], {}, args.web_workers) as bare_base, \
                web(gateway_env(url, signing=args.certified), args.web_workers) as gateway_base:
            for index, connections in enumerate(args.connections):
                with checkpoint_cycle(url) as recordless_cycle:
                    recordless = pgbench_scripts.ceiling(url, "notification", work, connections, duration,
                                                         PGBENCH_ATTEMPTS)
                ceiling_db, ceiling_cycle = recordless, recordless_cycle
                if args.certified:  # the ceiling runs the SQL the gateway runs: a certified notification's
                    with checkpoint_cycle(url) as ceiling_cycle:
                        ceiling_db = pgbench_scripts.ceiling_once(url, "notification_certified", work, connections,
                                                                  rows[index], first=1 + sum(rows[:index]))
                for mix in args.mixes:
                    prefix = f"B{connections}{mix[0]}-"
                    requests_file = work / f"{prefix}requests.tsv"
                    events = REDELIVERED if mix == "redeliveries" else args.events
                    if args.certified:
                        progress(f"starting {events} attempts with the product's code")
                    prepare_attempts(url, prefix, events, records=records_for(args.certified))
                    lines = signed_lines(prefix, events, mix == "duplicates")
                    requests_file.write_text("\n".join(lines) + "\n")
                    if mix == "redeliveries":
                        progress(f"recording the {events} notifications redelivered next")
                        prime(gateway_base, lines)
                    progress(f"{connections} senders, {mix}")
                    ceiling_http = wrk(bare_base, requests_file, connections, duration)
                    profile = args.profile / f"notifications-{prefix.rstrip('-')}.txt" if args.profile else None
                    pid = SERVER_PIDS[gateway_base]
                    cpu_before = tree_cpu_seconds(pid)
                    port = int(gateway_base.rsplit(":", 1)[1])
                    with checkpoint_cycle(url) as cycle, profiled(pid, profile), \
                            sampled_midway(duration / 2, functools.partial(worker_connections, pid, port)) as split:
                        result = wrk(gateway_base, requests_file, connections, duration)
                    cpu_us = (tree_cpu_seconds(pid) - cpu_before) * 1e6 / max(result["rps"] * duration, 1)
                    wired = "unique" if mix == "unique" else "duplicates"  # the wire count's second pass redelivers
                    runs.append({"senders": connections, "mix": mix, "rate": result["rps"], "p99_ms": result["p99_ms"],
                                 "p50_ms": result["p50_ms"], "p90_ms": result["p90_ms"],
                                 "bare_p50_ms": ceiling_http["p50_ms"], "bare_p99_ms": ceiling_http["p99_ms"],
                                 "pgbench_tps": ceiling_db, "ratio_pgbench": result["rps"] / ceiling_db,
                                 "bare_rate": ceiling_http["rps"], "ratio_bare": result["rps"] / ceiling_http["rps"],
                                 "non_2xx": result["non_2xx"], "wrapped": result["wrapped"],
                                 "round_trips": trips[f"{wired}_trips"], "statements": trips[f"{wired}_statements"],
                                 "gateway_cpu_us": cpu_us,
                                 "gateway_cpu_us_one_client": trips[f"{wired}_cpu_us"],
                                 "web_workers": args.web_workers, "worker_connections": split[0] if split else [],
                                 "certified": args.certified, "pgbench_tps_without_record": recordless,
                                 "ratio_pgbench_without_record": result["rps"] / recordless,
                                 "checkpoints_in_run": cycle["checkpoints"],
                                 "checkpoints_in_ceiling": ceiling_cycle["checkpoints"]})
    report(runs, duration, args.web_workers)
    if args.json:
        args.json.write_text(json.dumps({"runs": runs}, indent=1) + "\n")


def not_clean(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs that sent prepared notifications again (``wrapped``): a unique or duplicates run
    that did measured duplicates answered from memory too; a redeliveries run does it by design."""
    return [run for run in runs if run["wrapped"] and run["mix"] != "redeliveries"]


def report(runs: list[dict[str, Any]], duration: int, workers: int) -> None:
    print(f"\nverified notifications/s, {duration} s per run, loopback, wrk -t2, gateway web_workers={workers}"
          " (bench/README.md)\n")
    print(f"{'senders':>7} {'mix':<12} {'gateway/s':>10} {'p99 ms':>7} {'non-2xx':>7} {'wrapped':>7} "
          f"{'pgbench tps':>11} {'ratio':>6} {'bare /s':>9} {'ratio':>6} {'trips':>5} {'stmts':>5}"
          f" {'cpu us':>6} {'1 client':>8}  split")
    for run in runs:
        print(f"{run['senders']:>7} {run['mix']:<12} {run['rate']:>10.0f} {run['p99_ms']:>7.1f} "
              f"{run['non_2xx']:>7.0f} {run['wrapped']:>7.0f} {run['pgbench_tps']:>11.0f} {run['ratio_pgbench']:>6.2f} "
              f"{run['bare_rate']:>9.0f} {run['ratio_bare']:>6.3f} {run['round_trips']:>5.1f}"
              f" {run['statements']:>5.1f} {run['gateway_cpu_us']:>6.0f} {run['gateway_cpu_us_one_client']:>8.0f}"
              f"  {'/'.join(map(str, run['worker_connections']))}")
    for run in not_clean(runs):
        print(f"NOT CLEAN: {run['senders']} senders, {run['mix']}: wrk ran out of prepared notifications and sent"
              " them again (their duplicates are answered from memory): raise --events")
    unique = {run["senders"]: run["rate"] for run in runs if run["mix"] == "unique"}
    for run in runs:
        if run["mix"] != "unique" and run["senders"] in unique:
            times = run["rate"] / unique[run["senders"]]
            what = "50% duplicates" if run["mix"] == "duplicates" else "redeliveries only"
            print(f"{run['senders']} senders: {what} at {times:.2f}x the unique rate")


if __name__ == "__main__":
    main()
