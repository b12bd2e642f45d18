"""What a pgbench ceiling runs (bench/pgbench_scripts.py), by name, for comparison with what the
product runs (tests/statements_support.py)."""

from __future__ import annotations

from bench.pgbench_scripts import LEFT_OUT, SCRIPTS, Control, Statement
from gateway.payments.attempts import LOCK_RECORD_WITH_EVIDENCE
from tests.statements_support import catalogue, names

# The driver's own transaction boundaries, which the recording of statements does not see.
_BOUNDARIES = ("BEGIN", "COMMIT")


def script_names(flow: str) -> list[str]:
    """The ceiling's statements and savepoints in order, each statement by its product name."""
    return [step.name if isinstance(step, Statement) else step.text for step in SCRIPTS[flow][0]()
            if not (isinstance(step, Control) and step.text in _BOUNDARIES)]


def product_names(recorded: list[str], flow: str) -> list[str]:
    """What the product ran, by name, without the statements the ceiling names as left out."""
    composed = [(step.name, step.text) for steps, _ in SCRIPTS.values() for step in steps()
                if isinstance(step, Statement)]
    composed.append(("gateway/effects/queries.sql lock_record_with_evidence", LOCK_RECORD_WITH_EVIDENCE))
    return [name for name in names(recorded, catalogue(*composed)) if name not in LEFT_OUT[flow]]
