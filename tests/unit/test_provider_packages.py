"""One package per provider (gateway/providers/<provider>/): its adapter is the I/O side of the
seam, every other module holds pure rules, and the import-linter contract that keeps them pure names
exactly those modules, so a provider's new module cannot be left out of it (STYLE.md: pure decisions
import no I/O library; docs/architecture.md, "How to add a provider")."""

from __future__ import annotations

import tomllib
from pathlib import Path

from gateway.providers.registry import PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
PURE_CONTRACT = "a provider's rules are pure: no I/O libraries, nothing of paygate but gateway.domain"


def _contract(name: str) -> dict[str, list[str]]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(contract for contract in contracts if contract["name"] == name)


def test_every_registered_provider_is_one_package_with_an_adapter() -> None:
    for name, provider in PROVIDERS.items():
        package = ROOT / "gateway" / "providers" / name
        assert (package / "__init__.py").is_file() and (package / "adapter.py").is_file(), name
        assert type(provider).__module__ == f"gateway.providers.{name}.adapter"


def test_the_purity_contract_names_every_module_of_every_provider_but_its_adapter() -> None:
    modules = sorted(f"gateway.providers.{path.parent.name}.{path.stem}"
                     for path in (ROOT / "gateway" / "providers").glob("*/*.py")
                     if path.name not in ("__init__.py", "adapter.py"))
    assert modules, "no provider package found"
    assert sorted(_contract(PURE_CONTRACT)["source_modules"]) == modules


def test_only_the_providers_layer_names_a_provider() -> None:
    forbidden = set(_contract("only gateway.providers imports a provider's modules")["forbidden_modules"])
    assert {f"gateway.providers.{name}" for name in PROVIDERS} <= forbidden
