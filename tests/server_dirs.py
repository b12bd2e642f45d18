"""Directories for the servers tests start: outside pytest's ``tmp_path``.

The embedded PostgreSQL runs, when the tests run as root, as its own system user, which must
reach its data directory. pytest's ``tmp_path`` lives under ``/tmp/pytest-of-<user>``, which every
pytest session that starts on the machine (another run on a shared machine, an xdist worker)
makes 0700 again: a server started there fails to start, or to restart mid-test. Every test that
starts PostgreSQL (the session's server, ``paygate up``, ``paygate campaign``, a server of its
own) puts it in a :func:`server_dir`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def server_dir(prefix: str) -> Iterator[Path]:
    """A fresh directory under the system's temporary directory, readable by the server's user
    (0755), removed with everything in it afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
