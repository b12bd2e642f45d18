"""The supervisor ``paygate up`` and ``paygate campaign`` share ("restart a process that
dies (a log line says so, with a back-off for a process that keeps dying)"), with real processes.
Time for the back-off comes from an injected clock, so no test waits for a delay."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import psutil

from paygate_local.supervisor import Supervisor, next_backoff

# Long-running stand-ins: they wait for a signal (signal.pause), never for a deadline.
SLEEPER = [sys.executable, "-c", "import signal; print('up', flush=True); signal.pause()"]
# A parent that forks a child into its own group, as dramatiq does with its worker processes.
FORKER = [sys.executable, "-c",
          "import signal, subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import signal; signal.pause()']);"
          " print('forked', flush=True); signal.pause()"]
DIES = [sys.executable, "-c", "raise SystemExit(3)"]
# dramatiq's shape on stop: the parent forwards SIGTERM to its worker and waits for it; the worker
# finishes the message in hand on the first signal and abandons it on a second ("Killing worker
# process..."). The second SIGTERM, if any, lands during that second of finishing.
GRACEFUL_WORKER = "\n".join([
    "import signal, time",
    "seen = []",
    "signal.signal(signal.SIGTERM, lambda *_: seen.append(1))",
    "print('ready', flush=True)",
    "while not seen: signal.pause()",
    "time.sleep(1)",
    "print('stopped gracefully' if len(seen) == 1 else 'second signal: abandoned', flush=True)",
])
FORWARDING_PARENT = [sys.executable, "-c", "\n".join([
    "import signal, subprocess, sys, time",
    f"child = subprocess.Popen([sys.executable, '-c', {GRACEFUL_WORKER!r}])",
    # like dramatiq's parent, it logs and tidies up before it forwards the signal
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(0.3), child.send_signal(signal.SIGTERM)))",
    "raise SystemExit(child.wait())",
])]


class Recorder:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []
        self.events: list[str] = []
        self._lock = threading.Lock()

    def line(self, name: str, text: str) -> None:
        with self._lock:
            self.lines.append((name, text))

    def event(self, text: str) -> None:
        with self._lock:
            self.events.append(text)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _until(condition, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.02)


def test_back_off_doubles_while_a_process_keeps_dying_young_and_resets_once_it_ran_a_while() -> None:
    assert next_backoff(None, 0.1) == 1
    assert [next_backoff(d, 0.5) for d in (1, 2, 16, 30)] == [2, 4, 30, 30]
    assert next_backoff(8, 11) == 1


def test_a_killed_process_is_restarted_after_the_back_off_and_the_others_keep_running() -> None:
    out, clock = Recorder(), Clock()
    supervisor = Supervisor(out, clock=clock)
    supervisor.add("worker.1", SLEEPER, dict(os.environ))
    supervisor.add("web.1", SLEEPER, dict(os.environ))
    supervisor.start()
    try:
        _until(lambda: out.lines.count(("worker.1", "up")) == 1)
        worker, web = supervisor.pid("worker.1"), supervisor.pid("web.1")
        assert supervisor.kill("worker.1") == worker
        _until(lambda: psutil.Process(worker).status() == psutil.STATUS_ZOMBIE)  # type: ignore[arg-type]
        supervisor.poll()
        assert out.events[-1] == f"worker.1 (pid {worker}) was killed by SIGKILL; restarting in 1 s"
        assert supervisor.pid("worker.1") is None and supervisor.pid("web.1") == web

        clock.now += 1
        supervisor.poll()
        assert supervisor.pid("worker.1") not in (None, worker) and supervisor.restarts("worker.1") == 1
        _until(lambda: out.lines.count(("worker.1", "up")) == 2)
        assert supervisor.pid("web.1") == web and supervisor.restarts("web.1") == 0
    finally:
        supervisor.stop()
    assert supervisor.pid("worker.1") is None and supervisor.pid("web.1") is None


def test_a_process_that_keeps_dying_is_restarted_ever_more_slowly() -> None:
    out, clock = Recorder(), Clock()
    supervisor = Supervisor(out, clock=clock)
    supervisor.add("clock", DIES, dict(os.environ))
    supervisor.start()
    delays = []

    def buried() -> bool:
        supervisor.poll()
        return "restarting" in out.events[-1]

    try:
        for _ in range(4):
            _until(buried)
            delays.append(out.events[-1].rsplit(" ", 2)[1])
            clock.now += float(delays[-1])
            supervisor.poll()
    finally:
        supervisor.stop()
    assert delays == ["1", "2", "4", "8"]
    assert all("exited with code 3" in event for event in out.events if "restarting" in event)


def test_a_kill_reaches_the_whole_group_and_stop_leaves_nothing_running() -> None:
    out = Recorder()
    supervisor = Supervisor(out)
    supervisor.add("worker.1", FORKER, dict(os.environ))
    supervisor.start()
    try:
        _until(lambda: ("worker.1", "forked") in out.lines)
        parent = psutil.Process(supervisor.pid("worker.1"))  # type: ignore[arg-type]
        forked = parent.children()
        assert len(forked) == 1
        supervisor.kill("worker.1", signal.SIGKILL)
        psutil.wait_procs(forked, timeout=5)
        assert not forked[0].is_running() or forked[0].status() == psutil.STATUS_ZOMBIE
    finally:
        stop = threading.Event()
        stop.set()
        supervisor.run(stop)  # returns at once and stops everything
    assert supervisor.pid("worker.1") is None


def test_stop_signals_a_parent_once_and_its_worker_stops_gracefully() -> None:
    """The fleet stops cleanly (``paygate up``'s Ctrl-C): stop sends SIGTERM to the process
    the Procfile started, which stops its own workers; a worker is not sent a second SIGTERM that
    would make it abandon the message in hand (before: the whole group was signalled, dramatiq's
    worker took the parent's forwarded signal as a second one, never stopped within the grace and
    was killed)."""
    out = Recorder()
    supervisor = Supervisor(out, clock=Clock())
    supervisor.add("worker", FORWARDING_PARENT, dict(os.environ))
    supervisor.start()
    _until(lambda: ("worker", "ready") in out.lines)
    supervisor.stop()
    assert ("worker", "stopped gracefully") in out.lines
    assert ("worker", "second signal: abandoned") not in out.lines
    assert not any("did not stop" in event for event in out.events)


SUPERVISOR = "\n".join([
    "import os, signal, sys",
    "from pathlib import Path",
    "from paygate_local.supervisor import PrefixedOutput, Supervisor",
    "supervisor = Supervisor(PrefixedOutput(sys.stdout), pid_dir=Path(sys.argv[1]))",
    f"supervisor.add('worker.1', {FORWARDING_PARENT!r}, dict(os.environ))",
    "supervisor.start()",
    "signal.pause()",
])


def test_a_supervisor_killed_with_sigkill_takes_its_children_along(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A killed supervisor left its processes running. Its children are started through
    ``paygate_local.tether`` (PR_SET_PDEATHSIG), so the kernel sends SIGTERM to the process the
    command names (not a wrapper) when the supervisor dies; it stops what it forked, as on any SIGTERM.
    The pid file the supervisor wrote names it by pid and start time."""
    process = psutil.Popen([sys.executable, "-c", SUPERVISOR, str(tmp_path)], stdout=subprocess.DEVNULL)
    run = [process]
    try:
        _until(lambda: len(process.children(recursive=True)) == 2)
        run = [process, *process.children(recursive=True)]
        child = process.children()[0]
        assert child.cmdline()[:2] == [sys.executable, "-c"]  # the command itself, not a wrapper
        pid, started = (tmp_path / "worker.1.pid").read_text().split()
        assert (int(pid), float(started)) == (child.pid, child.create_time())
        process.kill()
        process.wait(5)
        _, alive = psutil.wait_procs(run[1:], timeout=5)
        assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == []
    finally:
        for leftover in run:
            with contextlib.suppress(psutil.NoSuchProcess):
                leftover.kill()
