"""A supervisor for the Procfile's processes, shared by ``paygate up`` and ``paygate campaign``.

honcho's ``Manager.loop`` stops every process when one exits (NOTES.md), which is the opposite of
what a fleet does: a supervisor (systemd, Kubernetes, a Procfile runner in production) restarts
the process that died and leaves the others alone. This one does that. Each process runs in its
own process group, so a kill reaches a dramatiq parent and its forked workers together, and a
death found by :meth:`Supervisor.poll` also reaps whatever the dead process left in its group.

Children die with the supervisor: each is started through ``paygate_local.tether``,
which has the kernel send it SIGTERM when the supervisor goes, however it went (SIGKILL
included), and then becomes the command itself. With ``pid_dir`` the supervisor also writes
``<pid_dir>/<name>.pid`` for each running child (``paygate_local.rundir``), from which the
guardian of ``paygate up``, or the next run, stops what a dead supervisor left.

A process that dies is started again after a back-off (:func:`next_backoff`): the initial delay
when it had run for a while, doubling up to a ceiling while it keeps dying young, so a process
that cannot start does not spin. Every death and restart is one line through ``Output.event``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from paygate_local.rundir import record
from paygate_local.tether import tethered

BACKOFF_INITIAL_S = 1.0
BACKOFF_MAX_S = 30.0
# A process that ran at least this long before dying is restarted after the initial delay.
STABLE_AFTER_S = 10.0
STOP_GRACE_S = 5.0


def next_backoff(previous_s: float | None, ran_for_s: float, *, initial_s: float = BACKOFF_INITIAL_S,
                 maximum_s: float = BACKOFF_MAX_S, stable_after_s: float = STABLE_AFTER_S) -> float:
    """How long to wait before restarting a process that ran ``ran_for_s`` and then died."""
    if previous_s is None or ran_for_s >= stable_after_s:
        return initial_s
    return min(maximum_s, previous_s * 2)


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


class Output(Protocol):
    def line(self, name: str, text: str) -> None:
        """One line a process wrote."""

    def event(self, text: str) -> None:
        """One line about the supervisor's own actions (a start, a death, a restart)."""


class PrefixedOutput:
    """``HH:MM:SS name | line`` on one stream, like honcho's printer."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def _write(self, name: str, text: str) -> None:
        with self._lock, contextlib.suppress(OSError):  # a closed terminal (SIGHUP) must not stop the relay
            self._stream.write(f"{time.strftime('%H:%M:%S')} {name:<10} | {text}\n")
            self._stream.flush()

    def line(self, name: str, text: str) -> None:
        self._write(name, text)

    def event(self, text: str) -> None:
        self._write("paygate", text)


@dataclass
class _Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff_s: float | None = None
    restart_at: float | None = None
    reader: threading.Thread | None = None
    deaths: int = 0


@dataclass
class Supervisor:
    """Start, watch, restart and stop named processes (``web.1``, ``worker.2``, ...)."""

    output: Output
    restart: bool = True
    clock: Callable[[], float] = time.monotonic
    pid_dir: Path | None = None
    _children: dict[str, _Child] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def add(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        self._children[name] = _Child(name, argv, env)

    @property
    def names(self) -> list[str]:
        return list(self._children)

    def start(self) -> None:
        with self._lock:
            for child in self._children.values():
                self._spawn(child)

    def pid(self, name: str) -> int | None:
        process = self._children[name].process
        return process.pid if process is not None and process.poll() is None else None

    def restarts(self, name: str) -> int:
        return self._children[name].deaths

    def kill(self, name: str, sig: int = signal.SIGKILL) -> int | None:
        """Send ``sig`` to the process group of ``name``; the next :meth:`poll` restarts it."""
        with self._lock:
            pid = self.pid(name)
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, sig)
            return pid

    def poll(self) -> None:
        """Notice deaths, reap what a dead process left in its group, restart what is due."""
        with self._lock:
            now = self.clock()
            for child in self._children.values():
                process = child.process
                if process is not None and process.poll() is not None:
                    self._buried(child, process, now)
                if child.process is None and child.restart_at is not None and now >= child.restart_at:
                    child.restart_at = None
                    self._spawn(child)

    def run(self, stop: threading.Event, tick_s: float = 0.2) -> None:
        """Supervise until ``stop`` is set, then stop everything."""
        try:
            while not stop.wait(tick_s):
                self.poll()
        finally:
            self.stop()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM every process, SIGKILL every process group after ``grace_s``.

        The SIGTERM goes to the process the Procfile started, not to its group: a parent that
        runs workers (dramatiq's, uvicorn's with ``web_workers``) stops them itself, once. Its
        workers, sent the same signal directly as well, took the parent's forwarded one as a
        second signal and abandoned their graceful stop (dramatiq: "Killing worker process..."),
        so the worker never stopped within the grace and was killed with messages in flight."""
        with self._lock:
            self.restart = False
            running = [c for c in self._children.values() if c.process is not None and c.process.poll() is None]
            for child in running:
                if child.process is not None:
                    with contextlib.suppress(ProcessLookupError):
                        child.process.send_signal(signal.SIGTERM)
            deadline = self.clock() + grace_s
            for child in running:
                try:
                    if child.process is not None:
                        child.process.wait(max(0.0, deadline - self.clock()))
                except subprocess.TimeoutExpired:
                    self.output.event(f"{child.name} did not stop within {grace_s:.0f} s; killing it")
            for child in self._children.values():
                self._signal_group(child, signal.SIGKILL)  # also whatever a parent left behind
                if child.process is not None:
                    child.process.wait()
                    child.process = None
                    self._forget(child)
                if child.reader is not None:
                    child.reader.join(timeout=2)

    def _spawn(self, child: _Child) -> None:
        process = subprocess.Popen(tethered(child.argv, os.getpid()), env=child.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        child.process, child.started_at = process, self.clock()
        if self.pid_dir is not None:
            record(self.pid_dir / f"{child.name}.pid", process.pid)
        child.reader = threading.Thread(target=self._relay, args=(child.name, process), daemon=True)
        child.reader.start()
        self.output.event(f"{child.name} started (pid {process.pid})")

    def _buried(self, child: _Child, process: subprocess.Popen[bytes], now: float) -> None:
        returncode = process.returncode
        self._signal_group(child, signal.SIGKILL)
        child.process = None
        self._forget(child)
        child.deaths += 1
        if not self.restart:
            self.output.event(f"{child.name} (pid {process.pid}) {describe_exit(returncode)}")
            return
        child.backoff_s = next_backoff(child.backoff_s, now - child.started_at)
        child.restart_at = now + child.backoff_s
        self.output.event(f"{child.name} (pid {process.pid}) {describe_exit(returncode)}; "
                          f"restarting in {child.backoff_s:.0f} s")

    def _forget(self, child: _Child) -> None:
        if self.pid_dir is not None:
            (self.pid_dir / f"{child.name}.pid").unlink(missing_ok=True)

    @staticmethod
    def _signal_group(child: _Child, sig: int) -> None:
        if child.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.process.pid, sig)

    def _relay(self, name: str, process: subprocess.Popen[bytes]) -> None:
        if process.stdout is None:
            return
        with process.stdout:
            for raw in process.stdout:
                self.output.line(name, raw.decode(errors="replace").rstrip("\n"))
