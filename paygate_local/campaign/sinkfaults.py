"""A sink that fails ("Merchant and alert sinks: answering 5xx, hanging past the delivery
budget, and down for a while, long enough that some rows dead-letter").

The gateway's ``merchant_sink_url`` and ``alert_sink_url`` point at one :class:`SinkLink` each, a
TCP relay in the campaign's process in front of the demo sinks (``paygate_local.sinks``), which
keep what they received and which the invariants read directly. A link is in one mode at a time:
``ok`` relays every byte, ``error`` answers every request ``503`` itself, ``hang`` accepts and
never answers, ``down`` listens no more (connections are refused). Every change of mode cuts the
connections open at that moment, as a failing or restarted sink does, so the gateway's kept-alive
connections meet the new mode with their next request. Each fault is counted, with the seconds
the sink was not ``ok`` (``down_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Literal

from paygate_local.servers import free_port

Mode = Literal["ok", "error", "hang", "down"]
FAULTS: tuple[Mode, ...] = ("error", "hang", "down")
ERROR_ANSWER = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 20\r\n"
                b"connection: close\r\n\r\nsink is unavailable\n")
HEAD_LIMIT = 64 * 1024


class SinkLink:
    """A relay to ``127.0.0.1:upstream_port`` on a port of its own, run on its own thread."""

    def __init__(self, upstream_port: int) -> None:
        self.port = free_port()
        self.mode: Mode = "ok"
        self.counts = dict.fromkeys(FAULTS, 0)
        self.down_s = 0.0
        self._upstream_port = upstream_port
        self._faulty_since: float | None = None
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.Task[None]] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"sink-link-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)

    def set(self, mode: Mode) -> None:
        """Switch to ``mode`` (from any thread): count the fault, cut the open connections."""
        asyncio.run_coroutine_threadsafe(self._switch(mode), self._loop).result(timeout=10)

    def record(self) -> dict[str, float]:
        """``{"errors", "hangs", "downs", "down_s"}``: the faults so far and the seconds not ``ok``."""
        ongoing = time.monotonic() - self._faulty_since if self._faulty_since is not None else 0.0
        return {"errors": self.counts["error"], "hangs": self.counts["hang"], "downs": self.counts["down"],
                "down_s": round(self.down_s + ongoing, 1)}

    def stop(self) -> None:
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._switch("down"), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)

    async def _switch(self, mode: Mode) -> None:
        now = time.monotonic()
        if mode != "ok" and mode != self.mode:
            self.counts[mode] += 1
        if self._faulty_since is not None and mode == "ok":
            self.down_s += now - self._faulty_since
            self._faulty_since = None
        elif self._faulty_since is None and mode != "ok":
            self._faulty_since = now
        self.mode = mode
        for task in list(self._open):
            task.cancel()
        if mode == "down" and self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        elif mode != "down" and self._server is None:
            await self._listen()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._open.add(task)
        try:
            if self.mode == "ok":
                await self._relay(reader, writer)
            elif self.mode == "error":
                await _read_request(reader)
                writer.write(ERROR_ANSWER)
                await writer.drain()
            else:  # hang: read whatever comes, answer nothing, until the client or a switch ends it
                while await reader.read(65536):
                    pass
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass
        finally:
            self._open.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        try:
            pipes = [asyncio.ensure_future(_pipe(reader, upstream_writer)),
                     asyncio.ensure_future(_pipe(upstream_reader, writer))]
            try:
                await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pipe in pipes:
                    pipe.cancel()
        finally:
            upstream_writer.close()


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    while data := await source.read(65536):
        target.write(data)
        await target.drain()


async def _read_request(reader: asyncio.StreamReader) -> None:
    """Read one request's head and its ``content-length`` body, so the answer follows it."""
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > HEAD_LIMIT:
        return
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            await reader.readexactly(int(value.strip() or 0))
