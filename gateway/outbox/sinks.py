"""The dispatcher's HTTP: one bounded keep-alive pool per sink (docs/decisions/0077, which
replaced the delivery lanes of docs/decisions/0052).

Merchant confirmations go from the ``sink:merchant`` pool and operator alerts from the
``sink:alerts`` pool (``gateway.outbound.pool``), each at most :data:`SINK_CONNECTIONS` connections
kept alive from one delivery to the next: a batch's concurrent deliveries (one per ordering key)
each take a connection of their sink's pool, and a delivery that finds every connection busy waits
for one within its delivery budget. aiohttp's pool hands a connection out and takes it back in
constant time, so one pool carries a batch without the per-connection scans that made httpcore's
pool cost grow with the deliveries in flight (why docs/decisions/0052 had a pool per delivery).
The transport is injected: :func:`sink_transport` in a process, httpx's ASGI or mock transport
(respx) in the tests, which ignore the pool names.
"""

from __future__ import annotations

import ssl

from gateway.outbound import AiohttpTransport, pool

# Connections per sink: two batches' deliveries at once (dispatcher.BATCH_SIZE is 50), so two
# dispatch_outbox actors sharing a worker's event loop do not wait for each other's connections.
SINK_CONNECTIONS = 100
MERCHANT = pool("sink", "merchant")
ALERTS = pool("sink", "alerts")


def sink_transport(verify: ssl.SSLContext | None = None) -> AiohttpTransport:
    """The process's transport for outbox deliveries: aiohttp, a pool per sink, closed with the
    process (the jobs runtime closes it). No timeout: the delivery budget on the injected clock
    cuts a delivery off."""
    return AiohttpTransport(verify=verify, connections=SINK_CONNECTIONS)
