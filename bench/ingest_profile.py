"""The gateway's own CPU per verified notification, one at a time or several at once, in one
process (bench/README.md "Where the time goes"): no HTTP server, no load generator, no other
client sharing the cores.

    python bench/ingest_profile.py [--count 2000] [--profile /tmp/ingest.pstats] [--profile-mix duplicates] [--top 40]
                                   [--concurrency 8] [--certified]

An embedded PostgreSQL holds Started attempts (as bench/notifications.py prepares them); the
gateway's ASGI app (create_app with its real services) is called directly with each pre-signed
CardCo ``payment.succeeded`` request, then with the same requests again (duplicates); one at a
time, or ``--concurrency`` at once (more than the lanes in flight: pipelined group-commit batches,
docs/decisions/0080); with ``--certified``, for attempts the product started, each success
certified with a signing key, as production does (bench/notifications.py ``--certified``). Printed: CPU
microseconds per request of this process (``time.process_time``: the app, psycopg and the event
loop, not PostgreSQL), and with ``--profile`` a cProfile (CPU timer) of the unique requests (or,
with ``--profile-mix duplicates``, of their duplicates), written as pstats and summarised by
cumulative and own time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.notifications import gateway_env, prepare_attempts, records_for, signed_lines  # noqa: E402
from bench.support import embedded_database, progress  # noqa: E402


async def call(app: Any, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> int:
    """One request through the ASGI app as uvicorn would make it; the response status."""
    status = 0
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
    await app(scope, receive, send)
    return status


async def run(url: str, count: int, profile: Path | None, profiled_mix: str, top: int, concurrency: int,
              certified: bool) -> None:
    os.environ.update(gateway_env(url, signing=certified))
    from gateway.app import create_app
    from gateway.collector import settle_collector
    from gateway.logs import configure_logging
    from gateway.services import Services
    from gateway.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_format, settings.log_level)
    services = await Services.open(settings)
    app = create_app(settings, services=services)
    settle_collector()  # as the web process does (gateway.app.app_from_environment)
    requests = []
    for line in signed_lines("P-", count, False):
        path, msg_id, timestamp, signature, body = line.split("\t")
        requests.append((path, [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()), (b"webhook-id", msg_id.encode()),
                                (b"webhook-timestamp", timestamp.encode()),
                                (b"webhook-signature", signature.encode())], body.encode()))
    try:
        for mix in ("unique", "duplicates"):
            profiler = cProfile.Profile(time.process_time) if profile and mix == profiled_mix else None
            started = time.process_time()
            if profiler:
                profiler.enable()
            for start in range(0, count, concurrency):  # `concurrency` requests in flight at once
                statuses = await asyncio.gather(*(call(app, path, headers, body)
                                                  for path, headers, body in requests[start:start + concurrency]))
                if any(status != 204 for status in statuses):
                    raise RuntimeError(f"{mix}: statuses {sorted(set(statuses))}")
            if profiler:
                profiler.disable()
            cpu_us = (time.process_time() - started) * 1e6 / count
            print(f"{mix}: {cpu_us:,.0f} us CPU per notification ({count}, {concurrency} at a time"
                  f"{', under cProfile' if profiler else ''})")
            if profiler and profile:
                profiler.dump_stats(profile)
                stats = pstats.Stats(str(profile))
                stats.sort_stats("cumulative").print_stats(top)
                stats.sort_stats("tottime").print_stats(top)
    finally:
        await services.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--profile", type=Path, help="write a cProfile (CPU timer) of one mix's requests here")
    parser.add_argument("--profile-mix", choices=("unique", "duplicates"), default="unique")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=1,
                        help="requests in flight at once (above the lanes, deliveries go in group-commit batches)")
    parser.add_argument("--certified", action="store_true",
                        help="notify attempts the product started (effect records; a signing key), as in production")
    args = parser.parse_args()
    with embedded_database() as (url, _work):
        prepare_attempts(url, "P-", args.count, records=records_for(args.certified))
        progress(f"{args.count} Started attempts prepared")
        import uvloop

        uvloop.run(run(url, args.count, args.profile, args.profile_mix, args.top, args.concurrency, args.certified))


if __name__ == "__main__":
    main()
