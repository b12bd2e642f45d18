"""Children that die with their supervisor: ``python -m paygate_local.tether PARENT -- ARGV...``.

On Linux it asks the kernel to send it SIGTERM when the thread that started it ends
(``prctl(PR_SET_PDEATHSIG)``), checks that its parent is still ``PARENT`` (the supervisor may have
died before the request took), and then becomes ``ARGV`` (``exec``): the signal reaches the real
process, not a shell or a wrapper, and the death signal survives the ``exec``. The process it
forks (dramatiq's workers, uvicorn's) are stopped by it, as on any SIGTERM.

The kernel's "parent" is the starting *thread*: a supervisor must start children from a thread that
outlives them (``paygate up``: its main thread; the campaign's fleet: its main thread and the
supervising thread, which stops every child before it ends). Where prctl does not exist, the
child runs unbound, and the guardian's parent check (``paygate_local.guardian``) stops it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def tethered(argv: list[str], parent: int) -> list[str]:
    """``argv`` run so that it gets SIGTERM when ``parent``'s starting thread ends."""
    return [sys.executable, "-m", "paygate_local.tether", str(parent), "--", *argv]


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel for ``sig`` when this process's parent ends; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    return int(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0


def main(args: list[str]) -> None:
    parent, command = int(args[0]), args[2:]
    die_with_parent()
    if os.getppid() != parent:
        raise SystemExit(f"tether: the supervisor (pid {parent}) is gone; not starting {command[0]}")
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
