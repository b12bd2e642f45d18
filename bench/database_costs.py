"""What PostgreSQL spends per notification and per checkout (the README's "Capacity").

    python bench/database_costs.py [--duration 10] [--clients 8] [--json PATH]

pgbench runs the ceilings' scripts (bench/pgbench_scripts.py ``notification`` and ``checkout``: the
product's own statements in the gateway's transactions) on an embedded PostgreSQL, and for each
this prints transactions per second, the server's CPU per transaction (all its processes: the
backends, reaped when pgbench disconnects, and the background writers, from /proc) and the WAL it
wrote per transaction. The CPU of pgbench itself is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pgbench_scripts  # noqa: E402
from bench.notifications import prepare_attempts  # noqa: E402
from bench.support import embedded_database, insert_orders, pgbench, progress  # noqa: E402

ROWS = 10_000


def server_cpu_seconds(postmaster: int) -> float:
    """The postmaster's own and reaped children's CPU, plus every live child's (Linux /proc)."""
    fields = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(value) for value in fields[11:15])
    for task in Path(f"/proc/{postmaster}/task").iterdir():
        for child in (task / "children").read_text().split():
            with_child = Path(f"/proc/{child}/stat")
            if with_child.exists():
                child_fields = with_child.read_text().rsplit(")", 1)[1].split()
                total += sum(int(value) for value in child_fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def wal_lsn(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    for name in ("notification", "checkout"):
        with embedded_database() as (url, work):  # each on its own fresh database and rows
            postmaster = int((work / "pg" / "postmaster.pid").read_text().split()[0])
            if name == "notification":
                prepare_attempts(url, "PGB-", ROWS, with_payment_id=True)
            else:
                insert_orders(url, "PGB-", ROWS)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
            progress(f"pgbench, {name}, {args.clients} clients")
            cpu, wal = server_cpu_seconds(postmaster), wal_lsn(url)
            tps = pgbench(url, pgbench_scripts.write(name, work), args.clients, args.duration,
                          pgbench_scripts.variables(ROWS, args.clients))
            transactions = max(tps * args.duration, 1)
            figures[name] = {"tps": tps, "server_cpu_us": (server_cpu_seconds(postmaster) - cpu) * 1e6 / transactions,
                             "wal_bytes": (wal_lsn(url) - wal) / transactions}
    print(f"\nPostgreSQL per transaction, pgbench, {args.clients} clients, {args.duration} s each\n")
    for name, f in figures.items():
        print(f"  {name:<13} {f['tps']:>7.0f} tps   server CPU {f['server_cpu_us']:>6.0f} us"
              f"   WAL {f['wal_bytes']:>6.0f} B   per 1,000/s: {f['server_cpu_us'] / 1000:.2f} cores,"
              f" {f['wal_bytes'] / 1e3:.2f} MB/s of WAL")
    if args.json:
        args.json.write_text(json.dumps({"clients": args.clients, "runs": figures}, indent=1) + "\n")


if __name__ == "__main__":
    main()
