"""The Procfile (what a fleet runs) and ``paygate up`` (what a laptop runs) start the same
processes with the same arguments, apart from hosts and ports (DESIGN.md, "Parts and how they run")."""

from __future__ import annotations

import shlex
from pathlib import Path

from paygate_local.up import processes

PROCFILE = Path(__file__).resolve().parents[2] / "Procfile"


def _without_addresses(argv: list[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--host", "--port"):
            skip = True
            continue
        kept.append(arg)
    return kept


def test_paygate_up_runs_what_the_procfile_names() -> None:
    procfile = {name: shlex.split(command) for name, _, command in
                (line.partition(": ") for line in PROCFILE.read_text().splitlines() if line.strip())}
    local = processes(web_port=8000, provider_port=8100, sinks_port=8200)
    assert set(procfile) == {"web", "worker", "clock", "provider"} <= set(local)
    for name, argv in procfile.items():
        assert _without_addresses(argv)[1:] == _without_addresses(local[name])[1:], name
