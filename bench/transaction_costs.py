"""What a grouped transaction costs the gateway's side per delivery, by batch size (bench/README.md,
"Ingest at 16 senders, fifth pass"; docs/decisions/0082).

    python bench/transaction_costs.py [--batches 1,2,3,5,8] [--deliveries 600] [--repeats 3]

One process, the gateway's own pool of one connection, the shape of a pipelined ingest batch
(docs/decisions/0080) with the statements made trivial: a ``Database.transaction`` (pool checkout,
pipeline, BEGIN and COMMIT queued) of three phases, each read before the next is sent, each either
one statement per delivery ("each", what the gateway runs) or one statement for the whole batch
over a ``jsonb`` array of the deliveries ("set"). Every row has 28 columns, as the attempt rows the
gateway reads. Printed: client CPU (``time.process_time``: the pool, psycopg and the event loop,
not PostgreSQL) per delivery, the best of
``--repeats``: what a transaction's fixed cost and a statement's cost are at each batch size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvloop  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from bench.support import embedded_database  # noqa: E402
from gateway.store.db import Database  # noqa: E402

TEXT_COLUMNS, TIME_COLUMNS, PHASES = 12, 16, 3
_TIMES = ", ".join(f"now() AS t{i}" for i in range(TIME_COLUMNS))
ONE = "SELECT " + ", ".join(f"%(p{i})s::text AS c{i}" for i in range(TEXT_COLUMNS)) + ", " + _TIMES
SET = ("SELECT u.n, " + ", ".join(f"u.x ->> 'p{i}' AS c{i}" for i in range(TEXT_COLUMNS)) + ", " + _TIMES
       + " FROM jsonb_array_elements(%(units)s::jsonb) WITH ORDINALITY AS u (x, n)")


async def batch(db: Database, size: int, mode: str, params: dict[str, str]) -> None:
    async with db.transaction() as conn:
        for _ in range(PHASES):
            if mode == "each":
                cursors = [await conn.execute(ONE, params) for _ in range(size)]
                for cursor in cursors:
                    await cursor.fetchone()
            else:
                await (await conn.execute(SET, {"units": Jsonb([params] * size)})).fetchall()


async def measure(url: str, sizes: list[int], deliveries: int, repeats: int) -> None:
    params = {f"p{i}": f"value-{i}" for i in range(TEXT_COLUMNS)}
    db = await Database.open(url, size=1)
    try:
        print(f"{'batch':>5} {'each us':>8} {'set us':>7}   client CPU per delivery, {PHASES} phases")
        for size in sizes:
            figures = {}
            for mode in ("each", "set"):
                best = float("inf")
                for _ in range(repeats):
                    started, done = time.process_time(), 0
                    while done < deliveries:
                        await batch(db, size, mode, params)
                        done += size
                    best = min(best, (time.process_time() - started) / done * 1e6)
                figures[mode] = best
            print(f"{size:>5} {figures['each']:>8.0f} {figures['set']:>7.0f}", flush=True)
    finally:
        await db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,2,3,5,8", help="batch sizes, comma-separated")
    parser.add_argument("--deliveries", type=int, default=600, help="deliveries per measurement")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with embedded_database() as (url, _):
        uvloop.run(measure(url, [int(size) for size in args.batches.split(",")], args.deliveries, args.repeats))


if __name__ == "__main__":
    main()
