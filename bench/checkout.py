"""Benchmark: checkouts per second, the gateway's own latency, and database round trips per
checkout (bench/README.md).

    python bench/checkout.py [--duration 10] [--connections 16] [--orders 20000] [--json PATH]

Three kinds of process on loopback, none sharing a process with another: the gateway under uvicorn
(uvloop, httptools, one worker, no access log, as bench/notifications.py runs it) on an embedded
PostgreSQL; CardCo (provider_fake.app) under its own uvicorn, answering at once; and wrk as the
load generator (bench/checkout.lua), each request the checkout of its own Open order, POST
``/v1/orders/{id}/payment`` with a customer's bearer token. Each confirmed effect is certified, as in
production (a signing key is configured).

- **checkouts/s, p50/p99** at ``--connections`` clients, and at 1 client;
- **gateway's own p50** at 1 client: the checkout's p50 minus CardCo's own p50 for the same
  payment call at 1 client (measured from this process, one call after another);
- **round trips / statements per checkout** as PostgreSQL sees them (bench/support.py WireCounter:
  checkouts one at a time through a counting proxy);
- **gateway CPU per checkout against its CPU per unique notification** (``checkout_cpu_ratio``): the
  gateway process of the loaded runs takes, before them and one request at a time, checkouts and
  verified CardCo notifications (bench/notifications.py's signed ``payment.succeeded``, each
  recording its event and resolving its attempt) in ``CPU_BLOCKS`` rounds of alternating blocks of
  ``CPU_BLOCK`` each, after ``CPU_WARM_UP`` of each unmeasured; the CPU figures come from
  ``/proc/<pid>/stat`` and are the sums over their blocks, so a drift of the machine weighs on all
  alike (``checkout_cpu_ratio_blocks``: each round's own ratio, the spread). The notifications are
  for attempts the product itself started, so each also writes its effect record's ledger rows and
  certificate, as every notification for a checkout's attempt does; a third block per round
  notifies attempts inserted without an effect record, as bench/notifications.py's are
  (``notification_cpu_us_without_record``, ``checkout_cpu_ratio_without_record``);
- **ratio** to pgbench running the same three transactions (bench/pgbench_scripts.py ``checkout``,
  generated from the product's named SQL) with the same
  clients on the same database in the same run. 1.0 would mean the gateway adds nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import notifications, pgbench_scripts  # noqa: E402
from bench.support import (  # noqa: E402
    ACCOUNT,
    BENCH,
    SERVER_PIDS,
    WireCounter,
    checkpoint_cycle,
    cpu_seconds,
    embedded_database,
    insert_orders,
    profiled,
    progress,
    uvicorn,
)
from gateway.auth.tokens import Tokens  # noqa: E402
from gateway.clock import SystemClock  # noqa: E402
from gateway.store.db import Database  # noqa: E402
from paygate_local.servers import free_port  # noqa: E402

API_KEY = "ck_bench"
PEPPER = "bench"
MAX_DURATION_S = 20
WIRE_COUNT = 300  # checkouts sent one at a time through the wire counter
CPU_WARM_UP = 30  # checkouts and notifications sent before the CPU blocks, each
CPU_BLOCKS = 4  # alternating blocks of checkouts and of notifications, each kind
CPU_BLOCK = 150  # requests per block
CARDCO_SAMPLES = 1000  # CardCo payment calls timed one after another


def gateway_env(url: str, cardco: str) -> dict[str, str]:
    key = {"key_id": "bench-1", "active": True, "private_key": base64.b64encode(secrets.token_bytes(32)).decode()}
    account = {"id": ACCOUNT, "base_url": cardco, "api_key": API_KEY, "webhook_endpoint_id": notifications.ENDPOINT,
               "webhook_secrets": [notifications.SECRET]}
    return {"DATABASE_URL": url, "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "PAYGATE_TOKEN_PEPPER": PEPPER,
            "PAYGATE_LOG_LEVEL": "warning", "PAYGATE_PROVIDER_ACCOUNTS": json.dumps([account]),
            "PAYGATE_CERTIFICATE_KEYS": json.dumps([key])}


async def customer_token(url: str) -> str:
    db = await Database.open(url, size=1)
    try:
        return await Tokens(db, SystemClock(), PEPPER).create("customer", "cus_bench")
    finally:
        await db.close()


def wrk(base: str, token: str, prefix: str, orders: int, connections: int, duration: int) -> dict[str, float]:
    threads = min(connections, 2)
    output = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(BENCH / "checkout.lua"),
         base],
        env={**os.environ, "TOKEN": token, "PREFIX": prefix, "ORDERS": str(orders), "THREADS": str(threads)},
        capture_output=True, text=True, check=True).stdout

    def figure(pattern: str) -> float:
        return float(re.search(pattern, output).group(1))  # type: ignore[union-attr]

    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {"rate": figure(r"Requests/sec:\s+([\d.]+)"), "p50_ms": figure(r"P50_US (\d+)") / 1000,
            "p99_ms": figure(r"P99_US (\d+)") / 1000, "non_2xx": float(non_2xx.group(1)) if non_2xx else 0.0,
            "exhausted": figure(r"EXHAUSTED (\d+)"), "requests": figure(r"(\d+) requests in")}


def cardco_p50_ms(cardco: str) -> float:
    """CardCo's own latency for the payment call a checkout makes, one call after another."""
    headers = {"Authorization": f"Bearer {API_KEY}", "CardCo-Account": ACCOUNT, "Content-Type": "application/json"}
    timings = []
    with httpx.Client(base_url=cardco, headers=headers) as http:
        for n in range(CARDCO_SAMPLES):
            body = json.dumps({"amount_minor": 4250, "currency": "EUR", "payment_method": "pm_card_visa",
                               "client_reference": f"CC-{n}-a1"}, separators=(",", ":"))
            started = time.perf_counter()
            http.post("/v1/payments", content=body, headers={"Idempotency-Key": str(uuid.uuid4())}).raise_for_status()
            timings.append(time.perf_counter() - started)
    return statistics.median(timings[CARDCO_SAMPLES // 10:]) * 1000


def wire_trips(url: str, cardco: str, token: str) -> dict[str, float]:
    """Round trips and statements per checkout as PostgreSQL sees them, ``WIRE_COUNT`` checkouts one
    at a time through the wire counter."""
    insert_orders(url, "W-", WIRE_COUNT)
    with WireCounter(url) as counter, uvicorn(["--factory", "gateway.app:app_from_environment"],
                                              gateway_env(counter.url, cardco)) as base, \
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        http.post("/v1/orders/W-1/payment").raise_for_status()
        trips, statements = counter.count()
        for n in range(2, WIRE_COUNT + 1):
            http.post(f"/v1/orders/W-{n}/payment").raise_for_status()
        after_trips, after_statements = counter.count()
    count = WIRE_COUNT - 1
    return {"round_trips": (after_trips - trips) / count, "statements": (after_statements - statements) / count}


def prepare_cpu_blocks(url: str) -> dict[str, list[list[str]]]:
    """The requests of :func:`cpu_blocks`: Open orders ``C-<n>`` to pay, and signed notifications of
    success for attempts ``CR-<n>`` (started by the product, bench/notifications.py
    ``start_attempts``) and ``CN-<n>`` (inserted by SQL without an effect record)."""
    count = CPU_WARM_UP + CPU_BLOCKS * CPU_BLOCK
    insert_orders(url, "C-", count)
    notifications.prepare_attempts(url, "CR-", count, records="by_product")
    notifications.prepare_attempts(url, "CN-", count)
    return {prefix: [line.split("\t") for line in notifications.signed_lines(prefix, count, False)]
            for prefix in ("CR-", "CN-")}


def cpu_blocks(base: str, token: str, signed: dict[str, list[list[str]]]) -> dict[str, Any]:
    """The gateway's CPU per checkout and per unique verified notification at one client, in
    alternating blocks (the module's docstring), and their ratio: a notification for an attempt the
    product started (its effect record's rows and certificate written), and, as a second figure,
    one for an attempt without an effect record, as bench/notifications.py's attempts are."""
    pid = SERVER_PIDS[base]
    orders = iter(range(1, CPU_WARM_UP + CPU_BLOCKS * CPU_BLOCK + 1))
    notes = {prefix: iter(lines) for prefix, lines in signed.items()}
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        def checkout() -> None:
            http.post(f"/v1/orders/C-{next(orders)}/payment").raise_for_status()

        def notification(prefix: str) -> Any:
            def send() -> None:
                path, msg_id, timestamp, signature, body = next(notes[prefix])
                http.post(path, content=body, headers={
                    "content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": timestamp,
                    "webhook-signature": signature}).raise_for_status()
            return send

        def block(send: Any, count: int) -> float:
            before = cpu_seconds(pid)
            for _ in range(count):
                send()
            return cpu_seconds(pid) - before

        kinds = (checkout, notification("CR-"), notification("CN-"))
        for send in kinds:
            block(send, CPU_WARM_UP)
        rounds = [[block(send, CPU_BLOCK) for send in kinds] for _ in range(CPU_BLOCKS)]
    checkouts, notified, bare = (sum(column) for column in zip(*rounds, strict=True))
    requests = CPU_BLOCKS * CPU_BLOCK
    return {"cpu_us_one_client": checkouts * 1e6 / requests,
            "notification_cpu_us_one_client": notified * 1e6 / requests, "checkout_cpu_ratio": checkouts / notified,
            "checkout_cpu_ratio_blocks": [round(c / n, 2) for c, n, _ in rounds],
            "notification_cpu_us_without_record": bare * 1e6 / requests,
            "checkout_cpu_ratio_without_record": checkouts / bare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help=f"seconds per run (at most {MAX_DURATION_S})")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--orders", type=int, default=20_000, help="Open orders prepared for each run")
    parser.add_argument("--profile", type=Path, help="directory for a py-spy profile of the gateway's loaded run")
    parser.add_argument("--json", type=Path, help="write the figures to this file (bench/README.md)")
    args = parser.parse_args()
    duration = min(args.duration, MAX_DURATION_S)
    with embedded_database() as (url, work):
        for prefix in ("ONE-", "ORD-", "PGB-"):
            insert_orders(url, prefix, args.orders)
        token = asyncio.run(customer_token(url))
        config = work / "cardco.json"
        config.write_text(json.dumps({"accounts": [{"id": ACCOUNT, "api_key": API_KEY}]}))
        with uvicorn(["provider_fake.app:app"], {"CARDCO_CONFIG": str(config)}) as cardco:
            progress("CardCo's own latency")
            provider_p50 = cardco_p50_ms(cardco)
            progress("counting round trips on the wire")
            wire = wire_trips(url, cardco, token)
            signed = prepare_cpu_blocks(url)
            with uvicorn(["--factory", "gateway.app:app_from_environment"], gateway_env(url, cardco)) as base:
                progress(f"CPU per checkout and per notification, {CPU_BLOCKS} blocks of {CPU_BLOCK} each")
                cpu = cpu_blocks(base, token, signed)
                progress("1 client")
                one = wrk(base, token, "ONE-", args.orders, 1, duration)
                progress(f"{args.connections} clients")
                pid = SERVER_PIDS[base]
                cpu_before = cpu_seconds(pid)
                profile = args.profile / "checkout.txt" if args.profile else None
                with checkpoint_cycle(url) as cycle, profiled(pid, profile):
                    loaded = wrk(base, token, "ORD-", args.orders, args.connections, duration)
                cpu_us = (cpu_seconds(pid) - cpu_before) * 1e6 / max(loaded["requests"], 1)
        progress(f"pgbench, {args.connections} clients")
        with checkpoint_cycle(url) as ceiling_cycle:
            ceiling = pgbench_scripts.ceiling(url, "checkout", work, args.connections, duration, args.orders)
    figures = {"clients": args.connections, "rate": loaded["rate"], "p50_ms": loaded["p50_ms"],
               "p99_ms": loaded["p99_ms"], "gateway_p50_ms": one["p50_ms"] - provider_p50,
               "pgbench_tps": ceiling, "ratio_pgbench": loaded["rate"] / ceiling,
               "one_client_rate": one["rate"], "one_client_p50_ms": one["p50_ms"], "cardco_p50_ms": provider_p50,
               "non_2xx": loaded["non_2xx"] + one["non_2xx"], "exhausted": loaded["exhausted"] + one["exhausted"],
               "gateway_cpu_us": cpu_us, "checkpoints_in_run": cycle["checkpoints"],
               "checkpoints_in_ceiling": ceiling_cycle["checkpoints"], **wire, **cpu}
    report(figures, duration)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


def report(f: dict[str, Any], duration: int) -> None:
    print(f"\ncheckout (POST /v1/orders/{{id}}/payment; gateway, CardCo and wrk in their own processes), "
          f"{duration} s per run\n")
    print(f"  checkouts/s, {f['clients']} clients  {f['rate']:>9.0f}   p50 {f['p50_ms']:.2f} ms,"
          f" p99 {f['p99_ms']:.2f} ms")
    print(f"  checkouts/s, 1 client     {f['one_client_rate']:>9.0f}   p50 {f['one_client_p50_ms']:.2f} ms")
    print(f"  gateway's own p50         {f['gateway_p50_ms']:>9.2f} ms (1 client, minus CardCo's own p50 "
          f"{f['cardco_p50_ms']:.2f} ms)")
    print(f"  round trips / statements  {f['round_trips']:>9.1f} / {f['statements']:.1f} per checkout (on the wire)")
    print(f"  gateway CPU per checkout  {f['gateway_cpu_us']:>9.0f} us loaded, {f['cpu_us_one_client']:.0f} us "
          "at 1 client")
    print(f"  ... per notification      {f['notification_cpu_us_one_client']:>9.0f} us at 1 client (a unique verified "
          f"one, same process, its effect certified): checkout / notification {f['checkout_cpu_ratio']:.2f} "
          f"(blocks {', '.join(f'{r:.2f}' for r in f['checkout_cpu_ratio_blocks'])})")
    print(f"  ... per notification      {f['notification_cpu_us_without_record']:>9.0f} us for an attempt without an "
          f"effect record (as bench/notifications.py's): checkout / notification "
          f"{f['checkout_cpu_ratio_without_record']:.2f}")
    print(f"  pgbench, 3 txns           {f['pgbench_tps']:>9.0f} tps  "
          "(bench/pgbench_scripts.py checkout, same clients)")
    print(f"  ratio                     {f['ratio_pgbench']:>9.2f}")
    if f["non_2xx"] or f["exhausted"]:
        print(f"  NOT CLEAN: {f['non_2xx']:.0f} non-2xx, {f['exhausted']:.0f} past the prepared orders")


if __name__ == "__main__":
    main()
