"""The web process runs ``web_workers`` uvicorn worker processes (the ingest target's
lever on 2 cores; docs/decisions/0049): ``python -m gateway.web``, the Procfile's ``web``, started
with ``web_workers`` 2 answers from two worker processes below it (each has run its own
lifespan start-up, or uvicorn would not count it started), shares kept-alive connections opened at
once evenly between them (gateway/web_balance.py, docs/decisions/0081: each worker's count of
established connections, as the kernel reports it), and stops with both on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

from gateway.web_balance import SHARES_ENV, ConnectionShares
from paygate_local.servers import free_port
from tests.conftest import TEST_ACCOUNT, TEST_PEPPER, account_config

pytestmark = pytest.mark.e2e
START_TIMEOUT_S = 60


SENDERS = 8


def _kept_alive(port: int) -> socket.socket:
    """A connection that has had one answer and stays open (HTTP/1.1 keep-alive)."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=START_TIMEOUT_S)
    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: paygate\r\n\r\n")
    assert conn.recv(65536).startswith(b"HTTP/1.1 200")
    return conn


def _accepting(workers: list[psutil.Process]) -> bool:
    """Whether every worker has claimed its slot in the web process's connection table
    (gateway/web_balance.py): a worker accepts from then on. Answering /healthz and running are not
    enough: connections opened before the second worker claims its slot all go to the first, and
    idle ones are never moved (a worker sheds only on a response)."""
    path = workers[0].environ().get(SHARES_ENV)
    if path is None:
        return False
    shares = ConnectionShares(Path(path))
    try:
        return {worker.pid for worker in workers} <= set(shares.counts())
    finally:
        shares.close()


def _established(worker: psutil.Process, port: int) -> int:
    return sum(1 for conn in worker.net_connections(kind="tcp")
               if conn.status == psutil.CONN_ESTABLISHED and conn.laddr and conn.laddr.port == port)


def test_the_web_process_serves_from_web_workers_processes(database_url: str, redis_url: str,
                                                           tmp_path: Path) -> None:
    config = tmp_path / "paygate.json"
    config.write_text(json.dumps({"token_pepper": TEST_PEPPER, "provider_accounts": [account_config(TEST_ACCOUNT)],
                                  "web_workers": 2}))
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "gateway.web", "--host", "127.0.0.1", "--port", str(port)],
                               env={**os.environ, "PAYGATE_CONFIG": str(config), "DATABASE_URL": database_url,
                                    "REDIS_URL": redis_url, "PAYGATE_LOG_LEVEL": "warning"})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        workers: list[psutil.Process] = []
        while True:  # poll (not a deadline for the behaviour): both workers up, answering and accepting
            assert process.poll() is None, "the web process exited"
            assert time.monotonic() < deadline, "the web process did not start two accepting workers"
            workers = [child for child in psutil.Process(process.pid).children()
                       if any("spawn_main" in part for part in child.cmdline())]
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
            except httpx.TransportError:
                ready = False
            if ready and len(workers) == 2 and _accepting(workers):
                break
            time.sleep(0.2)
        assert len({worker.pid for worker in workers}) == 2
        with ThreadPoolExecutor(SENDERS) as pool:
            senders = list(pool.map(lambda _: _kept_alive(port), range(SENDERS)))
        try:
            assert sorted(_established(worker, port) for worker in workers) == [SENDERS // 2, SENDERS // 2]
        finally:
            for conn in senders:
                conn.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
