"""The payout and payout recall tables are two instances of one attempt pipeline ("A schema test that
compares the constraints, indexes and triggers of the payout and recall tables
(pg_constraint, pg_indexes, pg_trigger) so the two kinds cannot drift again"). Each catalog entry
is read from the real PostgreSQL, its kind-specific names replaced by placeholders, and the two
kinds compared; the differences that are the kinds' own (a payout's destination and revocable
grants, a recall's link to the paid payout) are listed here, each with its reason, and nothing
else may differ."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

# Placeholders for what differs by name only, longest first so no name is replaced inside another.
PAYOUT = {"payout_attempts": "{attempts}", "payout_grants": "{grants}", "payout_decisions": "{decisions}",
          "provider_payout_id": "{provider_id}", "attempt_number": "{number}",
          "one_unresolved_attempt_per_payout": "one_unresolved_{attempt}_per_payout",
          "one_payout_attempt_per_provider_payout": "one_{attempt}_per_provider_object",
          "ck_payout_attempt_": "ck_{attempt}_", "uq_payout_attempt_": "uq_{attempt}_",
          "ck_grant_attempt_number": "ck_{grant}_number", "uq_grant_attempt_number": "uq_{grant}_number",
          "ck_grant_": "ck_{grant}_", "uq_grant_": "uq_{grant}_", "ck_decision_": "ck_{decision}_"}
RECALL = {"payout_recall_attempts": "{attempts}", "payout_recall_grants": "{grants}",
          "payout_recall_decisions": "{decisions}", "provider_recall_id": "{provider_id}",
          "recall_number": "{number}", "one_unresolved_recall_per_payout": "one_unresolved_{attempt}_per_payout",
          "one_recall_attempt_per_provider_recall": "one_{attempt}_per_provider_object",
          "ck_recall_attempt_": "ck_{attempt}_", "uq_recall_attempt_": "uq_{attempt}_",
          "ck_recall_grant_": "ck_{grant}_", "uq_recall_grant_": "uq_{grant}_",
          "ck_recall_decision_": "ck_{decision}_"}


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        yield connection


def _normalized(text: str, names: dict[str, str]) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, names[name])
    return text


def catalog(conn: psycopg.Connection[Any], table: str, names: dict[str, str]) -> dict[str, str]:
    """Every constraint, index and trigger of ``table``: ``{"kind name": definition}``, normalized."""
    rows = conn.execute(
        "SELECT 'constraint ' || conname || ': ' || pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conrelid = %(t)s::text::regclass"
        " UNION ALL SELECT 'index ' || indexname || ': ' || indexdef FROM pg_indexes WHERE tablename = %(t)s::text"
        " UNION ALL SELECT 'trigger ' || tgname || ': ' || pg_get_triggerdef(oid) FROM pg_trigger"
        " WHERE tgrelid = %(t)s::text::regclass AND NOT tgisinternal", {"t": table}).fetchall()
    entries = (_normalized(row[0], {table: "{table}", **names}).split(": ", 1) for row in rows)
    return {name: definition for name, definition in entries}



# The kinds' own differences, by entry name: (only the payout's, only the recall's, defined differently).
OWN = {
    "payout_attempts": (
        # A payout pays a destination (named by id, version and token digest); a recall names the paid payout.
        {"constraint {attempts}_destination_id_not_null", "constraint {attempts}_destination_version_not_null",
         "constraint {attempts}_destination_digest_not_null"},
        {"constraint {attempts}_provider_payout_id_not_null"},
        set()),
    "payout_grants": (
        # A payout grant binds the terms and the payout version it executes; a recall grant the paid payout.
        {"constraint {grants}_executable_payout_version_not_null", "constraint {grants}_terms_fingerprint_not_null"},
        {"constraint {grants}_provider_payout_id_not_null", "constraint ck_{grant}_operation"},
        # Operators revoke payout grants (POST /v1/grants/{id}/revoke); recall grants have no Revoked state.
        {"constraint ck_{grant}_state", "constraint ck_{grant}_state_fields"}),
    "payout_decisions": (
        {"constraint {decisions}_terms_fingerprint_not_null"},
        {"constraint {decisions}_paid_attempt_id_fkey"},  # the recall links to the attempt that paid
        # A recall's policy has three outcomes (docs/decisions/0015), a payout's the seed's five.
        {"constraint ck_{decision}_operation", "constraint ck_{decision}_outcome"}),
}


@pytest.mark.parametrize(("payout_table", "recall_table"), [
    ("payout_attempts", "payout_recall_attempts"), ("payout_grants", "payout_recall_grants"),
    ("payout_decisions", "payout_recall_decisions")])
def test_payout_and_recall_tables_have_the_same_constraints_indexes_and_triggers(
        conn: psycopg.Connection[Any], payout_table: str, recall_table: str) -> None:
    """Every constraint, index and trigger of a payout table has its recall twin with the
    same definition (up to the kinds' names), and the other way round, except the kinds' own."""
    payout, recall = catalog(conn, payout_table, PAYOUT), catalog(conn, recall_table, RECALL)
    payout_only, recall_only, different = OWN[payout_table]
    assert set(payout) - set(recall) == payout_only
    assert set(recall) - set(payout) == recall_only
    assert {name for name in set(payout) & set(recall) if payout[name] != recall[name]} == different


def test_the_recall_decisions_cannot_be_truncated(conn: psycopg.Connection[Any]) -> None:
    """Drift between the twins: decisions are history, a recall's as much as a payout's."""
    with pytest.raises(psycopg.errors.RaiseException):
        conn.execute("TRUNCATE payout_recall_decisions CASCADE")


# The refund kind (docs/decisions/0019) against the recall, the kind it is shaped
# after: parent, owner, the provider object it acts on and the operation differ by name only.
AS_RECALL = {**RECALL, "payout_id": "{parent}", "payouts": "{parents}", "provider_payout_id": "{acted_on}",
             "tenant_id": "{owner}", "evaluated_payout_version": "evaluated_{parent}_version",
             "payout_attempts": "{paid_attempts}", "payout.recall": "{operation}"}
AS_REFUND = {"payment_refund_attempts": "{attempts}", "payment_refund_grants": "{grants}",
             "payment_refund_decisions": "{decisions}", "provider_refund_id": "{provider_id}",
             "refund_number": "{number}", "one_unresolved_refund_per_order": "one_unresolved_{attempt}_per_payout",
             "one_refund_attempt_per_provider_refund": "one_{attempt}_per_provider_object",
             "ck_refund_attempt_": "ck_{attempt}_", "uq_refund_attempt_": "uq_{attempt}_",
             "ck_refund_grant_": "ck_{grant}_", "uq_refund_grant_": "uq_{grant}_",
             "ck_refund_decision_": "ck_{decision}_", "order_id": "{parent}", "orders": "{parents}",
             "provider_payment_id": "{acted_on}", "merchant_id": "{owner}",
             "evaluated_order_version": "evaluated_{parent}_version", "payment_attempts": "{paid_attempts}",
             "payment.refund": "{operation}", "_by_order": "_by_payout"}
REFUND_OWN = {
    # A refund is full, so at most one succeeds per order.
    "payment_refund_attempts": (set(), {"index one_succeeded_refund_per_order"}, set()),
    "payment_refund_grants": (set(), set(), set()),
    # Two causes (paid-after-cancel, merchant-request); the refund policy is code, so always named.
    "payment_refund_decisions": (set(), {"constraint ck_{decision}_cause", "constraint {decisions}_cause_not_null",
                                         "constraint {decisions}_policy_version_not_null"}, set()),
}


@pytest.mark.parametrize(("recall_table", "refund_table"), [
    ("payout_recall_attempts", "payment_refund_attempts"), ("payout_recall_grants", "payment_refund_grants"),
    ("payout_recall_decisions", "payment_refund_decisions")])
def test_refund_tables_are_a_third_instance_of_the_attempt_tables(
        conn: psycopg.Connection[Any], recall_table: str, refund_table: str) -> None:
    """The refund is built as a third instance of the attempt pipeline (docs/decisions/0019); its
    tables carry every constraint, index and trigger of the recall's, up to names, plus its own."""
    recall, refund = catalog(conn, recall_table, AS_RECALL), catalog(conn, refund_table, AS_REFUND)
    recall_only, refund_only, different = REFUND_OWN[refund_table]
    assert set(recall) - set(refund) == recall_only
    assert set(refund) - set(recall) == refund_only
    assert {name for name in set(recall) & set(refund) if recall[name] != refund[name]} == different


@pytest.mark.parametrize("table", ["payment_refund_decisions", "payment_refund_history"])
def test_refund_evidence_cannot_be_truncated(conn: psycopg.Connection[Any], table: str) -> None:
    """Decisions and history are evidence (their row triggers are compared above, or below for the
    history): not even a TRUNCATE removes them."""
    with pytest.raises(psycopg.errors.RaiseException):
        conn.execute(f"TRUNCATE {table} CASCADE")


def test_refund_history_rows_are_append_only(conn: psycopg.Connection[Any]) -> None:
    triggers = {name for name in catalog(conn, "payment_refund_history", {}) if name.startswith("trigger")}
    assert triggers == {"trigger {table}_append_only", "trigger {table}_no_truncate"}
