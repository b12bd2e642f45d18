"""The campaign's result: the JSON document of the README's "Fault campaign with real processes"
(``{"seed", "operations", "faults", "kills", "restarts", "violations", "wall_s"}``) with the fault counts added,
read from evidence:
``faults_fired`` (what CardCo's request log and webhook deliveries say fired, by
``operation:action``; ``faults`` stays the rules installed), ``outcomes`` (the gateway's final
states of checkouts, payouts, refunds and recalls) and ``escalations`` (by reason); and what the
disruptions did: ``pauses`` (pauses past a lease, by worker) and ``outages`` (servers, sinks and
CardCo's storms, ``paygate_local.campaign.disruptions.Disruptions.outages``); the same as a
table, with throughput and the first violations of each failed invariant, and the command that
reproduces the run."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from paygate_local.campaign.invariants import Snapshot

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
    faults_fired: Mapping[str, int] = field(default_factory=dict)
    outcomes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    escalations: Mapping[str, int] = field(default_factory=dict)
    pauses: Mapping[str, int] = field(default_factory=dict)
    outages: Mapping[str, Any] = field(default_factory=dict)

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
            "faults_fired": dict(sorted(self.faults_fired.items())),
            "outcomes": {what: dict(sorted(states.items())) for what, states in self.outcomes.items()},
            "escalations": dict(sorted(self.escalations.items())),
            "pauses": dict(sorted(self.pauses.items())),
            "outages": dict(self.outages),
        }

    def command(self) -> str:
        return f"paygate campaign --seed {self.seed} --checkouts {self.checkouts} --payouts {self.payouts}"


def faults_fired(s: Snapshot) -> Counter[str]:
    """What fired, from CardCo's own evidence: each logged request and each delivery names the
    rule that applied to it (a ``times: 0`` storm counts every request it answered)."""
    return Counter(entry["fault"] for entry in [*s.requests, *s.deliveries] if entry.get("fault"))


def outcomes(s: Snapshot, orders: frozenset[str], payouts: frozenset[str]) -> dict[str, Counter[str]]:
    """The gateway's final states of the run's own orders (checkouts) and payouts (the demo's
    reference data may hold others), and of the refund and recall attempts."""
    return {"checkouts": Counter(o["state"] for o in s.orders if o["order_id"] in orders),
            "payouts": Counter(p["state"] for p in s.payouts if p["payout_id"] in payouts),
            "refunds": Counter(a["state"] for a in s.refund_attempts),
            "recalls": Counter(a["state"] for a in s.recall_attempts)}


def escalations(s: Snapshot) -> Counter[str]:
    """Every escalation the gateway raised in the run, by reason."""
    return Counter(e["reason"] for e in s.escalations)


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
    lines += _section("faults installed (CardCo rules)", result.faults) + [""]
    lines += _section("faults fired (CardCo's request log and deliveries)", result.faults_fired) + [""]
    for what, states in result.outcomes.items():
        lines += _section(f"outcomes: {what}", states) + [""]
    lines += _section("escalations (by reason)", result.escalations) + [""]
    lines += _section("kills and restarts", {
        **{f"SIGKILL {p}": int(result.kills.get(p, 0)) for p in KILLED},
        **{f"restart {s}": int(result.restarts.get(s, 0)) for s in RESTARTED}}) + [""]
    lines += _section("pauses past a lease", result.pauses) + [""]
    lines += [f"outages {json.dumps(result.outages, sort_keys=True)}", ""]
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
