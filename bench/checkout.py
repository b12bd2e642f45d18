"""Benchmark: checkouts per second, the gateway's own latency, and database round trips per
checkout (issue 4; bench/README.md).

    python bench/checkout.py [--duration 10] [--connections 16] [--orders 20000]

The real gateway app (Starlette, auth, the checkout flow, the attempts repository) runs in this
process on an embedded PostgreSQL; ``--connections`` concurrent clients POST
``/v1/orders/{id}/payment`` for distinct Open orders through httpx's ASGI transport; CardCo answers
immediately, in-process. Each checkout's provider call is timed on its own, so the gateway's own
latency is the total minus the call. Round trips are counted at the driver: every statement outside
a pipeline, every pipeline, every BEGIN/COMMIT, and every pool connection check. The ceiling,
measured in the same run on the same database with the same number of clients: pgbench running the
same three transactions (bench/checkout_txn.sql). A ratio of 1.0 would mean the gateway adds
nothing to the database's work.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import respx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import ACCOUNT, BENCH, RoundTrips, embedded_database, insert_orders, pgbench  # noqa: E402
from gateway.app import create_app  # noqa: E402
from gateway.clock import SystemClock  # noqa: E402
from gateway.logs import configure_logging  # noqa: E402
from gateway.services import Services  # noqa: E402
from gateway.settings import build_settings  # noqa: E402
from provider_fake import CardCo, CardCoConfig  # noqa: E402
from provider_fake.config import Account  # noqa: E402
from provider_fake.inprocess import mount  # noqa: E402

CARDCO_URL = "http://cardco.bench"
MAX_DURATION_S = 20


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def gateway_run(url: str, connections: int, duration: float, orders: int, trips: RoundTrips) -> dict[str, float]:
    settings = build_settings({
        "database_url": url, "redis_url": "redis://127.0.0.1:1/0", "token_pepper": "bench", "log_level": "warning",
        "db_pool_size": connections,
        # A signing key, so each confirmed effect is certified as in production (seed 001).
        "certificate_keys": [{"key_id": "bench-1", "active": True,
                              "private_key": base64.b64encode(secrets.token_bytes(32)).decode()}],
        "provider_accounts": [{"id": ACCOUNT, "base_url": CARDCO_URL, "api_key": "ck_bench",
                               "webhook_endpoint_id": "cardco-test"}]})
    cardco = CardCo(CardCoConfig(accounts=[Account(id=ACCOUNT, api_key="ck_bench")]))
    services = await Services.open(settings, SystemClock())
    provider_s: list[float] = []
    create_payment = services.payments.create_payment

    async def timed_call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await create_payment(*args, **kwargs)
        finally:
            provider_s.append(time.perf_counter() - started)

    services.payments.create_payment = timed_call  # type: ignore[method-assign]
    token = await services.tokens.create("customer", "cus_bench")
    app = create_app(settings, services=services)
    totals: list[float] = []
    next_order = itertools.count(1)
    deadline = time.perf_counter() + duration
    try:
        with respx.mock(assert_all_called=False) as router:
            mount(router, cardco, CARDCO_URL)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway.bench",
                                         headers={"Authorization": f"Bearer {token}"}) as http:
                async def client() -> None:
                    while time.perf_counter() < deadline:
                        number = next(next_order)
                        if number > orders:
                            return
                        started = time.perf_counter()
                        response = await http.post(f"/v1/orders/ORD-{number}/payment")
                        if response.status_code != 200:
                            raise RuntimeError(f"checkout answered {response.status_code}: {response.text}")
                        totals.append(time.perf_counter() - started)

                trips.count = 0
                began = time.perf_counter()
                await asyncio.gather(*(client() for _ in range(connections)))
                elapsed = time.perf_counter() - began
    finally:
        await services.close()
    own = [total - call for total, call in zip(totals, provider_s, strict=False)]
    return {"rate": len(totals) / elapsed, "count": len(totals), "p50": percentile(totals, 0.5) * 1000,
            "p99": percentile(totals, 0.99) * 1000, "own_p50": percentile(own, 0.5) * 1000,
            "own_p99": percentile(own, 0.99) * 1000, "provider_p50": statistics.median(provider_s) * 1000,
            "round_trips": trips.count / max(len(totals), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help=f"seconds per run (at most {MAX_DURATION_S})")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--orders", type=int, default=20_000, help="Open orders prepared for each side")
    args = parser.parse_args()
    duration = min(args.duration, MAX_DURATION_S)
    configure_logging("json", "warning")
    trips = RoundTrips()
    trips.install()
    with embedded_database() as (url, _):
        for prefix in ("ORD-", "PGB-"):
            insert_orders(url, prefix, args.orders)
        ceiling = pgbench(url, BENCH / "checkout_txn.sql", args.connections, duration,
                          {"orders": args.orders, "account": ACCOUNT})
        result = asyncio.run(gateway_run(url, args.connections, duration, args.orders, trips))
    print(f"\ncheckout (POST /v1/orders/{{id}}/payment, CardCo answering at once), {args.connections} clients, "
          f"{duration} s\n")
    print(f"  checkouts/s            {result['rate']:>9.0f}   ({result['count']:.0f} in the run)")
    print(f"  latency p50 / p99      {result['p50']:>9.2f} / {result['p99']:.2f} ms")
    print(f"  gateway's own p50/p99  {result['own_p50']:>9.2f} / {result['own_p99']:.2f} ms  (total minus the "
          f"provider call, p50 {result['provider_p50']:.2f} ms)")
    print(f"  driver ops/checkout    {result['round_trips']:>9.1f}   (statements outside a pipeline, pipelines, "
          "BEGIN/COMMIT;\n                                     transactions run in pipeline mode, so several "
          "share one round trip)")
    print(f"  pgbench, 3 txns        {ceiling:>9.0f} tps  (bench/checkout_txn.sql, same clients)")
    print(f"  ratio                  {result['rate'] / ceiling:>9.2f}")


if __name__ == "__main__":
    main()
