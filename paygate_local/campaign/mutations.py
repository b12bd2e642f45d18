"""Prove the campaign bites ("Prove it bites: mutations"): one-line changes to the
product's safety rules, each applied to a copy of the tree and run under a short campaign that
must fail.

``python -m paygate_local.campaign.mutations --list`` prints the table (mutation, file:line, the rule it
breaks), then the equivalent mutants under their own heading; ``python -m paygate_local.campaign.mutations
[NAME ...]`` runs the list's mutations (all by default), each in a fresh copy of this tree (``.venv``,
``.git`` and caches left out) with ``PYTHONPATH`` pointing at the copy, so the campaign and every process
of its fleet import the mutated code, under ``paygate campaign --checkouts 300 --payouts 30``
(``--checkouts``, ``--payouts``, ``--seed`` to change), and reports which invariants caught each.
Every mutation of :data:`MUTATIONS` can be caught, and a pass is a miss (exit 1).

:data:`EQUIVALENT` keeps the equivalent mutants apart: each breaks a rule that other guards hold on
every path, so no run can catch it; each says which guards. They are not run by default and not
counted (were a guard removed, one would show: run it by name, its pass is reported as equivalent).
A mutation is applied only if its ``before`` text occurs exactly once in its file (``apply``);
``tests/unit/test_campaign_mutations.py`` holds every one of them applicable to the current tree.
Not run by CI: each run takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = shutil.ignore_patterns(".venv", ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                                  "*.egg-info")
RUN_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Mutation:
    name: str
    area: str  # checkout, notifications, recovery, payouts, recalls, refunds, outbox
    path: str  # relative to the repository root
    before: str  # occurs exactly once in the file; may carry context lines to be unique
    after: str  # the same text with one line changed
    breaks: str  # the safety rule, and its seed
    # An equivalent mutant's (EQUIVALENT): why no run can catch it, the other guards that hold the
    # same rule on every path.
    equivalent: str = ""


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("unknown-rounded-to-failed", "checkout", "gateway/domain/attempts.py",
             '    return Decision(new_state=S.UNKNOWN, outcome_reason=evidence.reason, record_provider_id=',
             '    return Decision(new_state=S.FAILED, outcome_reason=evidence.reason, record_provider_id=',
             "seed 004: an ambiguous send is Unknown, never rounded to a failure"),
    Mutation("send-after-cancellation", "checkout", "gateway/payments/queries.sql",
             "    SELECT order_id FROM orders\n     WHERE order_id = %(order_id)s AND state = 'Open'\n"
             "       FOR NO KEY UPDATE\n), started AS (",
             "    SELECT order_id FROM orders\n     WHERE order_id = %(order_id)s "
             "AND state IN ('Open', 'CancelRequested')\n       FOR NO KEY UPDATE\n), started AS (",
             "seed 004 Cancellation: a committed cancellation prevents the send"),
    Mutation("certificate-without-its-ledger-rows", "checkout", "gateway/effects/queries.sql",
             "      FROM jsonb_to_recordset(%(before)s::jsonb) AS s(sequence int, from_state text, to_state text, "
             "detail jsonb)\n), certificate AS (",
             "      FROM jsonb_to_recordset(%(before)s::jsonb) AS s(sequence int, from_state text, to_state text, "
             "detail jsonb) WHERE false\n), certificate AS (",
             "seed 001: a certified effect's ledger runs unbroken through EFFECT_CONFIRMED to CERTIFIED"),
    Mutation("new-key-per-payment-send", "checkout", "gateway/payments/client.py",
             "        observation = await calls.create(path, body, stored.idempotency_key, ",
             '        observation = await calls.create(path, body, __import__("uuid").uuid4().hex, ',
             "seed 004: every send of an attempt carries its one idempotency key"),
    Mutation("processing-read-as-succeeded", "notifications", "gateway/domain/provider_evidence.py",
             '    "processing": "processing",', '    "processing": "succeeded",',
             "seed 004: only the provider's success establishes the effect; processing is not known yet"),
    Mutation("acknowledge-unrecorded-webhook", "notifications", "gateway/http/webhooks.py",
             "        return from_error(NotificationNotRecorded())",
             "        return Response(status_code=204)",
             "seed 004 The Notification Handler: acknowledge only what was recorded"),
    Mutation("unknown-left-without-a-lookup", "recovery", "gateway/domain/recovery.py",
             "    # Unknown, a stalled Started, or one whose customer action expired (never shown again).\n"
             "    return Step(\"reconcile\")",
             "    # Unknown, a stalled Started, or one whose customer action expired (never shown again).\n"
             "    return Step(\"close-never-sent\", reason=\"never-sent\")",
             "seed 004 The Recovery Loop: an Unknown or stalled attempt is looked up (then resolved, resent "
             "or escalated), never taken for one that was never sent"),
    Mutation("new-key-per-pipeline-send", "recovery", "gateway/pipeline/executor.py",
             'observation = await calls.create(request.path, request.body, attempt["idempotency_key"], key)',
             'observation = await calls.create(request.path, request.body, __import__("uuid").uuid4().hex, key)',
             "seed 000: a resend of a payout, recall or refund uses the attempt's fixed key"),
    Mutation("malformed-answer-read-as-failed", "payouts", "gateway/domain/outcomes.py",
             'MALFORMED = Row(AttemptState.UNKNOWN, "provider.malformed-response"',
             'MALFORMED = Row(AttemptState.FAILED, "provider.malformed-response"',
             "seed 000: an answer nobody can read proves nothing (Unknown, reconcile)"),
    Mutation("not-found-before-the-cutoff", "payouts", "gateway/domain/attempt_timing.py",
             "    return lookup_started_at >= cutoff", "    return True",
             "seed 000: NotApplied on not found only after expiry plus skew plus the visibility delay"),
    Mutation("grant-valid-before-release", "payouts", "gateway/payouts/decisions.py",
             '    not_before, expires_at = timings.grant_window(record["release_at"])',
             '    not_before, expires_at = timings.grant_window(now)',
             "seed 000: a payout's grant is valid only from its release time less the lead (not_before); a "
             "scheduled payout is not sent before it"),
    Mutation("recalled-read-as-failed", "recalls", "gateway/providers/cardco/tables.py",
             '    "recalled": Row(AttemptState.SUCCEEDED, "provider.recalled",',
             '    "recalled": Row(AttemptState.FAILED, "provider.recalled",',
             "seed 000 section 17: the recall's own outcome, as the provider's contract establishes it"),
    Mutation("refunded-order-left-paid", "refunds", "gateway/domain/refunds.py",
             '        return RefundSettlement("Refunded", ORDER_REFUNDED, closes_owed=True)',
             '        return RefundSettlement(None, ORDER_REFUNDED, closes_owed=True)',
             "decision 0020: a succeeded refund makes the order Refunded"),
    Mutation("confirmation-not-written", "outbox", "gateway/domain/attempts.py",
             'effects = (ORDER_CONFIRMATION, REFUND_NOTICE) if finding == "refunded" else (ORDER_CONFIRMATION,)',
             'effects = (ORDER_CONFIRMATION, REFUND_NOTICE) if finding == "refunded" else ()',
             "seed 004 Downstream Work: the effect is written with the state, in one transaction"),
    Mutation("failed-delivery-marked-delivered", "outbox", "gateway/outbox/dispatcher.py",
             "            if error is None:\n                delivered.append",
             "            if True:\n                delivered.append",
             "seed 004 Downstream Work: a row is dispatched only once the sink took it"),
    Mutation("delivery-ahead-of-its-predecessor", "outbox", "gateway/outbox/queries.sql",
             "   AND (m.ordering_key IS NULL OR NOT EXISTS (",
             "   AND (m.ordering_key IS NOT NULL OR NOT EXISTS (",
             "seed 004 Downstream Work: rows with one ordering key are delivered in order, a later one "
             "never ahead of an unfinished earlier one"),
    Mutation("dead-letter-without-escalation", "outbox", "gateway/outbox/dispatcher.py",
             '    if row["kind"] == OPERATOR_ALERT:\n        return',
             '    if True:\n        return',
             "seed 004 Downstream Work: what cannot be delivered is escalated, never dropped"),
)

# Equivalent mutants: kept with the guards that make them so, not run by default and not counted.
EQUIVALENT: tuple[Mutation, ...] = (
    Mutation("recovery-resend-under-a-new-key", "recovery", "gateway/recovery/loop.py",
             'evidence = await self._sends.create_payment(stored_request(attempt), attempt["attempt_id"], '
             'actor=self.owner,',
             'evidence = await self._sends.create_payment(stored_request({**attempt, "idempotency_key": '
             '__import__("uuid").uuid4().hex}), attempt["attempt_id"], actor=self.owner,',
             "seed 004 The Recovery Loop: a resend after not found is the stored request under its original "
             "key, never a new payment",
             "every payment send passes the send gate first (payments/sends.py create_payment: gate.open), which "
             "digests the stored request with its transport, idempotency key included, and refuses one that is not "
             "the attempt's committed effect record (seed 001): the resend under a new key is never sent (Unknown, "
             "request.not-buildable; a seed-3 300/30 run passed with it)"),
    Mutation("grant-used-twice", "payouts", "gateway/pipeline/rows.sql",
             " WHERE grant_id = %(grant_id)s AND state = 'Issued' AND not_before <= %(now)s AND expires_at > %(now)s",
             " WHERE grant_id = %(grant_id)s AND state IN ('Issued', 'Consumed') AND not_before <= %(now)s "
             "AND expires_at > %(now)s",
             "seed 000: a grant is single-use",
             "a consumed grant presented again is refused by validation first (pipeline/grants.py: grant.consumed; "
             "44 to 60 such redeliveries in a seed-3 300/30 run), and a claim racing the one that consumed it "
             "fails on the payout's version (payouts/attempts.sql claim_payout; recalls and refunds: the "
             "unique grant_id of their attempts, uq_*_attempt_grant) and rolls back"),
    Mutation("stalled-send-closed-as-never-sent", "recovery", "gateway/domain/recovery.py",
             "        if now >= abandon_at:\n            return Step(\"close-never-sent\"",
             "        if True:\n            return Step(\"close-never-sent\"",
             "seed 004 The Recovery Loop: NotStarted is closed only past the abandonment threshold",
             "recovery claims a NotStarted attempt only once it is due (payments/leases.sql claim_due: "
             "next_check_at <= now), and its next_check_at is its created_at plus the abandonment threshold "
             "(payments/attempts.py _insert), which no writer moves earlier: the mutated branch only ever "
             "sees now >= abandon_at"),
)


def apply(text: str, mutation: Mutation) -> str:
    """The text with the mutation applied; ValueError unless ``before`` occurs exactly once."""
    found = text.count(mutation.before)
    if found != 1:
        raise ValueError(f"{mutation.name}: {mutation.path} has its text {found} times, not once")
    return text.replace(mutation.before, mutation.after)


def changed_line(text: str, mutation: Mutation) -> int:
    """The 1-based line of ``mutation.path`` the mutation changes."""
    start = text.index(mutation.before)
    before, after = mutation.before.splitlines(), mutation.after.splitlines()
    offset = next(i for i, (b, a) in enumerate(zip(before, after, strict=True)) if b != a)
    return text.count("\n", 0, start) + offset + 1


def table(root: Path = ROOT, mutations: tuple[Mutation, ...] = MUTATIONS) -> list[str]:
    """The markdown table of ``mutations``; an equivalent mutant's row says which guards hold its rule."""
    rows = ["| mutation | area | file:line | breaks |", "|---|---|---|---|"]
    for m in mutations:
        line = changed_line((root / m.path).read_text(), m)
        rows.append(f"| `{m.name}` | {m.area} | `{m.path}:{line}` | {m.breaks}"
                    f"{f' (equivalent: {m.equivalent})' if m.equivalent else ''} |")
    return rows


def listing(root: Path = ROOT) -> list[str]:
    """What ``--list`` prints: the list that runs and counts, then the equivalent mutants apart."""
    return [f"Mutations (run by default, each must be caught): {len(MUTATIONS)}", *table(root), "",
            f"Equivalent mutants (not run by default, not counted): {len(EQUIVALENT)}",
            *table(root, EQUIVALENT)]


@dataclass(frozen=True)
class Verdict:
    mutation: Mutation
    exit_code: int
    caught_by: dict[str, int]  # the violated invariants and how many violations each
    wall_s: float
    log_dir: Path

    @property
    def caught(self) -> bool:
        return self.exit_code != 0


def run_one(mutation: Mutation, *, seed: int, checkouts: int, payouts: int, root: Path = ROOT) -> Verdict:
    """Copy the tree, apply the mutation, run the campaign in the copy; what caught it."""
    work = Path(tempfile.mkdtemp(prefix=f"paygate-mutation-{mutation.name}-"))
    work.chmod(0o755)  # PostgreSQL runs as its own user and must reach its data directory
    tree = work / "tree"
    shutil.copytree(root, tree, ignore=LEFT_OUT)
    target = tree / mutation.path
    target.write_text(apply(target.read_text(), mutation))
    result = work / "result.json"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    started = time.monotonic()
    with (work / "campaign.out").open("w") as out:
        done = subprocess.run([sys.executable, "-m", "gateway.cli", "campaign", "--seed", str(seed),
                               "--checkouts", str(checkouts), "--payouts", str(payouts),
                               "--data-dir", str(work / "run"), "--json", str(result)],
                              cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S)
    document = json.loads(result.read_text()) if result.exists() else {}
    caught_by = {name: n for name, n in document.get("violations", {}).items() if n}
    if done.returncode == 0:
        shutil.rmtree(work, ignore_errors=True)
    return Verdict(mutation, done.returncode, caught_by, time.monotonic() - started, work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m paygate_local.campaign.mutations",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: every one of the list; an "
                                                 "equivalent mutant only by name)")
    parser.add_argument("--list", action="store_true", help="print the table of mutations and exit")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--checkouts", type=int, default=300)
    parser.add_argument("--payouts", type=int, default=30)
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(listing()))
        return 0
    known = {m.name: m for m in (*MUTATIONS, *EQUIVALENT)}
    unknown = [name for name in args.names if name not in known]
    if unknown:
        parser.error(f"unknown mutations: {', '.join(unknown)}")
    missed = 0
    for mutation in [known[name] for name in args.names] or list(MUTATIONS):
        verdict = run_one(mutation, seed=args.seed, checkouts=args.checkouts, payouts=args.payouts)
        missed += not verdict.caught and not mutation.equivalent
        caught = ", ".join(f"{name} ({n})" for name, n in sorted(verdict.caught_by.items())) or "-"
        result = "CAUGHT" if verdict.caught else "passed (equivalent)" if mutation.equivalent else "MISSED"
        print(f"{mutation.name}: {result} in {verdict.wall_s:.0f} s by {caught}"
              + (f"; logs in {verdict.log_dir}" if verdict.caught else ""), flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
