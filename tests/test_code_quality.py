"""The checks every commit keeps green (STYLE.md, "Habits"), run with the tests so CI runs them:
ruff over the code, the import-linter contracts of pyproject.toml (pure domain, CardCo as a third
party, no gateway -> jobs imports, the product never imports the local harness), and mypy --strict over the pure decisions: gateway/domain and
every module of a provider's package but its adapter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PURE_PROVIDER_MODULES = sorted(str(path.relative_to(ROOT)) for path in ROOT.glob("gateway/providers/*/*.py")
                               if path.name not in ("__init__.py", "adapter.py"))


@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "ruff", "check", "gateway", "jobs", "provider_fake", "paygate_local", "bench", "tests"],
    [str(BIN / "lint-imports")],
    [sys.executable, "-m", "mypy", "gateway/domain", *PURE_PROVIDER_MODULES],
], ids=["ruff", "import-linter", "mypy-pure"])
def test_the_code_passes(command: list[str]) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
