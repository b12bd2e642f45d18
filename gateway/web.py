"""The ``web`` process (Procfile, ``paygate up``): uvicorn serving :func:`gateway.app.app_from_environment`
with uvloop and httptools, no access log, and ``web_workers`` worker processes (docs/decisions/0049).

    python -m gateway.web [--host 127.0.0.1] [--port 8000]

One worker serves in this process. With more, uvicorn's supervisor binds the socket here and runs
that many processes accepting on it, each with its own lifespan: its own database pool
(``db_pool_size`` connections each), token cache and counters, flushed to PostgreSQL every
``metrics_flush_s`` and at shutdown (docs/decisions/0041). A worker that cannot start (a schema
that lacks a migration) stops the whole process, as a single worker does. The workers share the
connections evenly, the least-loaded accepting (gateway/web_balance.py, docs/decisions/0081).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from gateway.settings import Settings, load_settings
from gateway.web_balance import SHARES_ENV, ConnectionShares

APP = "gateway.app:app_from_environment"
BALANCED_LOOP = "gateway.web_balance:new_event_loop"


def options(settings: Settings, host: str, port: int) -> dict[str, object]:
    """uvicorn's settings for the web process (uvloop and httptools named, not "auto"; several
    workers run uvloop through gateway/web_balance.py)."""
    return {"factory": True, "host": host, "port": port,
            "loop": BALANCED_LOOP if settings.web_workers > 1 else "uvloop", "http": "httptools",
            "access_log": False, "log_level": settings.log_level, "workers": settings.web_workers}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gateway.web", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    settings = load_settings()
    with _connection_shares(settings.web_workers):
        uvicorn.run(APP, **options(settings, args.host, args.port))  # type: ignore[arg-type]


@contextmanager
def _connection_shares(workers: int) -> Iterator[None]:
    """With several workers, the table they share connections by (docs/decisions/0081): made
    before uvicorn starts them, named to them in ``PAYGATE_WEB_SHARES``, removed at the end."""
    if workers == 1:
        yield
        return
    shares = ConnectionShares.create(workers)
    os.environ[SHARES_ENV] = str(shares.path)
    try:
        yield
    finally:
        shares.remove()


if __name__ == "__main__":
    main()
