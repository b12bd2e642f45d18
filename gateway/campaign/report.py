"""The campaign's result: the JSON document of issue 12 (exactly ``{"seed", "operations",
"faults", "kills", "restarts", "violations", "wall_s"}``) and the same as a table, with throughput
and the first violations of each failed invariant, and the command that reproduces the run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KILLED = ("worker", "web", "clock")
RESTARTED = ("postgres", "broker")
SHOWN_PER_INVARIANT = 5


@dataclass(frozen=True)
class Result:
    seed: int
    checkouts: int
    payouts: int
    operations: Mapping[str, int]
    faults: Mapping[str, int]
    kills: Mapping[str, int]
    restarts: Mapping[str, int]
    violations: Mapping[str, list[str]]
    wall_s: float
    notes: Mapping[str, int]  # informational counts (HTTP requests, sink redeliveries, ...)

    @property
    def failed(self) -> bool:
        return any(self.violations.values())

    def document(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "operations": dict(sorted(self.operations.items())),
            "faults": dict(sorted(self.faults.items())),
            "kills": {process: int(self.kills.get(process, 0)) for process in KILLED},
            "restarts": {server: int(self.restarts.get(server, 0)) for server in RESTARTED},
            "violations": {name: len(found) for name, found in self.violations.items()},
            "wall_s": round(self.wall_s, 1),
        }

    def command(self) -> str:
        return f"paygate campaign --seed {self.seed} --checkouts {self.checkouts} --payouts {self.payouts}"


def _section(title: str, counts: Mapping[str, int]) -> list[str]:
    width = max((len(k) for k in counts), default=0)
    return [title, *(f"  {name:<{width}}  {count:>7}" for name, count in sorted(counts.items()))]


def table(result: Result) -> str:
    scenarios = sum(n for kind, n in result.operations.items() if kind.startswith(("checkout:", "payout:")))
    requests = result.notes.get("http-requests", 0)
    wall = max(result.wall_s, 0.001)
    lines = [f"paygate campaign: seed {result.seed}, {result.checkouts} checkouts, {result.payouts} payouts, "
             f"{result.wall_s:.1f} s wall, {scenarios / wall:.1f} scenarios/s, {requests / wall:.1f} gateway "
             "requests/s", ""]
    lines += _section("operations", result.operations) + [""]
    lines += _section("faults injected (CardCo rules)", result.faults) + [""]
    lines += _section("kills and restarts", {
        **{f"SIGKILL {p}": int(result.kills.get(p, 0)) for p in KILLED},
        **{f"restart {s}": int(result.restarts.get(s, 0)) for s in RESTARTED}}) + [""]
    lines += _section("notes", result.notes) + [""]
    lines.append("invariants (violations)")
    width = max(len(name) for name in result.violations)
    for name, found in result.violations.items():
        lines.append(f"  {name:<{width}}  {len(found):>7}")
        lines += [f"      {line}" for line in found[:SHOWN_PER_INVARIANT]]
        if len(found) > SHOWN_PER_INVARIANT:
            lines.append(f"      ... and {len(found) - SHOWN_PER_INVARIANT} more")
    lines.append("")
    if result.failed:
        total = sum(len(found) for found in result.violations.values())
        lines.append(f"FAILED: {total} violations. Reproduce with: {result.command()}")
    else:
        lines.append("OK: every invariant held.")
    return "\n".join(lines)
