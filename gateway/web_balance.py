"""Web workers share one listening socket's connections evenly: the worker holding the fewest open
connections accepts the next one (docs/decisions/0081).

With ``web_workers`` > 1, uvicorn binds one socket and every worker process serves on it. Each
worker's event loop accepts every connection waiting when it wakes, so a burst of new connections
(a provider opening its keep-alive connections at once) goes mostly to whichever woke first: 16
senders split 14/2 or 12/4 as often as 8/8, and the crowded worker's queue (its batches, its
event loop on one core) is every one of its senders' latency while the other worker idles. Here a
worker accepts only while no live worker holds fewer open connections than it does (least
connections first, as Envoy's "exact" connection balancer and nginx's accept mutex do), so
connections that arrive together are dealt out in turn and the split stays within one.
Connections that arrived before every worker was accepting (a provider reconnecting while the web
process starts) would stay where they landed: a worker holding two or more connections more than
another live worker answers its next response with ``Connection: close`` (one per
``SHED_CHECK_S`` at most, so the table catches up between two), and the client's reconnection is
dealt out as above (:func:`closes_after_response`, read by the request envelope).

:class:`ConnectionShares` is the table the workers read: one slot per worker in a small file every
worker maps (its path in ``PAYGATE_WEB_SHARES``, made by the ``web`` process before it starts
them), each slot written only by its worker. :class:`BalancedAcceptor` is what a worker serves the
shared socket with: a thread accepts, when the table lets it, and hands each connection to the
event loop, which runs uvicorn's own protocol on it. :func:`new_event_loop` is the worker's loop
(uvloop's, as before), whose ``create_server`` on a shared socket returns that acceptor.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import mmap
import os
import select
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
import uvloop

log = structlog.get_logger("gateway.web")
SHARES_ENV = "PAYGATE_WEB_SHARES"
_SLOT = struct.Struct("qq")  # (worker pid, open connections); pid 0: a free slot
ACCEPT_WAIT_S = 0.05  # how long the accepting thread waits for a connection before it publishes its count again
GATE_POLL_S = 0.01  # how often a worker holding more than another looks again
SHED_CHECK_S = 0.1  # how often a worker asks whether it holds too many, so sheds at most one per interval
_serving: BalancedAcceptor | None = None  # this worker process's acceptor, once it serves a shared socket


class ConnectionShares:
    """The open connections of each live web worker, in a file every worker maps. A worker writes
    only its own slot; slots are claimed and freed under an exclusive lock on the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("r+b") as file:
            self._map = mmap.mmap(file.fileno(), 0)
        self.slots = len(self._map) // _SLOT.size

    @classmethod
    def create(cls, workers: int, directory: str | None = None) -> ConnectionShares:
        """A table for ``workers`` workers, with room for as many replacements started while the
        workers they replace still run (uvicorn's restarts)."""
        handle, name = tempfile.mkstemp(prefix="paygate-web-shares-", dir=directory)
        with os.fdopen(handle, "wb") as file:
            file.write(bytes(_SLOT.size * (2 * workers + 2)))
        return cls(Path(name))

    @classmethod
    def from_environment(cls) -> ConnectionShares | None:
        path = os.environ.get(SHARES_ENV)
        return cls(Path(path)) if path else None

    def claim(self, owner: int) -> int:
        """A slot for ``owner`` (a worker's pid): a free one, or one whose worker has died."""
        with self._locked():
            for index in range(self.slots):
                pid, _ = self._read(index)
                if pid == 0 or not _alive(pid):
                    self._write(index, owner, 0)
                    return index
        raise RuntimeError(f"no free slot among {self.slots} in {self.path}")

    def release(self, index: int) -> None:
        with self._locked():
            self._write(index, 0, 0)

    def publish(self, index: int, owner: int, open_connections: int) -> None:
        self._write(index, owner, open_connections)

    def holds_more_than_another(self, index: int, by: int = 1) -> bool:
        """Whether a live worker other than slot ``index``'s holds at least ``by`` fewer open
        connections. A slot whose worker has died (killed: it freed nothing) is freed here, so it
        never holds others back."""
        _, mine = self._read(index)
        for other in range(self.slots):
            pid, count = self._read(other)
            if other == index or pid == 0 or mine - count < by:
                continue
            if _alive(pid):
                return True
            with self._locked():
                if self._read(other)[0] == pid:
                    self._write(other, 0, 0)
        return False

    def counts(self) -> dict[int, int]:
        """Open connections by worker pid (live or not yet freed slots)."""
        return {pid: count for pid, count in map(self._read, range(self.slots)) if pid != 0}

    def close(self) -> None:
        self._map.close()

    def remove(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def _read(self, index: int) -> tuple[int, int]:
        pid, count = _SLOT.unpack_from(self._map, index * _SLOT.size)
        return int(pid), int(count)

    def _write(self, index: int, pid: int, count: int) -> None:
        _SLOT.pack_into(self._map, index * _SLOT.size, pid, count)

    @contextlib.contextmanager
    def _locked(self) -> Any:
        with self.path.open("rb") as file:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(file.fileno(), fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


ProtocolFactory = Callable[[], asyncio.Protocol]


class BalancedAcceptor:
    """Serves ``sock`` (listening, shared with the other workers) to ``loop``: a thread accepts
    while :meth:`ConnectionShares.holds_more_than_another` is false for this worker, and the loop
    runs ``protocol_factory``'s protocol on each accepted connection. Stands where uvicorn keeps
    the asyncio server it would have made (``close``, ``wait_closed``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol_factory: ProtocolFactory,
                 shares: ConnectionShares, owner: int | None = None) -> None:
        self._loop = loop
        self._sock = sock
        self._factory = protocol_factory
        self._shares = shares
        self._owner = os.getpid() if owner is None else owner
        self._slot = shares.claim(self._owner)
        # Each counter has one writer: the thread counts what it accepts, the loop what closed.
        self._accepted = 0
        self._closed = 0
        self._closing = threading.Event()
        self._adopting: set[asyncio.Task[Any]] = set()
        self._shed_checked = 0.0
        sock.setblocking(False)
        self._thread = threading.Thread(target=self._accept, name="paygate-accept", daemon=True)
        self._thread.start()

    @property
    def open_connections(self) -> int:
        return self._accepted - self._closed

    def sheds(self) -> bool:
        """Whether the connection answered now should close after its response: this worker holds
        two or more open connections more than another live worker. Asked of the table at most
        once per ``SHED_CHECK_S`` (from the event loop's thread, between responses)."""
        now = time.monotonic()
        if now - self._shed_checked < SHED_CHECK_S:
            return False
        self._shed_checked = now
        return self._shares.holds_more_than_another(self._slot, by=2)

    def close(self) -> None:
        """Accept nothing more; the connections already open are uvicorn's to close."""
        self._closing.set()

    async def wait_closed(self) -> None:
        await asyncio.to_thread(self._thread.join)

    def _accept(self) -> None:
        """Wait for a connection without taking it; once one waits, take it only if no live worker
        holds fewer (asked again after the wait: the table may have changed meanwhile). A worker
        that holds more leaves it to the one that holds fewest, which woke for it too."""
        ready = select.poll()
        ready.register(self._sock.fileno(), select.POLLIN)
        try:
            while not self._closing.is_set():
                self._shares.publish(self._slot, self._owner, self.open_connections)
                if self._shares.holds_more_than_another(self._slot):
                    self._closing.wait(GATE_POLL_S)
                    continue
                if not ready.poll(ACCEPT_WAIT_S * 1000) or self._shares.holds_more_than_another(self._slot):
                    continue
                try:
                    conn, _ = self._sock.accept()
                except BlockingIOError:  # another worker took it
                    continue
                except OSError as error:  # the socket closed at shutdown, or out of descriptors
                    if self._closing.is_set():
                        break
                    log.warning("web_accept_failed", error_type=type(error).__name__, error=str(error))
                    self._closing.wait(GATE_POLL_S)
                    continue
                self._accepted += 1
                self._loop.call_soon_threadsafe(self._adopt, conn)
        finally:
            self._shares.release(self._slot)

    def _adopt(self, conn: socket.socket) -> None:
        task = self._loop.create_task(self._connect(conn))
        self._adopting.add(task)
        task.add_done_callback(self._adopting.discard)

    async def _connect(self, conn: socket.socket) -> None:
        counted = False

        def closed() -> None:
            nonlocal counted
            if not counted:
                counted = True
                self._closed += 1

        def protocol() -> asyncio.Protocol:
            made = self._factory()
            lost = made.connection_lost

            def connection_lost(error: Exception | None) -> None:
                closed()
                lost(error)
            made.connection_lost = connection_lost  # type: ignore[assignment]  # counted, then uvicorn's own
            return made

        try:
            conn.setblocking(False)
            await self._loop.connect_accepted_socket(protocol, conn)
        except Exception as error:  # the peer went away before the loop took it
            closed()
            conn.close()
            log.info("web_connection_not_adopted", error_type=type(error).__name__)


class BalancedLoop(uvloop.Loop):
    """uvloop's event loop, whose ``create_server`` on a socket shared by web workers (the
    ``web`` process made :class:`ConnectionShares` for them) serves it with a
    :class:`BalancedAcceptor`; anything else as uvloop does."""

    # One signature for asyncio's overloads: what is not a shared socket goes to uvloop unchanged.
    async def create_server(  # type: ignore[override]
            self, protocol_factory: ProtocolFactory, *args: Any, **kwargs: Any) -> Any:
        sock = kwargs.get("sock")
        shares = ConnectionShares.from_environment()
        if sock is None or shares is None or kwargs.get("ssl") is not None:
            return await super().create_server(protocol_factory, *args, **kwargs)
        sock.listen(kwargs.get("backlog", 100))  # uvicorn binds the socket; the server listens on it
        global _serving
        _serving = BalancedAcceptor(self, sock, protocol_factory, shares)
        return _serving


def closes_after_response() -> bool:
    """Whether the response being sent should close its connection, so that the client reconnects
    to a worker holding fewer (:meth:`BalancedAcceptor.sheds`); never in a process that does not
    serve a shared socket."""
    return _serving is not None and _serving.sheds()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The web workers' event loop (uvicorn's ``loop`` setting names this function)."""
    return BalancedLoop()
