"""The pgbench scripts of the ceilings (bench/README.md), generated from the product's named SQL.

Each ceiling runs the statements the gateway runs for one checkout, one matched notification and
one recovery pass, in the gateway's transactions: the statement texts are the product's own (its
``.sql`` named blocks, as the repositories load and compose them), so a change to one changes the
ceiling with it. What differs is only where the parameters come from. The gateway binds values it
computes; here each parameter is bound to a pgbench variable (``-D``, ``\\set``, or ``\\gset`` from a
statement before it, as the gateway reads its values back) or, where the gateway makes the value
itself (a fresh id, the clock, the JSON it builds), to an SQL expression that makes it in the
database. Every parameter of every statement must be bound, and no binding may go unused.

Three values are bound differently from the gateway's, so a prepared row can be used again and
costs the same each time: the order settles back to ``Open`` (not ``Paid``), a notification or a
recovery pass leaves its attempt ``Started`` or ``Unknown`` (not ``Succeeded``), and each outbox
row gets a key of its own. The write is the same statement with the same locks and rows.

Each client walks its own orders or attempts, ``1 + client_id + clients * turn``, so no two clients
ever hold the same order: the gateway's customers do not pay one order twice at once, and a
statement that returns its row into variables (``\\gset``) must find it.

The checkout's ceiling and the certified notification's (``notification_certified``) run seed
001's statements as production does: the effect record and its ledger rows with the attempt, the
record locked with its evidence, the certificate with its ledger rows (its document, signature and
rows are literals: the gateway builds them). Left out, each named with its reason in ``LEFT_OUT``:
the token lookup (cached by the gateway), the lookup tokens, and the certificate of the record-less
notification and recovery ceilings, whose prepared attempts have no effect record.
tests/integration/notifications/test_bench_script.py and tests/integration/recovery/test_bench_scripts.py
record what the product runs for each flow and hold these scripts to it.

    python bench/pgbench_scripts.py checkout|notification|recovery   # prints the script
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.support import ACCOUNT, pgbench  # noqa: E402
from gateway.domain.certificates import sign  # noqa: E402
from gateway.domain.effect_manifest import Transport  # noqa: E402
from gateway.domain.effect_protocol import ProtocolState, follow  # noqa: E402
from gateway.effects.certify import Subject, document  # noqa: E402
from gateway.effects.ledger import (  # noqa: E402
    Intent,
    entries_of,
    next_entry,
    record_parameters,
    rows_of,
    with_ledger_of_record,
)
from gateway.notifications.repository import IDENTIFY_AND_RECORD  # noqa: E402
from gateway.payments.attempts import LOCK_RECORD_WITH_EVIDENCE  # noqa: E402
from gateway.payments.client import StoredRequest  # noqa: E402
from gateway.payments.evidence_lock import LOCK_FOR_EVIDENCE  # noqa: E402
from gateway.payments.sends import payment_intent, payment_prelude  # noqa: E402
from gateway.store.queries import load_queries  # noqa: E402

PAYMENTS = load_queries("gateway.payments")
# The statements that write an effect record's ledger rows, composed as the product composes them.
INSERT = with_ledger_of_record(PAYMENTS["insert"], prefix="record_")
MARK_STARTED = with_ledger_of_record(PAYMENTS["mark_started"])
LEASES = load_queries("gateway.payments", "leases.sql")
EFFECTS = load_queries("gateway.effects")
STATUS = load_queries("gateway.payments", "status.sql")

# pgbench reads ":name" as a variable anywhere in a command, string literals included; "::" is a cast.
_VARIABLE = re.compile(r"(?<!:):(?=[A-Za-z_])")
_PARAMETER = re.compile(r"%%|%\((\w+)\)s")


@dataclass(frozen=True)
class Statement:
    """One of the product's statements (``text``, as psycopg receives it) with each of its
    parameters bound to pgbench text; ``gset`` keeps its one row in variables named by column."""

    name: str
    text: str
    bind: Mapping[str, str]
    gset: bool = False


@dataclass(frozen=True)
class Control:
    """A transaction control command the gateway's driver sends (BEGIN, SAVEPOINT, ...)."""

    text: str


Step = Statement | Control


def without_comments(text: str) -> str:
    """``text`` without its ``--`` comments (outside string literals) and blank lines: pgbench
    would end a command at a semicolon inside a comment and read ``:name`` there as a variable."""
    lines = []
    for line in text.splitlines():
        quoted, cut = False, len(line)
        for i, char in enumerate(line):
            if char == "'":
                quoted = not quoted
            elif not quoted and line.startswith("--", i):
                cut = i
                break
        if line[:cut].strip():
            lines.append(line[:cut].rstrip())
    return "\n".join(lines)


def bound(statement: Statement) -> str:
    """The statement as pgbench runs it: comments out, each parameter replaced by its binding."""
    text = without_comments(statement.text).rstrip().rstrip(";")
    if _VARIABLE.search(text):
        raise ValueError(f"{statement.name}: pgbench would read {_VARIABLE.search(text)!r} as a variable")
    used = set(_PARAMETER.findall(text)) - {""}
    if used - set(statement.bind) or set(statement.bind) - used:
        raise ValueError(f"{statement.name}: unbound {sorted(used - set(statement.bind))}, "
                         f"unused {sorted(set(statement.bind) - used)}")
    text = _PARAMETER.sub(lambda match: statement.bind[match[1]] if match[1] else "%", text)
    return text + (" \\gset" if statement.gset else ";")


def render(title: str, prelude: list[str], steps: list[Step]) -> str:
    lines = [f"-- {line}" for line in title.splitlines()] + prelude
    for step in steps:
        if isinstance(step, Control):
            lines.append(step.text + ";")
        else:
            lines += [f"-- {step.name}", bound(step)]
    return "\n".join(lines) + "\n"


GENERATED = "Generated by bench/pgbench_scripts.py from the product's named SQL: do not edit."
# Each client's own row this turn (-D turn=0 clients=N rows=M; see the module's docstring).
WALK = ["\\set turn :turn + 1", "\\set n :first + :client_id + :clients * (:turn % (:rows / :clients))"]
NOW = "now()"
ORDER = "'PGB-' || (:n)::text"
# The outbox rows write_evidence queues for a success: the order confirmation with its payload
# (gateway/payments/attempts.py _effect_payload), its dedup key made fresh per transaction.
OUTBOX = ("jsonb_build_array(jsonb_build_object('dedup_key', concat_ws(chr(58), 'attempt', (:attempt_id)::text, "
          "'order-confirmation', txid_current()), 'kind', 'order-confirmation', 'order_id', (:order_id)::text, "
          "'attempt_id', (:attempt_id)::text, 'customer_id', (:customer_id)::text, "
          "'amount_minor', (:amount_minor)::int, 'currency', (:currency)::text, "
          "'provider_payment_id', {payment_id}, 'client_reference', (:client_reference)::text))")


def write_evidence(*, state: str, payment_id: str, actor: str, kind: str | None, detail: str | None,
                   transition: str, lease: Mapping[str, str] | None = None) -> Statement:
    """queries.sql ``write_evidence`` for a success (gateway/payments/attempts.py ``_write``):
    the attempt as locked by ``lock_for_evidence`` (its variables), ``state`` written."""
    lease = lease or {"lease_mode": "NULL", "lease_owner": "NULL", "lease_token": "NULL",
                      "lease_next_check_at": "NULL"}
    return Statement("gateway/payments/queries.sql write_evidence", PAYMENTS["write_evidence"], {
        "attempt_id": ":attempt_id", "version": ":version", "state": f"'{state}'", "outcome_reason": "NULL",
        "provider_payment_id": payment_id, "provider_status": "'succeeded'", "set_provider_status": "true",
        "store_action": "false", "clear_action": "true", "next_action": "NULL", "next_action_expires_at": "NULL",
        "next_check_at": "NULL", "now": NOW, "actor": f"'{actor}'",
        "evidence_kind": f"'{kind}'" if kind else "NULL", "evidence_detail": detail or "NULL",
        "transition": transition, "order_state": "'Open'", "cancel_order": "false",
        "ordering_key": "concat_ws(chr(58), 'attempt', (:attempt_id)::text)",
        "outbox": OUTBOX.format(payment_id=payment_id), "resolves": "true", "note": "'attempt Succeeded'",
        **lease})


def lock_for_evidence(payment_id: str) -> Statement:
    return Statement("gateway/payments/queries.sql lock_for_evidence", LOCK_FOR_EVIDENCE,
                     {"attempt_id": ":attempt_id", "evidence_payment_id": payment_id}, gset=True)


def literal(value: Any) -> str:
    """``value`` as a jsonb literal, as the gateway sends it (one parameter it built itself): a
    Unicode-escaped string, its colons escaped so pgbench reads none as a variable
    (``cardco:acct_store:test``); the lexer turns it back, at no cost per transaction."""
    text = json.dumps(value).replace("\\", "\\\\").replace("'", "''").replace(":", "\\003A")
    return "U&'" + text + "'"


_NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY_ID = "bench-1"


def record_rows() -> list[dict[str, Any]]:
    """The effect record's first four ledger rows as the gateway writes them with the attempt's
    insert (PROPOSED .. INTENT_PERSISTED), its ids placeholders."""
    intent = Intent("payment", uuid.UUID(int=0), Transport(ACCOUNT, "http://cardco.bench/v1/payments", "2026-11-01",
                                                           "key"), {})
    rows: list[dict[str, Any]] = record_parameters(intent, payment_prelude({"order_id": "PGB", "customer_id": "cus"}),
                                                   "endpoint", _NOW)["entries"].obj
    return rows


def _started() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ledger rows the gateway sends with ``mark_started`` for a record as its insert wrote it:
    AUTHORIZATION_ISSUED and the send gate's EXECUTING (gateway/payments/attempts.py
    ``mark_started``), and the record as they leave it (its digest a placeholder)."""
    record: dict[str, Any] = {"attempt_id": uuid.UUID(int=0), "sequence": 4, "protocol_state": "INTENT_PERSISTED",
                              "effect_digest": b"", "idempotency_key": "key"}
    entries, record = entries_of(record, [(ProtocolState.AUTHORIZATION_ISSUED, {"attempt_state": "Started"}),
                                          (ProtocolState.EXECUTING, {"effect_digest": "00"})], "endpoint", _NOW)
    return rows_of(entries).obj, record


def executing_record() -> dict[str, Any]:
    """A checkout's effect record as the send gate leaves it (EXECUTING, after :func:`record_rows`
    and :func:`_started`'s rows), its manifest as the gateway derives it for a 42.50 EUR order."""
    stored = StoredRequest(ACCOUNT, "http://cardco.bench/v1/payments", "2026-11-01", str(uuid.UUID(int=0)),
                           json.dumps({"amount_minor": 4250, "currency": "EUR", "payment_method": "pm_card_visa",
                                       "client_reference": "PGB-1-a1"}))
    intent = payment_intent(stored, uuid.UUID(int=0))
    return {**_started()[1], "attempt_kind": intent.kind, "rail": intent.transport.rail,
            "provider_account": ACCOUNT, "idempotency_key": stored.idempotency_key, "effect_digest": intent.digest,
            "policy_digest": None, "approval_set_digest": None, "manifest": intent.manifest}


def executing_rows() -> list[dict[str, Any]]:
    """Every ledger row of :func:`executing_record`, first to last."""
    return record_rows() + _started()[0]


def certified(actor: str, payment_id: str) -> list[Step]:
    """A success's certificate (gateway/payments/attempts.py ``_write``, gateway/effects/ledger.py
    ``advance_record``, gateway/effects/certify.py ``Certifier.issue``): the record locked with its
    evidence read in the same statement, after the writes, then the certificate with the ledger
    rows EXECUTING -> EFFECT_CONFIRMED -> CERTIFIED in one statement. The certificate, its
    signature and the rows are what the gateway sends for :func:`executing_record` (literals: the
    gateway builds them), the record's digest and key as the lock read them."""
    record = executing_record()
    before, record = entries_of(record, [(state, {"attempt_state": "Succeeded"}) for state in follow(
        "payment", ProtocolState(record["protocol_state"]), "Succeeded")], actor, _NOW)
    entry, _ = next_entry(record, ProtocolState.CERTIFIED, {"key_id": KEY_ID}, actor, _NOW)
    subject = Subject("order_id", "PGB-1", "pay_pgb_1", "succeeded", "", [1])
    certificate = document(record, subject, [1], _NOW)
    signature = sign(certificate, key_id=KEY_ID, private_seed=bytes(32))["signature"]["value"]
    return [
        Statement("gateway/effects/queries.sql lock_record_with_evidence", LOCK_RECORD_WITH_EVIDENCE,
                  {"attempt_id": ":attempt_id"}, gset=True),
        Statement("gateway/effects/queries.sql insert_certificate", EFFECTS["insert_certificate"], {
            "attempt_id": "(:attempt_id)::uuid", "effect_digest": "(:effect_digest)::bytea",
            "idempotency_key": "(:idempotency_key)::text", "now": NOW, "actor": f"'{actor}'",
            "before": literal(rows_of(before).obj),
            "certificate": literal(certificate), "key_id": f"'{KEY_ID}'", "signature": f"'{signature}'",
            "sequence": str(entry["sequence"]), "from_state": f"'{entry['from_state']}'",
            "to_state": f"'{entry['to_state']}'", "detail": literal(entry["detail"].obj)}),
    ]


def checkout() -> list[Step]:
    """PayAsync's three transactions on an Open order ``PGB-<n>`` (gateway/payments/attempts.py
    ``get_or_create_live``, ``mark_started``, ``record_response``), the send between the second
    and the third answered ``succeeded``. Variables: ``-D account=... rows=<orders> clients=N turn=0``."""
    payment_id = "'pay_' || replace((:attempt_id)::text, '-', '')"
    steps: list[Step] = [
        Control("BEGIN"),
        Statement("gateway/payments/queries.sql lock_order_for_checkout", PAYMENTS["lock_order_for_checkout"],
                  {"order_id": ORDER}, gset=True),
        Statement("gateway/payments/queries.sql insert", INSERT, {
            "attempt_id": "gen_random_uuid()", "order_id": ":order_id", "customer_id": ":customer_id",
            "attempt_number": ":next_attempt_number", "provider_account": ":provider_account",
            "endpoint": "'http://cardco.bench/v1/payments'", "api_version": "'2026-11-01'",
            "client_reference": "(:order_id)::text || '-a' || (:next_attempt_number)::text",
            "idempotency_key": "gen_random_uuid()::text",
            "request_body": "json_build_object('amount_minor', (:amount_minor)::int, 'currency', (:currency)::text, "
                            "'payment_method', (:payment_method)::text, 'client_reference', "
                            "(:order_id)::text || '-a' || (:next_attempt_number)::text)::text",
            "amount_minor": ":amount_minor", "currency": ":currency", "now": NOW,
            "next_check_at": "now() + interval '60 s'",
            # The attempt's effect record and its ledger up to INTENT_PERSISTED, written by the
            # same statement (seed 001; docs/decisions/0054).
            "record_attempt_kind": "'payment'", "record_rail": "split_part((:provider_account)::text, ':', 1)",
            "record_provider_account": ":provider_account", "record_idempotency_key": "gen_random_uuid()::text",
            "record_effect_digest": "sha256(gen_random_uuid()::text::bytea)", "record_policy_digest": "NULL::bytea",
            "record_approval_set_digest": "NULL::bytea", "record_manifest": "'{}'::jsonb", "record_now": NOW,
            "record_actor": "'endpoint'", "record_entries": literal(record_rows())}, gset=True),
        Control("COMMIT"),
        Control("BEGIN"),
        Statement("gateway/payments/queries.sql mark_started", MARK_STARTED, {
            "attempt_id": ":attempt_id", "order_id": ":order_id", "version": ":version", "now": NOW,
            "actor": "'endpoint'", "escalation_deadline": "now() + interval '23 hours'",
            "next_check_at": "now() + interval '30 s'",
            # The ledger rows it appends for the record as the insert wrote it (docs/decisions/0054).
            "entries": literal(_started()[0]), "expected_sequence": "4", "expected_state": "'INTENT_PERSISTED'",
            # The stored request it expects unchanged, as the insert answered it.
            "provider_account": ":provider_account", "endpoint": ":endpoint", "api_version": ":api_version",
            "idempotency_key": ":idempotency_key", "request_body": ":request_body",
            "expected_digest": "(SELECT effect_digest FROM effect_records WHERE attempt_id = (:attempt_id)::uuid)",
            "expected_key": "(SELECT idempotency_key FROM effect_records WHERE attempt_id = (:attempt_id)::uuid)"}),
        Control("COMMIT"),
        Control("BEGIN"),
        lock_for_evidence(payment_id),
        write_evidence(state="Succeeded", payment_id=payment_id, actor="endpoint", kind="send_result",
                       detail="jsonb_build_object('finding', 'succeeded', "
                              "'provider_account', (:provider_account)::text, "
                              f"'provider_payment_id', {payment_id}, 'provider_status', 'succeeded', "
                              "'amount_minor', (:amount_minor)::int, 'currency', (:currency)::text, "
                              "'decision', 'Succeeded')",
                       transition="'{\"from\": \"Started\", \"to\": \"Succeeded\", \"reason\": null}'"),
        *certified("endpoint", payment_id),
        # The answer's effect and refund, read before the COMMIT (gateway/payments/checkout.py _record).
        Statement("gateway/payments/status.sql status_extensions", STATUS["status_extensions"],
                  {"attempt_id": ":attempt_id", "order_id": ":order_id"}),
        Control("COMMIT"),
    ]
    return steps


def notification(prefix: str = "PGB") -> list[Step]:
    """A matched ``payment.succeeded`` for a Started attempt ``PGB-<n>`` whose provider payment id
    is ``pay_pgb_<n>`` (gateway/notifications/handler.py: identify, record and lock in one
    statement, then the evidence under that lock, without a savepoint), the attempt without an
    effect record (bench/notifications.py without ``--certified``). Variables: ``-D account=...
    rows=<attempts> clients=N turn=0 first=1``."""
    return _notified(prefix, state="Started", actor="notification-handler")


def notification_certified() -> list[Step]:
    """:func:`notification` as production runs it, for the attempt ``PGC-<n>`` a checkout started
    (its effect record at EXECUTING, bench/notifications.py ``prepare_certifiable``): its success
    written and certified (:func:`certified`). Each attempt takes one notification, so a run has
    a row per transaction (pgbench ``-t``). Variables as :func:`notification`'s."""
    return _notified("PGC", state="Succeeded", actor="notification-handler", certify=True)


def _notified(prefix: str, *, state: str, actor: str, certify: bool = False) -> list[Step]:
    payment_id = f"'pay_{prefix.lower()}_' || (:n)::text"
    reference = f"'{prefix}-' || (:n)::text || '-a1'"
    event = "'evt_pgb_' || txid_current()"
    steps: list[Step] = [
        Control("BEGIN"),
        Statement("gateway/notifications/queries.sql identify_and_record", IDENTIFY_AND_RECORD, {
            "provider_account": ":account", "client_reference": reference,
            "provider_payment_id": payment_id, "notification_key": event,
            "detail": "jsonb_build_object('provider_event_id', " + event + ", 'type', 'payment.succeeded', "
                      "'status', 'succeeded', 'provider_payment_id', " + payment_id + ", 'client_reference', "
                      + reference + ", 'amount_minor', 4250, 'currency', 'EUR')",
            "conflict_key": "concat_ws(chr(58), 'notification', (:account)::text, " + event + ", 'identity-conflict')",
            "unmatched_key": "concat_ws(chr(58), 'notification', (:account)::text, " + event + ", 'unmatched')",
            "evidence_payment_id": payment_id, "now": NOW}, gset=True),
        write_evidence(state=state, payment_id=payment_id, actor=actor, kind=None, detail=None,
                       transition="'{\"from\": \"Started\", \"to\": \"Succeeded\", \"reason\": null}'"),
        *(certified(actor, payment_id) if certify else []),
        Control("COMMIT"),
    ]
    return steps


def recovery() -> list[Step]:
    """One recovery pass over the Unknown attempt ``PGB-<n>`` (attempt_id ``md5('PGB-<n>')``) whose
    lookup finds it succeeded (gateway/recovery/loop.py: the claim in its own statement, then the
    evidence and the lease's release in one transaction). Variables: ``-D account=...
    rows=<attempts> clients=N turn=0``."""
    payment_id = "'pay_pgb_' || (:n)::text"
    steps: list[Step] = [
        Statement("gateway/payments/leases.sql claim_due", LEASES["claim_due"], {
            "now": NOW, "passed": "'{}'", "spent": "'{}'", "attempt_id": "md5('PGB-' || (:n)::text)",
            "limit": "1", "owner": "'recovery-pgbench-' || (:client_id)::text",
            "lease_expires_at": "now() + interval '60 s'"}, gset=True),
        Control("BEGIN"),
        lock_for_evidence(payment_id),
        write_evidence(state="Unknown", payment_id=payment_id, actor="recovery-pgbench", kind="lookup",
                       detail="jsonb_build_object('finding', 'succeeded', 'provider_account', (:account)::text, "
                              f"'provider_payment_id', {payment_id}, 'provider_status', 'succeeded', "
                              "'amount_minor', 4250, 'currency', 'EUR', 'decision', 'Succeeded', "
                              "'lookup', 'recovery')",
                       transition="'{\"from\": \"Unknown\", \"to\": \"Succeeded\", \"reason\": null}'",
                       lease={"lease_mode": "'release'", "lease_owner": "'recovery-pgbench-' || (:client_id)::text",
                              "lease_token": "(:lease_token)::uuid",
                              "lease_next_check_at": "now() + interval '60 s'"}),
        Control("COMMIT"),
    ]
    return steps


SCRIPTS = {"checkout": (checkout, "one checkout (bench/checkout.py's ceiling)"),
           "notification": (notification, "one matched notification (bench/notifications.py's ceiling)"),
           "notification_certified": (notification_certified, "one matched notification, certified "
                                      "(bench/notifications.py --certified's ceiling)"),
           "recovery": (recovery, "one recovery pass (bench/recovery.py's ceiling)")}

_EFFECTS = "seed 001's effect record, ledger and certificate"
# What the product also runs in each flow (the names tests/integration/test_bench_scripts.py
# records), which the ceilings leave out, and why.
LEFT_OUT = {
    "checkout": {
        "gateway/auth/queries.sql find_principal": "the bearer token: the gateway's token cache answers a loaded run",
    },
    "notification": {
        "gateway/effects/queries.sql lock_record_with_evidence": _EFFECTS,
        "gateway/effects/queries.sql insert_certificate": _EFFECTS,
    },
    "notification_certified": {},
    "recovery": {
        "gateway/ratelimits/queries.sql take_tokens": "the account's lookup tokens, taken per claim for its batch",
        "gateway/ratelimits/queries.sql return_tokens": "the unspent lookup tokens, given back once per sweep",
        "gateway/effects/queries.sql lock_record_with_evidence": _EFFECTS,
        "gateway/effects/queries.sql insert_certificate": _EFFECTS,
    },
}


def script(name: str) -> str:
    steps, title = SCRIPTS[name]
    return render(f"pgbench: {title}.\n{GENERATED}", WALK, steps())


def write(name: str, directory: Path) -> Path:
    """The script ``name`` written to ``directory``, for pgbench's ``-f``."""
    path = directory / f"{name}_txn.sql"
    path.write_text(script(name))
    return path


def variables(rows: int, clients: int, account: str = ACCOUNT, first: int = 1) -> dict[str, object]:
    """The ``-D`` variables every script needs: each client starts its own walk at turn 0, over
    the rows ``first`` .. ``first + rows - 1``."""
    if rows < clients:
        raise ValueError(f"{rows} rows cannot give each of {clients} clients its own")
    return {"rows": rows, "clients": clients, "turn": 0, "account": account, "first": first}


def ceiling(url: str, name: str, work: Path, clients: int, duration: int, rows: int) -> float:
    """Transactions per second of the script ``name`` with ``clients`` over ``rows`` prepared rows."""
    return pgbench(url, write(name, work), clients, duration, variables(rows, clients))


def ceiling_once(url: str, name: str, work: Path, clients: int, rows: int, first: int) -> float:
    """:func:`ceiling` for a script whose row serves one transaction (``notification_certified``):
    each client takes each of its own rows once (``rows // clients`` transactions), among the rows
    ``first`` .. ``first + rows - 1``."""
    return pgbench(url, write(name, work), clients, 0, variables(rows, clients, first=first),
                   transactions=rows // clients)


if __name__ == "__main__":
    sys.stdout.write(script(sys.argv[1]))
