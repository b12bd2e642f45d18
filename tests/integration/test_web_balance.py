"""Web workers share one listening socket's connections evenly (gateway/web_balance.py,
docs/decisions/0081): real worker processes, each serving the shared socket on the workers' event
loop (``new_event_loop``'s ``create_server``), and real connections; each connection learns which
worker took it from the first line that worker writes."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import socket
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from gateway.web_balance import SHARES_ENV, ConnectionShares, new_event_loop

WAIT_S = 30  # how long a worker may take to start, or a connection to be taken (a bound, not a timing)


class _Hello(asyncio.Protocol):
    """Says which worker took the connection, then holds it open."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.write(f"{os.getpid()}\n".encode())  # type: ignore[attr-defined]


def _serve(sock: socket.socket, shares_path: str) -> None:
    os.environ[SHARES_ENV] = shares_path
    loop = new_event_loop()
    loop.run_until_complete(loop.create_server(_Hello, sock=sock, backlog=128))
    loop.run_forever()


@contextmanager
def _listening(tmp_path: Path) -> Iterator[tuple[socket.socket, ConnectionShares]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # bound, not listening: as uvicorn hands it to its workers
    shares = ConnectionShares.create(4, directory=str(tmp_path))
    try:
        yield sock, shares
    finally:
        sock.close()
        shares.remove()


@contextmanager
def _worker(sock: socket.socket, shares: ConnectionShares) -> Iterator[multiprocessing.process.BaseProcess]:
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(sock, str(shares.path)), daemon=True)
    process.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while process.pid not in shares.counts():  # poll: the worker has claimed its slot
            assert process.is_alive() and time.monotonic() < deadline, "the worker did not start serving"
            time.sleep(0.02)
        yield process
    finally:
        if process.is_alive():
            process.kill()
        process.join(WAIT_S)


Opened = list[tuple[socket.socket, int]]  # each connection kept open, with the worker that took it


def _connect(sock: socket.socket, count: int, opened: Opened) -> Counter[int]:
    """``count`` connections opened at once (kept open in ``opened``); how many each worker took."""
    address = sock.getsockname()

    def one() -> int:
        conn = socket.create_connection(address, timeout=WAIT_S)
        with conn.makefile("rb") as lines:
            pid = int(lines.readline())
        opened.append((conn, pid))
        return pid

    with ThreadPoolExecutor(count) as pool:
        return Counter(pool.map(lambda _: one(), range(count)))


def _close(opened: Opened, pid: int | None = None) -> None:
    for conn, worker in opened:
        if pid is None or worker == pid:
            conn.close()


def test_connections_arriving_together_go_to_the_worker_holding_fewest(tmp_path: Path) -> None:
    """Worker A holds six connections when B starts; the next six, opened at once, all go to B
    (uvicorn's shared accept would deal them out by who woke first: about half to A)."""
    opened: Opened = []
    with _listening(tmp_path) as (sock, shares), _worker(sock, shares) as a:
        try:
            assert _connect(sock, 6, opened) == {a.pid: 6}
            with _worker(sock, shares) as b:
                assert _connect(sock, 6, opened) == {b.pid: 6}
                assert _connect(sock, 8, opened) == {a.pid: 4, b.pid: 4}
        finally:
            _close(opened)


def test_a_worker_that_closed_connections_takes_the_next_ones(tmp_path: Path) -> None:
    """Counts follow closes: once A's peers hang up, A holds fewer and the next connections are A's."""
    opened: Opened = []
    with _listening(tmp_path) as (sock, shares), _worker(sock, shares) as a, _worker(sock, shares) as b:
        try:
            assert _connect(sock, 8, opened) == {a.pid: 4, b.pid: 4}
            _close(opened, a.pid)
            deadline = time.monotonic() + WAIT_S
            while shares.counts().get(a.pid) != 0:  # poll: A has seen its peers hang up
                assert time.monotonic() < deadline, f"A still counts {shares.counts()}"
                time.sleep(0.02)
            assert _connect(sock, 4, opened) == {a.pid: 4}
        finally:
            _close(opened)


def test_a_killed_worker_never_holds_the_others_back(tmp_path: Path) -> None:
    """B is killed (SIGKILL: it frees nothing) while it holds fewer connections than A; A, which
    would wait for B to take the next ones, finds B dead, frees its slot and takes them all."""
    opened: Opened = []
    with _listening(tmp_path) as (sock, shares), _worker(sock, shares) as a:
        try:
            assert _connect(sock, 3, opened) == {a.pid: 3}
            with _worker(sock, shares) as b:
                assert b.pid is not None
                os.kill(b.pid, signal.SIGKILL)
                b.join(WAIT_S)
                assert _connect(sock, 5, opened) == {a.pid: 5}
                assert b.pid not in shares.counts()
        finally:
            _close(opened)


def test_slots_are_claimed_freed_and_taken_back_from_the_dead(tmp_path: Path) -> None:
    shares = ConnectionShares.create(1, directory=str(tmp_path))
    try:
        assert shares.slots == 4  # room for a replacement started while the one it replaces runs
        mine = shares.claim(os.getpid())
        dead = _a_dead_pid()
        theirs = shares.claim(dead)
        assert {mine, theirs} == {0, 1}
        shares.publish(mine, os.getpid(), 3)
        shares.publish(theirs, dead, 1)
        assert shares.holds_more_than_another(mine) is False  # the one holding fewer is dead: freed
        assert shares.counts() == {os.getpid(): 3}
        shares.release(mine)
        assert shares.counts() == {}
    finally:
        shares.remove()
    assert not shares.path.exists()


def _a_dead_pid() -> int:
    process = multiprocessing.get_context("spawn").Process(target=int)
    process.start()
    process.join()
    assert process.pid is not None
    return process.pid


@pytest.fixture(autouse=True)
def _no_shares_leak() -> Iterator[None]:
    yield
    assert SHARES_ENV not in os.environ
