"""Where a checkout's CPU goes: the gateway's ASGI app called in this process, one checkout at a
time, phase by phase and under ``cProfile.Profile(time.process_time)`` (bench/README.md,
"Where a checkout's time goes").

    python bench/checkout_profile.py [--checkouts 400] [--profiled 400] [--top 45] [--dump PATH]

An embedded PostgreSQL and CardCo (``provider_fake.app``) under its own uvicorn on loopback, as in
bench/checkout.py; the gateway is the real app with its real services and a signing key, called
through its ASGI interface without uvicorn (so HTTP parsing is not in these figures; bench/checkout.py
measures the whole process). Printed: the process CPU and wall time per checkout without the
profiler, with the CPU of each phase (``time.process_time()`` around it), then the cProfile of
``--profiled`` further checkouts (0: none, e.g. under py-spy), by own time and by inclusive time.
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
from gateway.auth.tokens import Tokens  # noqa: E402
from gateway.effects.certify import Certifier  # noqa: E402
from gateway.http import orders  # noqa: E402
from gateway.logs import configure_logging  # noqa: E402
from gateway.payments.attempts import Attempts  # noqa: E402
from gateway.payments.checkout import Checkout  # noqa: E402
from gateway.payments.client import PaymentClient  # noqa: E402
from gateway.services import Services  # noqa: E402
from gateway.settings import load_settings  # noqa: E402

WARM_UP = 50
PHASES = (  # (owner, coroutine function, label), in the order a checkout runs them
    (Tokens, "authenticate", "authentication"),
    (Attempts, "get_or_create_live", "1st transaction (NotStarted, effect record)"),
    (Attempts, "mark_started", "2nd transaction (Started, send gate)"),
    (PaymentClient, "create_payment", "CardCo call (httpx)"),
    (Checkout, "_record", "3rd transaction (outcome, certificate, extensions)"),
    (Certifier, "issue", "  of which the certificate"),
    (orders, "_status_response", "the response"),
)
phase_cpu: dict[str, float] = dict.fromkeys((label for *_, label in PHASES), 0.0)


def time_phases() -> None:
    """Wrap each phase so its CPU (``time.process_time``, the awaits included: nothing else runs
    in this process meanwhile) adds up in ``phase_cpu``."""
    for owner, name, label in PHASES:
        def timed(original: Any, label: str) -> Any:
            async def phase(*args: Any, **kwargs: Any) -> Any:
                started = time.process_time()
                try:
                    return await original(*args, **kwargs)
                finally:
                    phase_cpu[label] += time.process_time() - started
            return phase
        setattr(owner, name, timed(getattr(owner, name), label))


async def profile(url: str, cardco: str, token: str, count: int,
                  profiled: int) -> tuple[float, float, cProfile.Profile]:
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
        phase_cpu.update(dict.fromkeys(phase_cpu, 0.0))
        cpu, wall = time.process_time(), time.perf_counter()
        for n in range(WARM_UP, WARM_UP + count):
            await checkout(f"P-{n + 1}")
        cpu, wall = (time.process_time() - cpu) / count, (time.perf_counter() - wall) / count
        timed = dict(phase_cpu)
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        for n in range(WARM_UP + count, WARM_UP + count + profiled):
            await checkout(f"P-{n + 1}")
        profiler.disable()
    finally:
        await services.close()
    if set(statuses) != {200}:
        raise RuntimeError(f"not every checkout answered 200: {sorted(set(statuses))}")
    phase_cpu.update(timed)  # the timed checkouts' phases, not the profiled ones'
    return cpu, wall, profiler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkouts", type=int, default=400, help="checkouts timed phase by phase")
    parser.add_argument("--profiled", type=int, default=400, help="further checkouts under cProfile (0: none)")
    parser.add_argument("--top", type=int, default=45, help="functions listed per ordering")
    parser.add_argument("--dump", type=Path, help="also write the pstats dump here")
    args = parser.parse_args()
    with embedded_database() as (url, work):
        insert_orders(url, "P-", WARM_UP + args.checkouts + args.profiled)
        token = asyncio.run(customer_token(url))
        config = work / "cardco.json"
        config.write_text('{"accounts": [{"id": "cardco:acct_store:test", "api_key": "ck_bench"}]}')
        with uvicorn(["provider_fake.app:app"], {"CARDCO_CONFIG": str(config)}) as cardco:
            progress(f"{WARM_UP} checkouts to warm up, {args.checkouts} timed, {args.profiled} profiled")
            time_phases()
            cpu, wall, profiler = uvloop.run(profile(url, cardco, token, args.checkouts, args.profiled))
    print(f"\ncheckout in process (no uvicorn): {cpu * 1e6:.0f} us CPU, {wall * 1e3:.2f} ms wall per checkout "
          "(one at a time, without the profiler)\n")
    for label, seconds in phase_cpu.items():
        print(f"  {label:46} {seconds * 1e6 / args.checkouts:7.0f} us")
    rest = cpu - sum(seconds for label, seconds in phase_cpu.items() if not label.startswith(" ")) / args.checkouts
    print(f"  {'the rest (routing, envelope, JSON)':46} {rest * 1e6:7.0f} us\n")
    if not args.profiled:
        return
    if args.dump:
        profiler.dump_stats(args.dump)
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(args.top)
        print(out.getvalue().strip() + "\n")


if __name__ == "__main__":
    main()
