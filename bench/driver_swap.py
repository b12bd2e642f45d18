"""How much of a transaction's client CPU is the driver's: the gateway's pipelined psycopg transaction
against asyncpg's, by batch size (evidence for planning, not a swap: asyncpg is no dependency).

    python bench/driver_swap.py [--batches 1,3,8] [--deliveries 600] [--repeats 5] [--json PATH]

uvloop, one embedded PostgreSQL, one connection per driver, bench/transaction_costs.py's "each"
transaction: three phases, each read before the next, a statement per delivery per phase, rows of
12 text and 16 timestamptz columns. "psycopg": the gateway's ``Database.transaction`` (pool
checkout, pipeline; prepared from the ``prepare_threshold``-th execution, printed). "asyncpg":
``conn.transaction()``, ``conn.fetchrow`` (a round trip each; prepared at its first use by
asyncpg's statement cache, so ``conn.prepare`` changes nothing). Printed per batch size and delivery:
client CPU (``time.process_time``: driver, pool, event loop), best of ``--repeats``, the headline
(the gateway's limit on 2 cores), and psycopg's over asyncpg's; wall time; round trips,
counted on the wire (support.WireCounter) in an untimed pass. The statements are trivial (SELECTs
of their parameters and now()): these are the drivers' fixed costs per transaction and statement,
not the gateway's statements'. asyncpg is installed into /tmp/paygate-bench-asyncpg if missing.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvloop  # noqa: E402

from bench.support import WireCounter, embedded_database, progress  # noqa: E402
from bench.transaction_costs import ONE, PHASES, TEXT_COLUMNS  # noqa: E402
from gateway.store.db import Database  # noqa: E402

ASYNCPG_PIN, ASYNCPG_DIR = "asyncpg==0.30.0", "/tmp/paygate-bench-asyncpg"
ONE_NUMBERED = re.sub(r"%\(p(\d+)\)s", lambda m: f"${int(m[1]) + 1}", ONE)  # the same statement, $n parameters
PARAMS = {f"p{i}": f"value-{i}" for i in range(TEXT_COLUMNS)}
MODES = ("psycopg", "asyncpg")
COUNTED = 10  # transactions per mode and batch size in the round-trip pass, after as many to warm up
Transaction = Callable[[int], Awaitable[None]]


def import_asyncpg() -> Any:
    """asyncpg from the environment, else from ASYNCPG_DIR, installed there the first time."""
    try:
        return importlib.import_module("asyncpg")
    except ImportError:
        sys.path.insert(0, ASYNCPG_DIR)
    if not (Path(ASYNCPG_DIR) / "asyncpg").is_dir():
        progress(f"asyncpg is not installed: installing {ASYNCPG_PIN} into {ASYNCPG_DIR}")
        pip = [sys.executable, "-m", "pip", "install", "-q", "--target", ASYNCPG_DIR, ASYNCPG_PIN]
        subprocess.run(pip, check=True)
    progress(f"asyncpg taken from {ASYNCPG_DIR}")
    return importlib.import_module("asyncpg")


async def transactions(asyncpg: Any, url: str, stack: AsyncExitStack) -> tuple[dict[str, Transaction], int | None]:
    """Per mode, one transaction of ``size`` deliveries on its own connection to ``url``; and the
    prepare_threshold of the gateway's pooled connection."""
    db = await Database.open(url, size=1)
    stack.push_async_callback(db.close)
    async with db.connection() as pooled:
        threshold = pooled.prepare_threshold
    conn = await asyncpg.connect(url)
    stack.push_async_callback(conn.close)
    values = list(PARAMS.values())

    async def pipelined(size: int) -> None:
        async with db.transaction() as pg:
            for _ in range(PHASES):
                cursors = [await pg.execute(ONE, PARAMS) for _ in range(size)]
                for cursor in cursors:
                    await cursor.fetchone()

    async def one_by_one(size: int) -> None:
        async with conn.transaction():
            for _ in range(PHASES * size):
                await conn.fetchrow(ONE_NUMBERED, *values)

    return dict(zip(MODES, (pipelined, one_by_one), strict=True)), threshold


async def round_trips(asyncpg: Any, url: str, sizes: list[int]) -> dict[tuple[int, str], float]:
    """Round trips per delivery, per batch size and mode, on the wire, once prepared."""
    found: dict[tuple[int, str], float] = {}
    with WireCounter(url) as wire:
        async with AsyncExitStack() as stack:
            for mode, transaction in (await transactions(asyncpg, wire.url, stack))[0].items():
                for size in sizes:
                    for _ in range(COUNTED):
                        await transaction(size)
                    before = wire.count()[0]
                    for _ in range(COUNTED):
                        await transaction(size)
                    found[size, mode] = (wire.count()[0] - before) / (COUNTED * size)
    return found


async def timed(transaction: Transaction, size: int, deliveries: int) -> tuple[float, float]:
    """Client CPU and wall microseconds per delivery, over transactions of ``size`` deliveries."""
    cpu, wall, done = time.process_time(), time.perf_counter(), 0
    while done < deliveries:
        await transaction(size)
        done += size
    return (time.process_time() - cpu) / done * 1e6, (time.perf_counter() - wall) / done * 1e6


async def measure(asyncpg: Any, url: str, sizes: list[int], deliveries: int, repeats: int) -> list[dict[str, Any]]:
    trips, runs = await round_trips(asyncpg, url, sizes), []
    async with AsyncExitStack() as stack:
        ways, threshold = await transactions(asyncpg, url, stack)
        print(f"psycopg prepare_threshold {threshold}, asyncpg {asyncpg.__version__}; per delivery, {PHASES} phases")
        print(f"{'batch':>5} {'psycopg us':>10} {'asyncpg us':>10} {'ratio':>5}   "
              "wall us (same order)   round trips (same order)", flush=True)  # fmt: skip
        for size in sizes:
            best = dict.fromkeys(MODES, (float("inf"), float("inf")))
            for _ in range(repeats):
                for mode in MODES:  # interleaved: a busy spell on the machine hits every mode alike
                    cpu, wall = await timed(ways[mode], size, deliveries)
                    best[mode] = (min(best[mode][0], cpu), min(best[mode][1], wall))
            run: dict[str, Any] = {"batch": size}
            for mode in MODES:
                run |= {
                    f"{mode}_cpu_us": best[mode][0],
                    f"{mode}_wall_us": best[mode][1],
                    f"{mode}_round_trips": trips[size, mode],
                }
            run["ratio_psycopg_asyncpg"] = ratio = best["psycopg"][0] / best["asyncpg"][0]
            print(f"{size:>5} {best['psycopg'][0]:>10.0f} {best['asyncpg'][0]:>10.0f} {ratio:>5.2f}   "
                  + " ".join(f"{best[mode][1]:>6.0f}" for mode in MODES) + "   "
                  + " ".join(f"{trips[size, mode]:>6.2f}" for mode in MODES), flush=True)  # fmt: skip
            runs.append(run)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,3,8", help="batch sizes, comma-separated")
    parser.add_argument("--deliveries", type=int, default=600, help="deliveries per measurement")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    asyncpg = import_asyncpg()
    sizes = [int(n) for n in args.batches.split(",")]
    with embedded_database() as (url, _):
        runs = uvloop.run(measure(asyncpg, url, sizes, args.deliveries, args.repeats))
    if args.json:
        figures = {"asyncpg": asyncpg.__version__, "deliveries": args.deliveries, "repeats": args.repeats, "runs": runs}
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
