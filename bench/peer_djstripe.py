"""Benchmark: paygate's webhook ingest side by side with dj-stripe's (bench/README.md).

    python bench/peer_djstripe.py [--duration 10] [--connections 16] [--events 100000] [--web-workers 2]
                                  [--json PATH]

Both run in one run against one throwaway PostgreSQL 15 cluster (Debian's binaries, run as the
``postgres`` user) with the settings of the peer benchmark (../shared/peers/djstripe/README.md:
127.0.0.1, shared_buffers 256MB, fsync and synchronous_commit on), each in its own database, and
both get the same load generator: wrk, one thread, ``--connections`` connections, ``--duration``
seconds, replaying ``--events`` pre-signed, unique requests prepared before the run.

- dj-stripe 2.11 (the peer's project and request generator, in /tmp/djstripe-venv, installed with
  the peer's pinned versions if missing): gunicorn, 2 sync workers, CONN_MAX_AGE=600, the peer's
  conventional setup; each request a signed ``refund.updated`` event it verifies and records;
- paygate: its ``web`` process as the Procfile runs it (``python -m gateway.web``) with
  ``--web-workers`` worker processes (bench/notifications.py's setup); each request a signed CardCo
  ``payment.succeeded`` that resolves its own Started attempt, pays its order and queues its
  confirmation in one transaction (more work per request than dj-stripe's).

Printed: both rates and paygate's / dj-stripe's ratio. Run as root (initdb runs as ``postgres``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.notifications import gateway_env, prepare_attempts, signed_lines, wrk  # noqa: E402
from bench.support import ROOT, progress, web  # noqa: E402
from gateway.clock import SystemClock  # noqa: E402
from gateway.store.migrate import migrate  # noqa: E402
from paygate_local.servers import free_port  # noqa: E402

PGBIN = Path("/usr/lib/postgresql/15/bin")
VENV = Path("/tmp/djstripe-venv")
PEER_PACKAGES = ["dj-stripe==2.11.0", "Django==5.2.19", "stripe==15.6.2", "psycopg[binary,pool]==3.3.9",
                 "psycopg-pool==3.3.3", "gunicorn==27.0.1", "uvicorn[standard]==0.54.0"]
MAX_DURATION_S = 20


def peer_directory() -> Path:
    for candidate in (ROOT.parent / "shared" / "peers" / "djstripe", Path("/work/shared/peers/djstripe")):
        if (candidate / "project" / "manage.py").exists():
            return candidate
    raise RuntimeError("the dj-stripe peer benchmark (shared/peers/djstripe) is not beside the repository")


def peer_python() -> str:
    """The peer's virtualenv, made with its pinned packages when it is missing (as its run.sh does)."""
    python = VENV / "bin" / "python"
    if not python.exists() or subprocess.run([str(python), "-c", "import djstripe, gunicorn"],
                                             capture_output=True, check=False).returncode != 0:
        progress("installing the peer's packages into /tmp/djstripe-venv")
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
    return str(python)


@contextmanager
def postgres15() -> Iterator[int]:
    """A throwaway PostgreSQL 15 cluster on a loopback port with the peer's settings; stopped and
    removed afterwards."""
    if subprocess.run(["id", "postgres"], capture_output=True, check=False).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/tmp", "--shell",
                        "/usr/sbin/nologin", "postgres"], check=True)
    data = Path(tempfile.mkdtemp(prefix="paygate-peer-pg-"))
    shutil.chown(data, "postgres", "postgres")
    port = free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"]
    try:
        subprocess.run([*as_postgres, str(PGBIN / "initdb"), "-D", str(data / "db"), "-U", "postgres",
                        "--auth=trust", "--encoding=UTF8", "--no-locale"], cwd="/tmp", check=True,
                       capture_output=True)
        with open(data / "db" / "postgresql.conf", "a") as conf:
            conf.write(f"listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{data}'\n"
                       "shared_buffers = 256MB\nfsync = on\nsynchronous_commit = on\nmax_connections = 100\n")
        subprocess.run([*as_postgres, str(PGBIN / "pg_ctl"), "-D", str(data / "db"), "-l", str(data / "server.log"),
                        "-w", "start"], cwd="/tmp", check=True, capture_output=True)
        for database in ("djstripe_bench", "paygate"):
            subprocess.run([str(PGBIN / "psql"), "-X", "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                            "-d", "postgres", "-c", f"CREATE DATABASE {database}"], check=True)
        yield port
    finally:
        subprocess.run([*as_postgres, str(PGBIN / "pg_ctl"), "-D", str(data / "db"), "-m", "fast", "-w", "stop"],
                       cwd="/tmp", check=False, capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


@contextmanager
def djstripe_server(peer: Path, python: str, port: int) -> Iterator[str]:
    """gunicorn with 2 sync workers serving the peer's project (migrated and seeded first)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchproj.settings", "BENCH_PG_PORT": str(port),
           "BENCH_DB_MODE": "persistent", "PYTHONPATH": str(peer / "project"), "PYTHONDONTWRITEBYTECODE": "1"}
    project = peer / "project"
    progress("dj-stripe: migrate (about 30 s) and seed")
    subprocess.run([python, "manage.py", "migrate", "-v", "0"], cwd=project, env=env, check=True)
    subprocess.run([python, "seed.py"], cwd=project, env=env, check=True, capture_output=True)
    http_port = free_port()
    process = subprocess.Popen([str(Path(python).parent / "gunicorn"), "benchproj.wsgi:application", "--bind",
                                f"127.0.0.1:{http_port}", "--worker-class", "sync", "--log-level", "warning",
                                "--workers", "2"], cwd=project, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{http_port}"
    try:
        for _ in range(300):
            try:
                if httpx.post(f"{base}/bare", content=b"{}").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            raise RuntimeError("gunicorn did not start")
        time.sleep(2)  # the second worker
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def djstripe_rate(peer: Path, python: str, base: str, work: Path, events: int, connections: int,
                  duration: int) -> float:
    requests_file = work / "djstripe.tsv"
    subprocess.run([python, str(peer / "gen_requests.py"), str(requests_file), str(events), "side-by-side"],
                   check=True, capture_output=True)
    sys.path.insert(0, str(peer))
    import benchconst  # the peer's endpoint path

    output = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--timeout", "10s", "-s",
                             str(peer / "stripe_signed.lua"), f"{base}{benchconst.WEBHOOK_PATH}", "--",
                             str(requests_file)], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in output:
        raise RuntimeError(f"dj-stripe answered errors:\n{output}")
    return float(output.split("Requests/sec:")[1].split()[0])


def paygate_rate(url: str, work: Path, events: int, connections: int, duration: int, workers: int) -> float:
    prepare_attempts(url, "P-", events)
    requests_file = work / "paygate.tsv"
    requests_file.write_text("\n".join(signed_lines("P-", events, False)) + "\n")
    with web(gateway_env(url), workers) as base:
        result = wrk(base, requests_file, connections, duration, threads=1)
    if result["non_2xx"]:
        raise RuntimeError(f"paygate answered {result['non_2xx']:.0f} errors")
    if result["wrapped"]:  # the requests sent again are duplicates, answered from memory: not comparable
        raise RuntimeError(f"wrk sent paygate's {events} prepared requests again: raise --events")
    return result["rps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help=f"seconds per run (at most {MAX_DURATION_S})")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--events", type=int, default=100_000, help="pre-signed unique requests for each side")
    parser.add_argument("--web-workers", type=int, default=2,
                        help="paygate's web_workers (dj-stripe runs 2 gunicorn workers)")
    parser.add_argument("--json", type=Path, help="write the figures to this file (bench/README.md)")
    args = parser.parse_args()
    duration = min(args.duration, MAX_DURATION_S)
    peer, python = peer_directory(), peer_python()
    work = Path(tempfile.mkdtemp(prefix="paygate-peer-"))
    try:
        with postgres15() as port:
            url = f"postgresql://postgres@127.0.0.1:{port}/paygate"
            migrate(url, SystemClock())
            progress(f"paygate: {args.connections} connections, {duration} s")
            ours = paygate_rate(url, work, args.events, args.connections, duration, args.web_workers)
            with djstripe_server(peer, python, port) as base:
                progress(f"dj-stripe: {args.connections} connections, {duration} s")
                theirs = djstripe_rate(peer, python, base, work, args.events, args.connections, duration)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    figures = {"paygate_rate": ours, "djstripe_rate": theirs, "ratio": ours / theirs,
               "web_workers": args.web_workers}
    print(f"\nwebhook ingest side by side, wrk -t1 -c{args.connections}, {duration} s, {args.events} unique "
          "pre-signed requests each, one PostgreSQL 15 (bench/README.md)\n")
    print(f"  paygate (uvicorn, {args.web_workers} workers)         {ours:>8.0f} /s")
    print(f"  dj-stripe 2.11 (gunicorn, 2 sync)    {theirs:>8.0f} /s")
    print(f"  ratio                                {ours / theirs:>8.1f}x")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
