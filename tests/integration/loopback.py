"""An ASGI app served by uvicorn on loopback in the test's own event loop, for tests that need real
HTTP connections (keep-alive, a connection cut mid-answer)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn

from paygate_local.servers import free_port


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """``app`` under uvicorn (h11, no lifespan) on a free loopback port: its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", lifespan="off",
                                           ws="none", http="h11"))
    serving = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving


async def request_body(receive: Any) -> bytes:
    """The whole body of an ASGI request."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body
