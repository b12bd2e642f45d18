"""The guardian of a ``paygate up`` run: ``python -m paygate_local.guardian DIR PARENT``.

``paygate up`` starts it first, in its own session (the terminal's signals do not reach it), and it
inherits the data directory's lock. It waits for ``PARENT`` to end: the kernel's death signal
(``PR_SET_PDEATHSIG``, Linux) or, as a fallback, a parent check every half second (its parent pid
is no longer ``PARENT``). Then, and on SIGTERM (what ``paygate up`` sends it once it has stopped
everything itself), it stops whatever of the run is still running from the directory's pid files
(``paygate_local.rundir``): the processes, Valkey, and the PostgreSQL that pg_ctl daemonized, which
no death signal reaches. Only then does the lock go, so a next ``paygate up`` starts after it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from paygate_local.rundir import STOP_GRACE_S, stop_processes
from paygate_local.terminal import say
from paygate_local.tether import die_with_parent

PARENT_CHECK_S = 0.5


def main(args: list[str]) -> None:
    data_dir, parent = Path(args[0]), int(args[1])
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: done.set())
    for ignored in (signal.SIGINT, signal.SIGHUP):
        signal.signal(ignored, signal.SIG_IGN)
    die_with_parent()
    while os.getppid() == parent and not done.wait(PARENT_CHECK_S):
        pass
    stop_processes(data_dir, lambda name, pid: say(
        f"paygate: stopped {name} (pid {pid}), left running by paygate up (pid {parent}) in {data_dir}"),
        settle_s=STOP_GRACE_S)


if __name__ == "__main__":
    main(sys.argv[1:])
