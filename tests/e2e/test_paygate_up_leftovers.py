"""``paygate up`` leaves nothing running however it dies (API.md, Command line:
"SIGINT/SIGTERM stops every process and server it started"), with the real command and fleet.

Three ways of dying: a SIGTERM while it is still starting, a SIGHUP (its terminal closed) once it
is ready, a SIGKILL of the supervisor once it is ready. Each time, afterwards, no process of that
run is left (followed by pid: the supervisor's children and their children, the embedded
PostgreSQL's daemonized postmaster) and every port it listened on is free. A run that finds what a
previous one left in its data directory (made here on purpose: the guardian and the supervisor
SIGKILLed, the web process stopped so it cannot act on its signal and still holds the port) stops
it, says so, and only then starts; it never reports ready while another process holds its port.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import IO

import httpx
import psutil
import pytest

from paygate_local.rundir import POSTGRES_FAST_S, STOP_GRACE_S
from paygate_local.servers import free_port

pytestmark = pytest.mark.e2e

START_TIMEOUT_S = 90
# The longest a guardian or a next run may take to stop what a run left (paygate_local/rundir.py
# stop_processes): the children's settle and grace, Valkey's grace, PostgreSQL's fast shutdown,
# then its quit and its kill, and 10 s for everything else: a fixed 40 s was shorter than the
# 50-60 s the product allows itself, so a slow stop on a loaded machine failed the test.
GONE_TIMEOUT_S = 3 * STOP_GRACE_S + POSTGRES_FAST_S + STOP_GRACE_S + 10 + 10


def _environment() -> dict[str, str]:
    # The user's machine: no servers configured, so paygate up starts the embedded ones.
    return {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}


def _command(data_dir: Path, web_port: int, provider_port: int) -> list[str]:
    return [sys.executable, "-m", "gateway.cli", "up", "--data-dir", str(data_dir), "--web-port", str(web_port),
            "--provider-port", str(provider_port), "--rehearsal"]


class Up:
    """One ``paygate up --rehearsal`` in ``data_dir``, its output to ``log`` (or a terminal)."""

    def __init__(self, data_dir: Path, web_port: int, provider_port: int, log: Path) -> None:
        self.data_dir, self.web_port, self.provider_port, self.log = data_dir, web_port, provider_port, log
        self._handle: IO[bytes] = log.open("ab")
        self.process = subprocess.Popen(_command(data_dir, web_port, provider_port), stdout=self._handle,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=_environment(),
                                        cwd=data_dir.parent)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while text not in self.output():
            assert self.process.poll() is None, f"paygate up exited with {self.process.returncode}:\n{self.output()}"
            assert time.monotonic() < deadline, f"{text!r} never appeared:\n{self.output()}"
            time.sleep(0.1)

    def wait_ready(self) -> None:
        self.wait_for("paygate is up.")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._handle.close()


def _run_processes(up: psutil.Process, data_dir: Path) -> list[psutil.Process]:
    """Everything of one run: the supervisor, its descendants, and the postmaster pg_ctl daemonized."""
    found = [up, *up.children(recursive=True)]
    with contextlib.suppress(FileNotFoundError, psutil.NoSuchProcess):
        found.append(psutil.Process(int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])))
    return found


def _listening_ports(processes: list[psutil.Process]) -> set[int]:
    ports = set()
    for process in processes:
        with contextlib.suppress(psutil.Error):
            ports |= {c.laddr.port for c in process.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    return ports


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _assert_nothing_left(processes: list[psutil.Process], ports: set[int]) -> None:
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while any(_alive(p) for p in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if _alive(process):
                survivors.append((process.pid, process.cmdline()))
    assert survivors == [], f"left running: {survivors}"
    assert sorted(port for port in ports if not _port_free(port)) == []


def _guardian(up: psutil.Process) -> psutil.Process | None:
    for child in up.children():
        with contextlib.suppress(psutil.Error):
            if "paygate_local.guardian" in child.cmdline():
                return child
    return None


def _web(up: psutil.Process) -> psutil.Process:
    return next(c for c in up.children() if "gateway.web" in c.cmdline())


def test_sigterm_during_start_up_stops_the_servers_already_started(work_dir: Path) -> None:
    """A SIGTERM before start-up finishes left the embedded PostgreSQL and Valkey
    running (the handlers were installed only once the processes started; SIGTERM's default
    ended paygate up at once, its ``finally`` never ran)."""
    data_dir = work_dir / "data"
    up = Up(data_dir, free_port(), free_port(), work_dir / "up.log")
    try:
        up.wait_for("paygate: starting embedded Valkey")
        supervisor = psutil.Process(up.process.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not any("valkey" in c.name() for c in supervisor.children()):
            assert time.monotonic() < deadline and up.process.poll() is None, up.output()
            time.sleep(0.02)
        run = _run_processes(supervisor, data_dir)
        assert any(p.name() == "postgres" for p in run), "PostgreSQL was not running yet"
        ports = _listening_ports(run) | {up.web_port, up.provider_port}
        up.process.send_signal(signal.SIGTERM)
        up.process.wait(GONE_TIMEOUT_S)
        assert "paygate is up." not in up.output()
        _assert_nothing_left(run, ports)
        assert not (data_dir / "paygate-demo.json").exists()
    finally:
        up.close()


@pytest.mark.parametrize("ending", ["terminal closed", "ctrl-c typed"])
def test_a_closed_terminal_sighup_or_a_typed_ctrl_c_stops_every_process_and_server(work_dir: Path,
                                                                                   ending: str) -> None:
    """A SIGHUP (the terminal closed) left every process and server running; closing
    the terminal also makes every later write to it fail (EIO), which must not stop the stop.
    A Ctrl-C typed in the terminal signals its whole foreground group: Valkey, in that group, went
    down before the worker had stopped draining it ("Consumer encountered a connection error")."""
    data_dir = work_dir / "data"
    data_dir.mkdir()
    web_port, provider_port = free_port(), free_port()
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # the terminal's session leader, as a shell's job is
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    process = subprocess.Popen(_command(data_dir, web_port, provider_port), stdin=slave, stdout=slave,
                               stderr=slave, env=_environment(), cwd=work_dir, preexec_fn=controlling_terminal)
    os.close(slave)
    seen, closing = bytearray(), threading.Event()

    def read_terminal() -> None:
        while not closing.is_set():
            if select.select([master], [], [], 0.1)[0]:
                try:
                    seen.extend(os.read(master, 65536))
                except OSError:
                    return

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"paygate is up." not in seen:
            assert process.poll() is None and time.monotonic() < deadline, seen.decode(errors="replace")
            time.sleep(0.1)
        run = _run_processes(psutil.Process(process.pid), data_dir)
        ports = _listening_ports(run)
        assert {web_port, provider_port} <= ports
        if ending == "ctrl-c typed":
            os.write(master, b"\x03")  # the terminal sends SIGINT to its foreground process group
            assert process.wait(GONE_TIMEOUT_S) == 0
            time.sleep(0.5)
            assert b"paygate: stopped" in seen and b"connection error" not in seen, seen.decode(errors="replace")
        closing.set()
        reader.join()
        os.close(master)  # the terminal goes: the kernel sends SIGHUP to its session leader
        process.wait(GONE_TIMEOUT_S)
        _assert_nothing_left(run, ports)
        assert not (data_dir / "paygate-demo.json").exists()
    finally:
        closing.set()
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_a_killed_supervisor_takes_its_run_along_and_the_next_run_stops_what_a_previous_one_left(
        work_dir: Path) -> None:
    """A SIGKILLed ``paygate up`` left PostgreSQL, Valkey, web, workers and CardCo
    running, and the next ``paygate up`` on the same directory reused the old PostgreSQL and
    reported ready while the old web process held the port. Now the children die with the
    supervisor (PR_SET_PDEATHSIG) and its guardian stops the servers; a run whose guardian was
    killed too leaves them, and the next run stops them from their pid files and says so."""
    data_dir = work_dir / "data"
    web_port, provider_port = free_port(), free_port()

    first = Up(data_dir, web_port, provider_port, work_dir / "first.log")
    try:
        first.wait_ready()
        run = _run_processes(psutil.Process(first.process.pid), data_dir)
        ports = _listening_ports(run)
        first.process.kill()
        first.process.wait(10)
        _assert_nothing_left(run, ports)
    finally:
        first.close()

    second = Up(data_dir, web_port, provider_port, work_dir / "second.log")
    try:
        second.wait_ready()
        assert "a previous run" not in second.output()
        supervisor = psutil.Process(second.process.pid)
        run = _run_processes(supervisor, data_dir)
        postgres = run[-1]
        valkey = next(p for p in supervisor.children() if "valkey" in p.name())
        web = _web(supervisor)
        guardian = _guardian(supervisor)
        assert guardian is not None, "paygate up runs no guardian"
        # Leftovers on purpose: the guardian cannot stop the servers, the web process cannot act
        # on the signal its dying supervisor has the kernel send (stopped, it keeps its port).
        web.suspend()
        guardian.kill()
        second.process.kill()
        second.process.wait(10)
        guardian.wait(10)
        time.sleep(1)
        assert _alive(postgres) and _alive(valkey) and _alive(web)
    finally:
        second.close()

    third = Up(data_dir, web_port, provider_port, work_dir / "third.log")
    try:
        third.wait_ready()
        said = third.output()
        for name, pid in (("web", web.pid), ("valkey", valkey.pid), ("postgres", postgres.pid)):
            assert f"paygate: stopped a previous run's {name} (pid {pid}) left in {data_dir}" in said, said
        assert not _alive(web) and not _alive(valkey) and not _alive(postgres)
        supervisor = psutil.Process(third.process.pid)
        assert httpx.get(f"http://127.0.0.1:{web_port}/readyz", timeout=5).status_code == 200
        assert _web(supervisor).pid != web.pid
        run = _run_processes(supervisor, data_dir)
        ports = _listening_ports(run)
        third.process.send_signal(signal.SIGTERM)
        assert third.process.wait(GONE_TIMEOUT_S) == 0
        _assert_nothing_left(run, ports)  # its own PostgreSQL too, though a dead run had held it
    finally:
        third.close()


def test_paygate_up_does_not_start_beside_another_process_on_its_web_port(work_dir: Path) -> None:
    """Never report ready while an old web process holds the port. A port held by a
    process that no pid file names is refused before anything starts."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        web_port = holder.getsockname()[1]
        up = Up(work_dir / "data", web_port, free_port(), work_dir / "up.log")
        try:
            assert up.process.wait(START_TIMEOUT_S) == 1
        finally:
            up.close()
    said = up.output()
    assert f"paygate: port {web_port} is in use (pid {os.getpid()}" in said, said
    assert "starting embedded PostgreSQL" not in said and "paygate is up." not in said
