"""Schema migrations (docs/decisions/0034, docs/migrations.md), on the real
PostgreSQL of the session: each test creates its own empty databases on it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from gateway.cli import main
from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings
from gateway.store.catalog import describe, differences
from gateway.store.migrate import (
    MIGRATIONS_DIR,
    Migration,
    MigrationError,
    Outcome,
    SchemaNotCurrent,
    migrate,
    open_current,
    shipped,
    status,
)
from gateway.store.schema import check_schema, schema_sql

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def new_database(postgres_admin_url: str) -> Iterator[Callable[[], str]]:
    """Creates empty databases (no schema, no records) and drops them after the test."""
    names: list[str] = []

    def create() -> str:
        names.append(f"paygate_mig_{uuid.uuid4().hex[:12]}")
        with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{names[-1]}"')
        return make_conninfo(postgres_admin_url, dbname=names[-1])

    yield create
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_sql(url: str, script: str, params: dict[str, Any] | None = None) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        if params is None:
            conn.execute(script.encode())
        else:
            conn.execute(script.encode(), params)


def catalog(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return describe(conn, "public")


def records(url: str) -> list[tuple[int, str, str]]:
    with psycopg.connect(url) as conn:
        return [(int(v), str(n), str(m)) for v, n, m in conn.execute(
            "SELECT version, name, method FROM paygate_schema_migrations ORDER BY version").fetchall()]


def how_to_fix(found: list[str]) -> str:
    """The failure message of the equality test: what differs, and what to do about it."""
    migrations = shipped()
    return (
        "schema.sql and the migrations describe different schemas (expected: schema.sql; actual: an empty "
        "database after every migration in " + MIGRATIONS_DIR + "; missing: in schema.sql only, unexpected: made by "
        "the migrations only):\n  " + "\n  ".join(found) + "\n\n"
        f"If you changed schema.sql: add a migration {MIGRATIONS_DIR}/{len(migrations) + 1:04d}_<what>.sql that "
        f"makes the same change to a database at {migrations[-1].label} (ALTER TABLE ... ADD/DROP CONSTRAINT, "
        "ADD COLUMN, CREATE INDEX, CREATE OR REPLACE FUNCTION, CREATE TRIGGER ...), in plain SQL without IF NOT "
        "EXISTS, and keep the previous release working with it (expand now, contract a release later: "
        "docs/migrations.md). If another branch landed the same number first, renumber yours. "
        "Never edit a migration that is on main: put it back, and make the change in a new one.")


def test_every_migration_from_an_empty_database_yields_exactly_schema_sql(new_database: Callable[[], str]) -> None:
    """A test proves that applying every migration from empty yields exactly
    schema.sql (compare the catalogs): tables, columns (types, defaults, nullability, identity),
    constraints with their CHECK definitions, indexes with their partial predicates, triggers and
    functions, as pg_catalog describes them."""
    from_schema, from_migrations = new_database(), new_database()
    run_sql(from_schema, schema_sql())
    outcome = migrate(from_migrations, ManualClock())
    assert [m.version for m in outcome.applied] == [m.version for m in shipped()]
    expected, actual = catalog(from_schema), catalog(from_migrations)
    assert len(expected) > 500, "the catalog description found the schema"
    found = differences(expected, actual)
    assert not found, how_to_fix(found)


def test_the_catalog_comparison_sees_a_changed_check_and_a_changed_partial_index(
        new_database: Callable[[], str]) -> None:
    """The equality above can fail: a CHECK that admits one more value, or a partial index with
    another predicate, is reported as the item that differs, both definitions shown."""
    url = new_database()
    migrate(url, ManualClock())
    before = catalog(url)
    run_sql(url, "ALTER TABLE orders DROP CONSTRAINT ck_order_state, ADD CONSTRAINT ck_order_state"
                 " CHECK (state IN ('Open', 'Paid'));"
                 "DROP INDEX one_live_attempt_per_order;"
                 "CREATE UNIQUE INDEX one_live_attempt_per_order ON payment_attempts (order_id)"
                 " WHERE state IN ('NotStarted', 'Started')")
    found = differences(before, catalog(url))
    assert [line.split("\n")[0] for line in found] == [
        "differs: constraint orders.ck_order_state", "differs: index one_live_attempt_per_order"]
    assert "'Unknown'" in found[1] and "actual:   CREATE UNIQUE INDEX" in found[1]


def test_two_migrators_at_once_apply_each_migration_exactly_once(new_database: Callable[[], str]) -> None:
    """`paygate db migrate` is "safe from several processes at once": two
    migrators on their own connections start together on one empty database; both succeed, the
    advisory lock lets one apply everything and the other find nothing left."""
    url = new_database()
    start = threading.Barrier(2)
    outcomes: list[Outcome] = []
    errors: list[BaseException] = []

    def migrator() -> None:
        start.wait()
        try:
            outcomes.append(migrate(url, ManualClock()))
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=migrator) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    applied = sorted(m.version for outcome in outcomes for m in outcome.applied)
    assert applied == [m.version for m in shipped()], "each migration applied exactly once, by one of the two"
    assert [method for _, _, method in records(url)] == ["applied"] * len(shipped())
    assert check_schema(url) == []


def test_migrate_is_idempotent(database_url: str) -> None:
    """A second run finds every migration recorded and changes nothing."""
    before = records(database_url)
    assert migrate(database_url, ManualClock()) == Outcome(adopted=(), applied=())
    assert records(database_url) == before


def test_a_database_of_the_issue_8_release_with_rows_is_migrated_to_schema_sql(new_database: Callable[[], str]) -> None:
    """A database created by the release before migrations (its schema.sql is the
    baseline migration, run by hand as that release's `db init` did, so no records) and holding
    rows is recognised as version 0001, migrated to exactly schema.sql, and keeps its rows; the new
    shapes hold (an order may now be PaidAfterCancel, a recall attempt's amount must be positive)."""
    url = new_database()
    baseline = shipped()[0]
    run_sql(url, baseline.sql)
    for insert in (
            "INSERT INTO provider_accounts VALUES ('cardco:acct_store:test', 'cardco', 'test', %(now)s)",
            "INSERT INTO orders (order_id, merchant_id, customer_id, amount_minor, currency, payment_method,"
            " provider_account, state, created_at, updated_at) VALUES ('ORD-1', 'm', 'c', 4250, 'EUR',"
            " 'pm_card_visa', 'cardco:acct_store:test', 'Paid', %(now)s, %(now)s)",
            "INSERT INTO outbox_messages (dedup_key, kind, payload, created_at, next_attempt_at)"
            " VALUES ('order:ORD-1:paid', 'order-confirmation', '{\"order_id\": \"ORD-1\"}', %(now)s, %(now)s)",
            "INSERT INTO payment_escalations (escalation_key, reason, raised_at) VALUES ('k', 'deadline', %(now)s)"):
        run_sql(url, insert, {"now": NOW})
    rows = "SELECT order_id, state, amount_minor FROM orders UNION ALL SELECT dedup_key, kind, message_id FROM " \
           "outbox_messages UNION ALL SELECT escalation_key, reason, escalation_id FROM payment_escalations"
    with psycopg.connect(url) as conn:
        before = conn.execute(rows).fetchall()

    outcome = migrate(url, ManualClock())

    assert [m.label for m in outcome.adopted] == [baseline.label]
    assert [m.version for m in outcome.applied] == [m.version for m in shipped()[1:]]
    assert check_schema(url) == []
    assert records(url)[0] == (1, "baseline", "adopted")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(rows).fetchall() == before
        conn.execute("UPDATE orders SET state = 'PaidAfterCancel'")
        constraints = {row[0] for row in conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'payout_recall_attempts'::regclass")}
    assert {"ck_recall_attempt_amount", "ck_recall_attempt_epoch", "ck_recall_attempt_unsent"} <= constraints


def test_a_database_made_by_db_init_before_migrations_is_adopted_without_running_them(
        new_database: Callable[[], str]) -> None:
    """A database that today's schema.sql made (the `db init` before migrations:
    no records) is detected by its catalog, equal to the last migration's; every version is recorded
    as adopted and none runs (0003 would fail on its existing tables if it ran)."""
    url = new_database()
    run_sql(url, schema_sql())
    run_sql(url, "INSERT INTO provider_accounts VALUES ('cardco:acct_store:test', 'cardco', 'test', %(now)s)",
            {"now": NOW})
    outcome = migrate(url, ManualClock())
    assert outcome == Outcome(adopted=tuple(shipped()), applied=())
    assert [method for _, _, method in records(url)] == ["adopted"] * len(shipped())
    assert check_schema(url) == []
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM provider_accounts").fetchone() == (1,)


def test_adoption_stops_at_the_first_equal_version_so_a_later_data_migration_still_runs(
        new_database: Callable[[], str]) -> None:
    """A migration that changes only data (a backfill) leaves the catalog as it was, so a database
    without records equals the versions before and after it: adoption records the first, and the
    backfill runs."""
    url = new_database()
    run_sql(url, schema_sql())
    backfill = Migration(len(shipped()) + 1, "backfill",
                         "INSERT INTO provider_accounts VALUES ('cardco:acct_backfill:test', 'cardco', 'test',"
                         " '2026-12-01T00:00:00Z');")
    outcome = migrate(url, ManualClock(), [*shipped(), backfill])
    assert outcome == Outcome(adopted=tuple(shipped()), applied=(backfill,))
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT provider_account FROM provider_accounts").fetchall() == [
            ("cardco:acct_backfill:test",)]


def test_a_database_equal_to_no_version_is_refused_with_what_separates_it(new_database: Callable[[], str]) -> None:
    """A database without records whose schema is no version (changed by hand, or half of an
    upgrade) is not guessed at: migrate refuses, names the closest version and the differences,
    and records nothing."""
    url = new_database()
    run_sql(url, schema_sql())
    run_sql(url, "ALTER TABLE payment_attempts DROP CONSTRAINT ck_payment_attempt_lease")
    with pytest.raises(MigrationError) as refused:
        migrate(url, ManualClock())
    assert f"the closest is {shipped()[-1].label}" in str(refused.value)
    assert "missing: constraint payment_attempts.ck_payment_attempt_lease" in str(refused.value)
    assert records(url) == []


def test_a_failing_migration_leaves_neither_its_changes_nor_its_record(database_url: str) -> None:
    """Each migration runs in one transaction with its record: applied and recorded, or neither."""
    broken = Migration(len(shipped()) + 1, "broken", "CREATE TABLE half_done (id int); SELECT 1 / 0;")
    with pytest.raises(psycopg.errors.DivisionByZero):
        migrate(database_url, ManualClock(), [*shipped(), broken])
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT to_regclass('half_done')").fetchone() == (None,)
    assert [v for v, _, _ in records(database_url)] == [m.version for m in shipped()]


def test_a_migration_behind_a_long_transaction_gives_up_instead_of_stalling_the_table(database_url: str) -> None:
    """Fleet upgrade (docs/migrations.md): migrating while the previous release runs, an ALTER TABLE
    queued behind a long transaction would hold up every later query on that table. The migration
    waits at most its lock timeout, applies nothing and says so; run again, it goes through."""
    alter = Migration(len(shipped()) + 1, "order_note", "ALTER TABLE orders ADD COLUMN note text;")
    with psycopg.connect(database_url) as long_reader:
        long_reader.execute("SELECT count(*) FROM orders")  # holds ACCESS SHARE on orders until it ends
        with pytest.raises(MigrationError, match=f"migration {len(shipped()) + 1:04d}_order_note waited 0.2 s for a table lock"):
            migrate(database_url, ManualClock(), [*shipped(), alter], lock_timeout_s=0.2)
        long_reader.rollback()
    assert [v for v, _, _ in records(database_url)] == [m.version for m in shipped()]
    assert migrate(database_url, ManualClock(), [*shipped(), alter], lock_timeout_s=0.2).applied == (alter,)


def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str]:
    monkeypatch.setenv("DATABASE_URL", url)
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_db_check_reports_pending_migrations_then_a_changed_one(
        new_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`paygate db check` reports pending migrations and drift (an applied
    migration whose file changed since); `db migrate` applies what is pending and refuses to go on
    over a changed one; `db init` is the same command as `db migrate`."""
    url = new_database()
    migrations = shipped()
    migrate(url, ManualClock(), migrations[:2])
    code, out = cli(monkeypatch, capsys, url, "db", "check")
    assert code == 1
    assert "pending migrations (run `paygate db migrate`): " + ", ".join(m.label for m in migrations[2:]) in out

    code, out = cli(monkeypatch, capsys, url, "db", "init")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("applied")] == [
        f"applied {m.label}" for m in migrations[2:]]
    code, out = cli(monkeypatch, capsys, url, "db", "migrate")
    assert (code, out.strip()) == (0, f"nothing to do: the database is at migration {migrations[-1].label}")
    code, out = cli(monkeypatch, capsys, url, "db", "check")
    assert (code, out.strip()) == (0, f"the database is at migration {migrations[-1].label} and matches schema.sql")

    run_sql(url, "UPDATE paygate_schema_migrations SET checksum = repeat('0', 64) WHERE version = 2")
    code, out = cli(monkeypatch, capsys, url, "db", "check")
    assert code == 1
    assert f"changed since applied: {migrations[1].label} (recorded sha256 {'0' * 64}" in out
    assert status(url).changed[0][0] == migrations[1]
    code, out = cli(monkeypatch, capsys, url, "db", "migrate")
    assert code == 2
    assert f"migration {migrations[1].label} changed since it was applied" in out


def test_db_check_reports_a_catalog_that_differs_from_schema_sql(
        database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Drift of the live catalog (a change made by hand) is reported even with every migration
    recorded, and stays reported after `db migrate`, which only runs migrations."""
    run_sql(database_url, "ALTER TABLE payment_attempts DROP CONSTRAINT ck_payment_attempt_lease")
    run_sql(database_url, "DROP TRIGGER payment_attempt_events_append_only ON payment_attempt_events")
    assert cli(monkeypatch, capsys, database_url, "db", "migrate")[0] == 0
    code, out = cli(monkeypatch, capsys, database_url, "db", "check")
    assert code == 1
    assert "the database does not match schema.sql:" in out
    assert "missing: trigger payment_attempt_events.payment_attempt_events_append_only" in out
    assert "missing: constraint payment_attempts.ck_payment_attempt_lease CHECK" in out


def test_db_check_reports_an_index_a_failed_concurrent_build_left_invalid(
        database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Docs/migrations.md: a large table's index is built by hand with
    CONCURRENTLY under the migration's name. A `CREATE UNIQUE INDEX CONCURRENTLY` over duplicate
    rows fails and leaves an INVALID index with the expected name and definition. Seed 004's open
    episode per key is then enforced by nothing, so `db check` reports it, naming the index, saying
    INVALID and how to rebuild it, and exits 1."""
    run_sql(database_url, "DROP INDEX one_open_escalation_per_key")
    run_sql(database_url, "INSERT INTO payment_escalations (escalation_key, reason, raised_at)"
                          " SELECT 'attempt:x:deadline', 'deadline', %(now)s FROM generate_series(1, 2)", {"now": NOW})
    with pytest.raises(psycopg.errors.UniqueViolation):
        run_sql(database_url, "CREATE UNIQUE INDEX CONCURRENTLY one_open_escalation_per_key"
                              " ON payment_escalations (escalation_key) WHERE resolved_at IS NULL")
    code, out = cli(monkeypatch, capsys, database_url, "db", "check")
    assert code == 1, out
    assert "the database does not match schema.sql:" in out
    assert ("invalid: index one_open_escalation_per_key is INVALID (a CREATE INDEX CONCURRENTLY that failed left "
            "it;") in out
    assert "`REINDEX INDEX CONCURRENTLY one_open_escalation_per_key;`" in out
    assert "differs:" not in out and "missing:" not in out


async def test_processes_refuse_a_database_that_lacks_a_migration(settings: Settings, database_url: str) -> None:
    """Start-up of web, worker and clock (all through open_current): a database
    without a migration of this build is refused with what to run; the pool is closed again."""
    run_sql(database_url, "DELETE FROM paygate_schema_migrations WHERE version = %(v)s", {"v": len(shipped())})
    with pytest.raises(SchemaNotCurrent, match=f"lacks migrations this build needs: {shipped()[-1].label}; "
                                               "run `paygate db migrate`"):
        await Services.open(settings, ManualClock())
    with pytest.raises(SchemaNotCurrent):
        await open_current(database_url, size=1, name="paygate-clock")
    from jobs import runtime

    runtime.configure(settings, ManualClock())
    try:
        with pytest.raises(SchemaNotCurrent):
            await runtime.current()  # every actor of the worker starts here
    finally:
        await runtime.close()
        runtime.configure(None)


async def test_processes_accept_a_database_migrated_by_a_newer_build(settings: Settings, database_url: str) -> None:
    """Expand/contract (docs/migrations.md): the release before keeps running after the next
    release's migrations, so a migration this build does not know is no reason to refuse."""
    run_sql(database_url, "INSERT INTO paygate_schema_migrations VALUES (%(v)s, 'from_the_future', repeat('a', 64),"
                          " 'applied', %(now)s)", {"v": len(shipped()) + 1, "now": NOW})
    services = await Services.open(settings, ManualClock())
    await services.close()
    assert [r.name for r in status(database_url).newer] == ["from_the_future"]
