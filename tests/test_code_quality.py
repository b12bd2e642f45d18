"""The checks every commit keeps green (STYLE.md, "Habits"), run with the tests so CI runs them:
ruff over the code, the import-linter contracts of pyproject.toml (pure domain, CardCo as a third
party, no gateway -> jobs imports, the product never imports the local harness), and mypy --strict over
every package that ships: the product (gateway, jobs), the fake provider and the local harness."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "ruff", "check", "gateway", "jobs", "provider_fake", "paygate_local", "bench", "tests"],
    [str(BIN / "lint-imports")],
    [sys.executable, "-m", "mypy", "gateway", "jobs", "provider_fake", "paygate_local"],
], ids=["ruff", "import-linter", "mypy"])
def test_the_code_passes(command: list[str]) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


# STYLE.md: code cites the rule it keeps (a seed section, API.md, DESIGN.md, docs/decisions), never the
# tracker's history; that belongs in git and docs/decisions. Markdown (README, docs/*.md, the decision
# records) may keep it. The migrations that already carry such comments keep their text: they are applied
# somewhere, and gateway/store/migrate.py refuses a migration whose SHA-256 changed since it was applied.
HISTORY = re.compile(r"\b[Ii]ssues? \d+")
CODE_SUFFIXES = {".py", ".sql", ".js", ".html", ".css", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".sh"}
CODE_DIRS = ("gateway", "jobs", "provider_fake", "paygate_local", "bench", "tests", "docs", ".ci")
CODE_FILES = ("schema.sql", "pyproject.toml", "Procfile")
APPLIED_MIGRATIONS_WITH_HISTORY = frozenset(f"gateway/store/migrations/{name}.sql" for name in (
    "0001_baseline", "0002_recall_checks_and_indexes", "0003_refunds", "0004_job_republications",
    "0005_ops_list_keysets", "0006_provider_lookup_buckets", "0007_metric_counters", "0008_console_queues",
    "0009_outbox_due_order", "0010_owed_refunds_keyset", "0011_escalations_by_key",
    "0012_one_attempt_per_provider_object", "0013_overview_reads"))


def _code_files() -> list[Path]:
    files = [ROOT / name for name in CODE_FILES if (ROOT / name).is_file()]
    for directory in CODE_DIRS:
        files += [path for path in (ROOT / directory).rglob("*")
                  if path.is_file() and (path.suffix in CODE_SUFFIXES or path.name == "run")
                  and "__pycache__" not in path.parts and ".venv" not in path.parts]
    return sorted(files)


def test_code_names_no_issue_history() -> None:
    """Comments, docstrings and SQL comments state the rule or cite where it is written (seeds, API.md,
    DESIGN.md, docs/decisions), not the issue that asked for it (STYLE.md)."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in _code_files() if str(path.relative_to(ROOT)) not in APPLIED_MIGRATIONS_WITH_HISTORY
             for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1)
             if HISTORY.search(line)]
    assert not found, "history belongs in git and docs/decisions:\n" + "\n".join(found[:50])
