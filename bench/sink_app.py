"""The outbox benchmark's sink (bench/README.md): takes every delivery and remembers its dedup key
in arrival order, nothing else, so the dispatcher, not the sink, is what is measured.
``GET /<name>`` lists what ``POST /<name>`` took, as the demo sinks do (paygate_local/sinks.py);
``GET /_connections`` counts the connections (client addresses) deliveries ever came on.
A raw ASGI app under uvicorn: bench/outbox.py prints its own ceiling, measured with wrk."""

from __future__ import annotations

from typing import Any

import orjson

received: dict[str, list[str]] = {}
clients: set[tuple[str, int]] = set()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    name = scope["path"].strip("/")
    if scope["method"] == "POST":
        clients.add(tuple(scope["client"]))
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        received.setdefault(name, []).append(orjson.loads(body)["dedup_key"] if body else "")
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if name == "_connections":
        document = orjson.dumps({"connections": len(clients)})
    else:
        document = orjson.dumps({"messages": [{"dedup_key": key} for key in received.get(name, [])]})
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": document})
