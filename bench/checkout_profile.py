"""Where a checkout's CPU goes: the gateway's ASGI app called in this process, one checkout at a
time, under ``cProfile.Profile(time.process_time)`` (issue 13; bench/README.md, "Where the time
goes").

    python bench/checkout_profile.py [--checkouts 400] [--top 45] [--dump PATH]

An embedded PostgreSQL and CardCo (``provider_fake.app``) under its own uvicorn on loopback, as in
bench/checkout.py; the gateway is the real app with its real services and a signing key, called
through its ASGI interface without uvicorn (so HTTP parsing is not in these figures; bench/checkout.py
measures the whole process). Printed: the process CPU and wall time per checkout without the
profiler, then the profile of as many further checkouts, by own time and by inclusive time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.checkout import customer_token, gateway_env  # noqa: E402
from bench.support import embedded_database, insert_orders, progress, uvicorn  # noqa: E402
from gateway.app import create_app  # noqa: E402
from gateway.logs import configure_logging  # noqa: E402
from gateway.services import Services  # noqa: E402
from gateway.settings import load_settings  # noqa: E402

WARM_UP = 50


async def profile(url: str, cardco: str, token: str, count: int) -> tuple[float, float, cProfile.Profile]:
    settings = load_settings(gateway_env(url, cardco))
    configure_logging(settings.log_format, "warning")
    services = await Services.open(settings)
    app = create_app(settings, services=services)
    headers = [(b"host", b"gateway.bench"), (b"authorization", f"Bearer {token}".encode()),
               (b"content-length", b"0")]
    statuses: list[int] = []

    async def checkout(order_id: str) -> None:
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": f"/v1/orders/{order_id}/payment", "raw_path": f"/v1/orders/{order_id}/payment".encode(),
            "query_string": b"", "root_path": "", "headers": headers, "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 50000), "app": app}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(scope, receive, send)

    try:
        for n in range(WARM_UP):
            await checkout(f"P-{n + 1}")
        cpu, wall = time.process_time(), time.perf_counter()
        for n in range(WARM_UP, WARM_UP + count):
            await checkout(f"P-{n + 1}")
        cpu, wall = (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for n in range(WARM_UP + count, WARM_UP + 2 * count):
            await checkout(f"P-{n + 1}")
        profiler.disable()
    finally:
        await services.close()
    if set(statuses) != {200}:
        raise RuntimeError(f"not every checkout answered 200: {sorted(set(statuses))}")
    return cpu, wall, profiler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkouts", type=int, default=400, help="checkouts timed, and as many profiled")
    parser.add_argument("--top", type=int, default=45, help="functions listed per ordering")
    parser.add_argument("--dump", type=Path, help="also write the pstats dump here")
    args = parser.parse_args()
    with embedded_database() as (url, work):
        insert_orders(url, "P-", WARM_UP + 2 * args.checkouts)
        token = asyncio.run(customer_token(url))
        config = work / "cardco.json"
        config.write_text('{"accounts": [{"id": "cardco:acct_store:test", "api_key": "ck_bench"}]}')
        with uvicorn(["provider_fake.app:app"], {"CARDCO_CONFIG": str(config)}) as cardco:
            progress(f"{WARM_UP} checkouts to warm up, {args.checkouts} timed, {args.checkouts} profiled")
            cpu, wall, profiler = uvloop.run(profile(url, cardco, token, args.checkouts))
    print(f"\ncheckout in process (no uvicorn): {cpu * 1e6:.0f} us CPU, {wall * 1e3:.2f} ms wall per checkout "
          "(one at a time, without the profiler)\n")
    if args.dump:
        profiler.dump_stats(args.dump)
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.total_tt /= args.checkouts  # type: ignore[attr-defined]
        stats.sort_stats(order).print_stats(args.top)
        print(out.getvalue().replace("function calls", "function calls in total").strip() + "\n")


if __name__ == "__main__":
    main()
