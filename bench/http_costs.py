"""httpx's client-side CPU per delivery, by pool layout (bench/README.md, "Where the time goes"):
signed deliveries POSTed to bench/sink_app.py under uvicorn on loopback, ``--lanes`` of them in
flight at a time, in each of these ways, CPU (``time.process_time``) of this process only:

- ``one client, lanes at once``: one ``httpx.AsyncClient`` with a keep-alive connection per lane
  (the dispatcher's client before the delivery lanes of docs/decisions/0052), ``--lanes`` concurrent POSTs per round;
- ``one client, one at a time``: the same client, one POST after another (no pool contention);
- ``a client per lane``: one single-connection httpx client per lane, each lane posting one
  delivery after another, all lanes at once (the delivery lanes of docs/decisions/0052);
- ``the outbox's sink pool``: ``gateway.outbox.sinks.sink_transport``, aiohttp's pool for the
  merchant sink (docs/decisions/0077), the lanes posting through it (the dispatcher now).

    python bench/http_costs.py [--lanes 50] [--requests 3000] [--profile WAY]

``--profile WAY`` (a way's number, from 1) also prints that way's cProfile (CPU timer) by
cumulative time: where httpx spends it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import httpx
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import progress, uvicorn  # noqa: E402
from gateway.domain.outbound_webhooks import sign_v1  # noqa: E402
from gateway.outbox.sinks import MERCHANT, sink_transport  # noqa: E402

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BODY = (b'{"attempt_id":null,"dedup_key":"attempt:1:order-confirmation","escalation_id":null,'
        b'"kind":"order-confirmation","payload":{"position":1}}')


def headers() -> dict[str, str]:
    timestamp = int(time.time())
    return {"content-type": "application/json", "user-agent": "paygate-outbox/1",
            "webhook-id": "attempt:1:order-confirmation", "webhook-timestamp": str(timestamp),
            "webhook-signature": sign_v1(SECRET, "attempt:1:order-confirmation", timestamp, BODY)}


async def post(client: httpx.AsyncClient, url: str) -> None:
    response = await client.post(url, content=BODY, headers=headers())
    if response.status_code != 204:
        raise RuntimeError(f"sink answered {response.status_code}")


async def send(transport: httpx.AsyncBaseTransport, url: httpx.URL) -> None:
    response = await transport.handle_async_request(httpx.Request("POST", url, content=BODY, headers=headers(),
                                                                  extensions=MERCHANT))
    await response.aclose()
    if response.status_code != 204:
        raise RuntimeError(f"sink answered {response.status_code}")


Measured = Callable[[], AbstractContextManager[None]]


def ways(url: str, lanes: int, rounds: int) -> list[tuple[str, Callable[[Measured], Awaitable[None]]]]:
    """Each way builds its clients, warms them up with one round, then runs ``rounds`` rounds of
    ``lanes`` deliveries inside ``measured()``."""
    context = httpx.create_ssl_context()

    async def shared_at_once(measured: Measured) -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=lanes)
        async with httpx.AsyncClient(timeout=httpx.Timeout(None), limits=limits, verify=context) as client:
            await asyncio.gather(*(post(client, url) for _ in range(lanes)))
            with measured():
                for _ in range(rounds):
                    await asyncio.gather(*(post(client, url) for _ in range(lanes)))

    async def shared_one_at_a_time(measured: Measured) -> None:
        async with httpx.AsyncClient(timeout=httpx.Timeout(None), verify=context) as client:
            await post(client, url)
            with measured():
                for _ in range(rounds * lanes):
                    await post(client, url)

    async def client_per_lane(measured: Measured) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        clients = [httpx.AsyncClient(timeout=httpx.Timeout(None), limits=limits, verify=context) for _ in range(lanes)]

        async def lane(client: httpx.AsyncClient, count: int) -> None:
            for _ in range(count):
                await post(client, url)

        await asyncio.gather(*(lane(client, 1) for client in clients))
        with measured():
            await asyncio.gather(*(lane(client, rounds) for client in clients))
        for client in clients:
            await client.aclose()

    async def sinks_transport(measured: Measured) -> None:
        async with sink_transport(context) as transport:
            target = httpx.URL(url)

            async def lane(count: int) -> None:
                for _ in range(count):
                    await send(transport, target)

            await asyncio.gather(*(lane(1) for _ in range(lanes)))
            with measured():
                await asyncio.gather(*(lane(rounds) for _ in range(lanes)))

    return [(f"one client, {lanes} at once", shared_at_once), ("one client, one at a time", shared_one_at_a_time),
            (f"a client per lane, {lanes} lanes", client_per_lane),
            (f"the outbox's sink pool (aiohttp), {lanes} at once", sinks_transport)]


def measure(url: str, lanes: int, requests: int, profile: int | None, loop: str) -> None:
    rounds = requests // lanes
    sent = rounds * lanes
    print(f"\nhttpx {httpx.__version__}, {loop} event loop: client CPU per delivery to bench/sink_app.py, "
          f"{sent} deliveries per way\n")
    print(f"{'way':<34} {'CPU us':>8} {'wall us':>8}")
    for number, (name, way) in enumerate(ways(url, lanes, rounds), start=1):
        figures: dict[str, float] = {}

        @contextmanager
        def measured(number: int = number, figures: dict[str, float] = figures) -> Iterator[None]:
            profiler = cProfile.Profile(time.process_time) if number == profile else None
            cpu, wall = time.process_time(), time.perf_counter()
            if profiler:
                profiler.enable()
            yield
            if profiler:
                profiler.disable()
            figures["cpu"], figures["wall"] = time.process_time() - cpu, time.perf_counter() - wall
            if profiler:
                figures["profile"] = 1
                pstats.Stats(profiler).sort_stats("tottime").print_stats(30)

        runner = asyncio.run if loop == "asyncio" else uvloop.run
        runner(way(measured))
        print(f"{name:<34} {figures['cpu'] / sent * 1e6:>8.0f} {figures['wall'] / sent * 1e6:>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lanes", type=int, default=50)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--profile", type=int, help="print this way's cProfile (1 to 4)")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    args = parser.parse_args()
    with uvicorn(["bench.sink_app:app"], {}) as sink:
        progress(f"sink at {sink}")
        measure(f"{sink}/merchant", args.lanes, args.requests, args.profile, args.loop)


if __name__ == "__main__":
    main()
