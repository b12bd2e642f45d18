"""Benchmark: outbox rows dispatched per second, in order per ordering key (issue 6; bench/README.md).

    python bench/outbox.py [--keys 100] [--rows-per-key 100] [--alerts 100] [--workers 1 4] [--duration 5]

For each dispatcher count, a fresh backlog in an embedded PostgreSQL: ``--keys`` ordering keys
``attempt:<id>`` with ``--rows-per-key`` pending business effects each (message ids interleaved
across keys, as concurrent attempts write them), plus ``--alerts`` operator alerts with no key.
That many processes, each with its own pool and HTTP client, call ``dispatch_due`` until nothing
is pending (at most 60 s), delivering into the demo sinks app (gateway/local/sinks.py) under
uvicorn on loopback, which records what it receives; afterwards every row must have arrived
exactly once and, per key, in message_id order. Ceilings, in the same run with as many clients:
- pgbench draining an identical backlog with the dispatcher's own claim and mark-dispatched SQL
  (gateway/outbox/queries.sql, the clock's parameter as now()), one mark per claimed row;
- the sink's rate under the same load generator: the same processes calling the dispatcher's
  ``deliver`` on batches of the same size, without the database, for ``--duration`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import (  # noqa: E402
    embedded_database,
    in_processes,
    pgbench_command,
    progress,
    run_sql,
    uvicorn,
)
from gateway.clock import SystemClock  # noqa: E402
from gateway.logs import configure_logging  # noqa: E402
from gateway.outbox.delivery import deliver  # noqa: E402
from gateway.outbox.dispatcher import BATCH_SIZE, IDLE_GRACE_S, dispatch_due  # noqa: E402
from gateway.settings import Settings, build_settings  # noqa: E402
from gateway.store.db import Database  # noqa: E402
from gateway.store.queries import load_queries  # noqa: E402

MAX_RUN_S = 60
MAX_CEILING_S = 20
# A dispatcher that found nothing eligible while rows are pending (every key's head is held by
# another dispatcher) asks again after this long, as the next clock wake-up would.
IDLE_S = 0.005

# Business effects row by row across the keys (key k's n-th effect is written after every key's
# (n-1)-th), then the alerts; the payload carries what outbox.store writes into it.
_BACKLOG = """
INSERT INTO outbox_messages (dedup_key, ordering_key, kind, payload, created_at, next_attempt_at)
SELECT concat_ws(':', 'attempt', md5(%(prefix)s || k)::uuid, 'effect', n), 'attempt:' || md5(%(prefix)s || k)::uuid,
       'order-confirmation',
       jsonb_build_object('order_id', %(prefix)s || k, 'position', n, 'kind', 'order-confirmation',
                          'dedup_key', concat_ws(':', 'attempt', md5(%(prefix)s || k)::uuid, 'effect', n)),
       now(), now()
  FROM generate_series(1, %(rows_per_key)s) n, generate_series(1, %(keys)s) k
 ORDER BY n, k;
INSERT INTO outbox_messages (dedup_key, kind, payload, created_at, next_attempt_at)
SELECT 'escalation:' || %(prefix)s || g || ':initial', 'operator-alert',
       jsonb_build_object('escalation_id', g, 'escalation_key', %(prefix)s || g, 'reason', 'bench',
                          'kind', 'operator-alert', 'dedup_key', 'escalation:' || %(prefix)s || g || ':initial'),
       now(), now()
  FROM generate_series(1, %(alerts)s) g
"""
_DROP_PENDING = """
DELETE FROM outbox_messages
 WHERE dispatched_at IS NULL AND (payload->>'order_id' LIKE %(like)s OR payload->>'escalation_key' LIKE %(like)s)
"""
_PENDING = "SELECT count(*) AS pending FROM outbox_messages WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL"


def settings_for(url: str, sink: str) -> Settings:
    return build_settings({
        "database_url": url, "redis_url": "redis://127.0.0.1:1/0", "token_pepper": "bench", "log_level": "error",
        "merchant_sink_url": f"{sink}/merchant", "alert_sink_url": f"{sink}/alerts",
        "merchant_signing_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})


async def dispatch(index: int, url: str, sink: str, start: Callable[[], None]) -> dict[str, Any]:
    """One dispatcher process: ``dispatch_due`` until nothing is pending (or MAX_RUN_S)."""
    configure_logging("json", "error")  # every operator alert is also logged, at warning
    settings = settings_for(url, sink)
    clock = SystemClock()
    db = await Database.open(url, size=2, name=f"bench-outbox-{index}")
    claimed = 0
    async with httpx.AsyncClient(timeout=httpx.Timeout(None)) as http:
        start()
        began = time.perf_counter()
        while time.perf_counter() - began < MAX_RUN_S:
            batch = await dispatch_due(db, clock, settings, http)
            claimed += batch
            if batch == 0:
                if (await db.fetch_one(_PENDING))["pending"] == 0:  # type: ignore[index]
                    break
                await asyncio.sleep(IDLE_S)
        seconds = time.perf_counter() - began
    await db.close()
    return {"seconds": seconds, "claimed": claimed}


async def deliver_only(index: int, url: str, sink: str, duration: float, start: Callable[[], None]) -> dict[str, Any]:
    """One ceiling process: the dispatcher's ``deliver`` on batches of BATCH_SIZE, no database."""
    settings = settings_for(url, sink)
    clock = SystemClock()
    async with httpx.AsyncClient(timeout=httpx.Timeout(None)) as http:
        start()
        delivered = 0
        began = time.perf_counter()
        while time.perf_counter() - began < duration:
            rows = [{"message_id": delivered + n, "dedup_key": f"sinkload:{index}:{delivered + n}", "attempt_id": None,
                     "ordering_key": None, "kind": "order-confirmation", "payload": {"position": n},
                     "delivery_attempts": 0} for n in range(BATCH_SIZE)]
            errors = await asyncio.gather(*(deliver(row, settings, clock, http) for row in rows))
            if any(errors):
                raise RuntimeError(f"the sink refused a delivery: {errors}")
            delivered += len(rows)
        return {"seconds": time.perf_counter() - began, "delivered": delivered}


def pgbench_script(path: Path) -> Path:
    """The dispatcher's transaction for pgbench: bound the idle time, claim (the ids into :ids),
    one mark_dispatched per claimed row (a mark past the claimed ones matches nothing), commit."""
    sql = load_queries("gateway.outbox")

    def pgbench_sql(name: str, **values: str) -> str:
        text = "\n".join(line for line in sql[name].splitlines() if not line.lstrip().startswith("--"))
        for param, value in {"now": "now()", **values}.items():
            text = text.replace(f"%({param})s", value)
        return text.rstrip(";")

    timeout_ms = f"'{int((10 + IDLE_GRACE_S) * 1000)}'"
    claim = pgbench_sql("claim_due", limit=str(BATCH_SIZE))
    marks = [pgbench_sql("mark_dispatched", message_id=f"((:ids)::bigint[])[{n}]") for n in range(1, BATCH_SIZE + 1)]
    path.write_text("\n".join([
        "BEGIN;", pgbench_sql("bound_idle_transaction", timeout_ms=timeout_ms) + ";",
        f"SELECT COALESCE(array_agg(message_id), '{{}}') AS ids FROM ({claim}) claimed \\gset",
        *(mark + ";" for mark in marks), "COMMIT;", ""]))
    return path


def pgbench_drain(url: str, script: Path, clients: int) -> float:
    """Seconds pgbench takes to leave nothing pending (polled every 10 ms)."""
    began = time.perf_counter()
    process = subprocess.Popen(pgbench_command(url, script, clients, MAX_RUN_S, {}), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            while conn.execute(_PENDING).fetchone()[0] > 0:  # type: ignore[index]
                if process.poll() is not None:
                    raise RuntimeError(f"pgbench ended first: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.01)
        return time.perf_counter() - began
    finally:
        process.terminate()
        process.wait(timeout=10)


def check_delivery(url: str, sink: str, prefix: str) -> str | None:
    """None if every row of the backlog arrived exactly once, each key's in message_id order."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT dedup_key, ordering_key, message_id FROM outbox_messages "
                            "WHERE payload->>'order_id' LIKE %(like)s OR payload->>'escalation_key' LIKE %(like)s",
                            {"like": f"{prefix}%"}).fetchall()
    expected = {dedup_key: (ordering_key, message_id) for dedup_key, ordering_key, message_id in rows}
    received = [message["dedup_key"] for name in ("merchant", "alerts")
                for message in httpx.get(f"{sink}/{name}").json()["messages"] if message["dedup_key"] in expected]
    if len(received) != len(expected) or set(received) != set(expected):
        return f"{len(received)} deliveries of {len(set(received))} distinct rows, expected {len(expected)} once each"
    last: dict[str, int] = {}
    for dedup_key in received:
        ordering_key, message_id = expected[dedup_key]
        if ordering_key is not None and last.get(ordering_key, 0) > message_id:
            return f"{ordering_key}: message {message_id} arrived after message {last[ordering_key]}"
        if ordering_key is not None:
            last[ordering_key] = message_id
    return None


def run(url: str, sink: str, work: Path, workers: int, backlog: dict[str, int], duration: int) -> dict[str, Any]:
    """One backlog dispatched by ``workers`` processes, then both ceilings with as many clients."""
    rows = backlog["keys"] * backlog["rows_per_key"] + backlog["alerts"]
    progress(f"{workers} dispatcher(s): {rows} rows")
    run_sql(url, _BACKLOG, {"prefix": f"O{workers}-", **backlog})
    results = in_processes(dispatch, workers, url, sink)
    seconds = max(r["seconds"] for r in results)
    capped = seconds >= MAX_RUN_S
    problem = f"stopped after {MAX_RUN_S} s, not checked" if capped else check_delivery(url, sink, f"O{workers}-")
    # What a stopped run left pending would be claimed by the pgbench drain: drop it.
    run_sql(url, _DROP_PENDING, {"like": f"O{workers}-%"})
    progress(f"pgbench, {workers} client(s), draining {rows} rows")
    run_sql(url, _BACKLOG, {"prefix": f"P{workers}-", **backlog})
    drained_s = pgbench_drain(url, pgbench_script(work / "outbox_txn.sql"), workers)
    progress(f"the sink under {workers} process(es) of deliveries")
    loads = in_processes(deliver_only, workers, url, sink, duration)
    dispatched = sum(r["claimed"] for r in results)
    return {"workers": workers, "rows": rows, "seconds": seconds, "rate": dispatched / seconds, "problem": problem,
            "pgbench": rows / drained_s,
            "sink": sum(r["delivered"] for r in loads) / max(r["seconds"] for r in loads)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rows-per-key", type=int, default=100)
    parser.add_argument("--alerts", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--duration", type=int, default=5, help=f"seconds of sink load (at most {MAX_CEILING_S})")
    args = parser.parse_args()
    backlog = {"keys": args.keys, "rows_per_key": args.rows_per_key, "alerts": args.alerts}
    configure_logging("json", "warning")
    with embedded_database() as (url, work), uvicorn(["--factory", "gateway.local.sinks:create_app"], {}) as sink:
        rows = [run(url, sink, work, workers, backlog, min(args.duration, MAX_CEILING_S)) for workers in args.workers]
    report(rows, backlog)


def report(rows: list[dict[str, Any]], backlog: dict[str, int]) -> None:
    print(f"\noutbox: rows dispatched per second, {backlog['keys']} keys x {backlog['rows_per_key']} rows "
          f"+ {backlog['alerts']} alerts, batches of {BATCH_SIZE}, demo sinks on loopback (bench/README.md)\n")
    print(f"{'dispatchers':>11} {'rows/s':>8} {'seconds':>7} {'pgbench rows/s':>14} {'ratio':>6} "
          f"{'sink /s':>8} {'ratio':>6}  delivery")
    for row in rows:
        print(f"{row['workers']:>11} {row['rate']:>8.0f} {row['seconds']:>7.1f} {row['pgbench']:>14.0f} "
              f"{row['rate'] / row['pgbench']:>6.2f} {row['sink']:>8.0f} {row['rate'] / row['sink']:>6.2f}  "
              f"{row['problem'] or 'every row once, in order per key'}")


if __name__ == "__main__":
    main()
