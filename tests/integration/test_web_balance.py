"""Web workers share one listening socket's connections evenly (gateway/web_balance.py,
docs/decisions/0081): real worker processes, each serving the shared socket on the workers' event
loop (``new_event_loop``'s ``create_server``), and real connections; each connection learns which
worker took it from the first line that worker writes, or, served over HTTP by uvicorn behind the
gateway's request envelope, from each response's body."""

from __future__ import annotations

import asyncio
import http.client
import multiprocessing
import os
import signal
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from gateway.http.middleware import RequestEnvelope
from gateway.web_balance import SHARES_ENV, SHED_CHECK_S, ConnectionShares, new_event_loop

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


async def _pid_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers every request with the pid of the worker that served it."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(os.getpid()).encode()})


def _serve_http(sock: socket.socket, shares_path: str) -> None:
    """A web worker as gateway.web runs one: uvicorn on the workers' event loop, behind the
    gateway's request envelope."""
    os.environ[SHARES_ENV] = shares_path
    config = uvicorn.Config(RequestEnvelope(_pid_app, max_body_bytes=1024), loop="gateway.web_balance:new_event_loop",
                            lifespan="off", access_log=False, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


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
def _worker(sock: socket.socket, shares: ConnectionShares,
            serve: Callable[[socket.socket, str], None] = _serve) -> Iterator[multiprocessing.process.BaseProcess]:
    process = multiprocessing.get_context("spawn").Process(target=serve, args=(sock, str(shares.path)), daemon=True)
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


def test_a_worker_holding_connections_from_before_the_others_started_sheds_them_to_the_others(
        tmp_path: Path) -> None:
    """Seven keep-alive HTTP clients connect while only A serves; B starts. A, holding seven where B
    holds none, answers a response now and then with ``Connection: close``; each client reconnects,
    and the reconnection goes to B, until the two hold four and three; then nobody is closed any
    more (one more than another is a worker's share: shedding at it would move a client back and
    forth for ever)."""
    with _listening(tmp_path) as (sock, shares), _worker(sock, shares, _serve_http) as a:
        address = sock.getsockname()
        clients = [http.client.HTTPConnection(*address, timeout=WAIT_S) for _ in range(7)]

        def ask(client: http.client.HTTPConnection) -> tuple[int, bool]:
            client.request("GET", "/")
            response = client.getresponse()
            return int(response.read()), response.getheader("connection") == "close"

        try:
            assert {ask(client) for client in clients} == {(a.pid, False)}
            with _worker(sock, shares, _serve_http) as b:
                deadline = time.monotonic() + WAIT_S
                while sorted((answers := Counter(ask(client) for client in clients)).values()) != [3, 4] \
                        or set(answers) != {(a.pid, False), (b.pid, False)}:
                    assert time.monotonic() < deadline, f"the clients never split 4/3: {shares.counts()}"
                    time.sleep(0.02)
                settled = []
                for _ in range(5):  # each worker asks its table again in each of these intervals
                    time.sleep(SHED_CHECK_S)
                    settled += [ask(client) for client in clients for _ in range(4)]
                assert not any(closed for _, closed in settled)
                assert sorted(Counter(pid for pid, _ in settled).values()) == [60, 80]
        finally:
            for client in clients:
                client.close()


def test_slots_are_claimed_freed_and_taken_back_from_the_dead(tmp_path: Path) -> None:
    shares = ConnectionShares.create(1, directory=str(tmp_path))
    try:
        assert shares.slots == 4  # room for a replacement started while the one it replaces runs
        mine = shares.claim(os.getpid())
        dead = _a_dead_pid()
        theirs = shares.claim(dead)
        assert {mine, theirs} == {0, 1}
        shares.publish(mine, os.getpid(), 3)
        shares.publish(theirs, os.getppid(), 2)
        assert shares.holds_more_than_another(mine) is True
        assert shares.holds_more_than_another(mine, by=2) is False  # one more is within the share
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
