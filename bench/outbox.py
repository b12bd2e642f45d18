"""Benchmark: outbox rows dispatched per second, in order per ordering key (bench/README.md).

    python bench/outbox.py [--keys 100] [--rows-per-key 100] [--alerts 100] [--workers 1 4]
                           [--duration 5] [--json PATH] [--profile DIR]

For each dispatcher count, a fresh backlog in an embedded PostgreSQL: ``--keys`` ordering keys
``attempt:<id>`` with ``--rows-per-key`` pending business effects each (message ids interleaved
across keys, as concurrent attempts write them), plus ``--alerts`` operator alerts with no key.
That many processes, each with its own pool and the dispatcher's keep-alive pool per sink, call
``dispatch_due`` until nothing is pending (at most 60 s), delivering to bench/sink_app.py under
uvicorn on loopback, which only remembers what it received; afterwards every row must have arrived
exactly once and, per key, in message_id order. Ceilings, in the same run:
- pgbench draining an identical backlog with the dispatcher's own claim and mark-dispatched SQL
  (gateway/outbox/queries.sql, the clock's parameter as now()), one mark for the batch, as many
  clients as dispatchers;
- the sink's own rate: wrk posting a delivery's body to it for ``--duration`` seconds (at least
  5,000/s, else the sink would be what is measured).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import re
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
    BENCH,
    WireCounter,
    embedded_database,
    in_processes,
    pgbench_command,
    progress,
    run_sql,
    uvicorn,
)
from gateway.clock import SystemClock  # noqa: E402
from gateway.collector import settle_collector  # noqa: E402
from gateway.logs import configure_logging  # noqa: E402
from gateway.outbox.dispatcher import BATCH_SIZE, IDLE_GRACE_S, dispatch_due  # noqa: E402
from gateway.outbox.sinks import sink_transport  # noqa: E402
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


async def dispatch(index: int, url: str, sink: str, profile: Path | None, start: Callable[[], None]) -> dict[str, Any]:
    """One dispatcher process: ``dispatch_due`` until nothing is pending (or MAX_RUN_S). With
    ``profile``, the first process runs under cProfile with a CPU timer and dumps its stats there."""
    configure_logging("json", "error")  # every operator alert is also logged, at warning
    settings = settings_for(url, sink)
    clock = SystemClock()
    db = await Database.open(url, size=2, name=f"bench-outbox-{index}")
    settle_collector()  # as the worker process does (jobs.runtime.RuntimeLifecycle)
    claimed = 0
    profiler = cProfile.Profile(time.process_time) if profile and index == 0 else None
    async with sink_transport() as sinks:
        start()
        began, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        while time.perf_counter() - began < MAX_RUN_S:
            batch = await dispatch_due(db, clock, settings, sinks)
            claimed += batch
            if batch == 0:
                if (await db.fetch_one(_PENDING))["pending"] == 0:  # type: ignore[index]
                    break
                await asyncio.sleep(IDLE_S)
        if profiler:
            profiler.disable()
            profiler.dump_stats(str(profile))
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        opened = len(sinks.pools)
    await db.close()
    return {"seconds": seconds, "claimed": claimed, "cpu_s": cpu, "pools": opened}


def wire_counts(url: str, sink: str) -> dict[str, float]:
    """Round trips and statements per batch as PostgreSQL sees them (bench/support.py WireCounter):
    one dispatcher, ``BATCH_SIZE`` keys with 4 rows each, so every batch claims ``BATCH_SIZE`` rows;
    the count includes the pass's last claim, which finds nothing."""
    prefix, keys, rows_per_key = "W-", BATCH_SIZE, 4
    run_sql(url, _BACKLOG, {"prefix": prefix, "keys": keys, "rows_per_key": rows_per_key, "alerts": 0})
    with WireCounter(url) as counter:
        in_processes(dispatch, 1, counter.url, sink, None)
        trips, statements = counter.count()
    batches = rows_per_key
    return {"round_trips": trips / batches, "statements": statements / batches}


def sink_ceiling(sink: str, duration: int) -> float:
    """The sink's own rate: wrk (2 threads, 50 connections: a batch's deliveries) posting to it."""
    output = subprocess.run(["wrk", "-t2", "-c50", f"-d{duration}s", "-s", str(BENCH / "sink.lua"), sink],
                            capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]


def pgbench_script(path: Path) -> Path:
    """The dispatcher's transaction for pgbench: bound the idle time, claim (the ids into :ids),
    mark them dispatched in one statement, commit."""
    sql = load_queries("gateway.outbox")

    def pgbench_sql(name: str, **values: str) -> str:
        text = "\n".join(line for line in sql[name].splitlines() if not line.lstrip().startswith("--"))
        for param, value in {"now": "now()", **values}.items():
            text = text.replace(f"%({param})s", value)
        return text.rstrip(";")

    timeout_ms = f"'{int((10 + IDLE_GRACE_S) * 1000)}'"
    claim = pgbench_sql("claim_due", limit=str(BATCH_SIZE))
    mark = pgbench_sql("mark_dispatched", message_ids="(:ids)")
    path.write_text("\n".join([
        "BEGIN;", pgbench_sql("bound_idle_transaction", timeout_ms=timeout_ms) + ";",
        f"SELECT COALESCE(array_agg(message_id), '{{}}') AS ids FROM ({claim}) claimed \\gset",
        mark + ";", "COMMIT;", ""]))
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


def run(url: str, sink: str, work: Path, workers: int, backlog: dict[str, int], profile: Path | None) -> dict[str, Any]:
    """One backlog dispatched by ``workers`` processes, then pgbench's drain with as many clients."""
    rows = backlog["keys"] * backlog["rows_per_key"] + backlog["alerts"]
    progress(f"{workers} dispatcher(s): {rows} rows")
    run_sql(url, _BACKLOG, {"prefix": f"O{workers}-", **backlog})
    connections = httpx.get(f"{sink}/_connections").json()["connections"]
    results = in_processes(dispatch, workers, url, sink, profile and profile / f"outbox-{workers}.prof")
    connections = httpx.get(f"{sink}/_connections").json()["connections"] - connections
    seconds = max(r["seconds"] for r in results)
    capped = seconds >= MAX_RUN_S
    problem = f"stopped after {MAX_RUN_S} s, not checked" if capped else check_delivery(url, sink, f"O{workers}-")
    # What a stopped run left pending would be claimed by the pgbench drain: drop it.
    run_sql(url, _DROP_PENDING, {"like": f"O{workers}-%"})
    progress(f"pgbench, {workers} client(s), draining {rows} rows")
    run_sql(url, _BACKLOG, {"prefix": f"P{workers}-", **backlog})
    drained_s = pgbench_drain(url, pgbench_script(work / "outbox_txn.sql"), workers)
    dispatched = sum(r["claimed"] for r in results)
    return {"workers": workers, "rows": rows, "seconds": seconds, "rate": dispatched / seconds, "problem": problem,
            "pgbench_rate": rows / drained_s, "ratio_pgbench": dispatched / seconds / (rows / drained_s),
            "cpu_us_per_row": sum(r["cpu_s"] for r in results) / max(dispatched, 1) * 1e6,
            "pools": sum(r["pools"] for r in results), "lanes": connections}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--rows-per-key", type=int, default=100)
    parser.add_argument("--alerts", type=int, default=100)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--duration", type=int, default=5, help=f"seconds of sink load (at most {MAX_CEILING_S})")
    parser.add_argument("--json", type=Path, help="write the figures to this file (bench/README.md)")
    parser.add_argument("--profile", type=Path, help="directory for the first dispatcher's cProfile stats (CPU "
                        "timer), outbox-<dispatchers>.prof; read them with python -m pstats")
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    backlog = {"keys": args.keys, "rows_per_key": args.rows_per_key, "alerts": args.alerts}
    configure_logging("json", "warning")
    with embedded_database() as (url, work), uvicorn(["bench.sink_app:app"], {}) as sink:
        progress("the sink's own ceiling")
        ceiling = sink_ceiling(sink, min(args.duration, MAX_CEILING_S))
        progress("round trips per batch, one dispatcher through the wire counter")
        wire = wire_counts(url, sink)
        runs = [run(url, sink, work, workers, backlog, args.profile) for workers in args.workers]
    report(runs, backlog, ceiling, wire)
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "sink_rate": ceiling, **wire}, indent=1) + "\n")


def report(runs: list[dict[str, Any]], backlog: dict[str, int], sink: float, wire: dict[str, float]) -> None:
    print(f"\noutbox: rows dispatched per second, {backlog['keys']} keys x {backlog['rows_per_key']} rows "
          f"+ {backlog['alerts']} alerts, batches of {BATCH_SIZE}, bench/sink_app.py on loopback (bench/README.md)\n")
    print(f"  the sink's own ceiling: {sink:.0f} deliveries/s (wrk, 50 connections)")
    print(f"  per batch of {BATCH_SIZE} on the wire: {wire['round_trips']:.1f} round trips, "
          f"{wire['statements']:.1f} statements (one dispatcher, the pass's final empty claim included)\n")
    print(f"{'dispatchers':>11} {'rows/s':>8} {'seconds':>7} {'pgbench rows/s':>14} {'ratio':>6} {'cpu us/row':>10} "
          f"{'pools':>5}  delivery")
    for run in runs:
        print(f"{run['workers']:>11} {run['rate']:>8.0f} {run['seconds']:>7.1f} {run['pgbench_rate']:>14.0f} "
              f"{run['ratio_pgbench']:>6.2f} {run['cpu_us_per_row']:>10.0f} {run['pools']:>5}  "
              f"{run['problem'] or 'every row once, in order per key'}")


if __name__ == "__main__":
    main()
