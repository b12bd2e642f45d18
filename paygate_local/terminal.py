"""Lines for the terminal ``paygate up`` runs in, which may have gone: after SIGHUP,
every write to it fails (EIO), and a failed line must not stop the stopping."""

from __future__ import annotations

import contextlib


def say(text: str) -> None:
    """``text`` on standard output, if there still is one."""
    with contextlib.suppress(OSError):
        print(text, flush=True)
