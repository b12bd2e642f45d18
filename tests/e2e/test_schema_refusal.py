"""The Procfile's processes refuse a database that lacks a migration of their build
(docs/decisions/0035): a real `web` (gateway.web: uvicorn) and a real `clock` started against it exit
with an error naming the missing migration and `paygate db migrate`, instead of running SQL the
schema cannot answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from gateway.store.migrate import shipped
from paygate_local.servers import free_port
from tests.conftest import CERTIFICATE_KEY_ID, CERTIFICATE_PRIVATE_KEY, TEST_ACCOUNT, TEST_PEPPER, account_config

pytestmark = pytest.mark.e2e


def test_web_and_clock_exit_on_a_database_that_lacks_a_migration(
        database_url: str, redis_url: str, tmp_path: Path) -> None:
    last = shipped()[-1]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM paygate_schema_migrations WHERE version = %(v)s", {"v": last.version})
    config = tmp_path / "paygate.json"
    config.write_text(json.dumps({
        "token_pepper": TEST_PEPPER, "provider_accounts": [account_config(TEST_ACCOUNT)],
        "certificate_keys": [{"key_id": CERTIFICATE_KEY_ID, "private_key": CERTIFICATE_PRIVATE_KEY,
                              "active": True}]}))
    env = {**os.environ, "PAYGATE_CONFIG": str(config), "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "PAYGATE_LOG_FORMAT": "json"}
    commands = {
        "web": [sys.executable, "-m", "gateway.web", "--host", "127.0.0.1", "--port", str(free_port())],
        "clock": [sys.executable, "-m", "jobs.clock"],
    }
    started = {name: subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for name, argv in commands.items()}
    try:
        for name, process in started.items():
            try:
                output, _ = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
                pytest.fail(f"{name} kept running on a database that lacks {last.label}:\n{output}")
            assert process.returncode != 0, output
            assert "schema_not_current" in output and f"lacks migrations this build needs: {last.label}" in output, \
                output
            assert "run `paygate db migrate`" in output
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
