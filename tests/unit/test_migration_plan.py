"""Which migrations a database needs (docs/decisions/0034): file names and
numbering, and the comparison of a build's migrations with a database's records, without I/O."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gateway.store.migrate import Migration, MigrationError, Record, parse_migrations, shipped, status_of

WHEN = datetime(2026, 12, 1, tzinfo=UTC)


def record(migration: Migration, checksum: str | None = None) -> Record:
    return Record(migration.version, migration.name, checksum or migration.checksum, "applied", WHEN)


def test_migrations_are_ordered_by_number_whatever_the_listing_order() -> None:
    parsed = parse_migrations({"0002_b.sql": "B", "0001_a.sql": "A"})
    assert [(m.label, m.sql) for m in parsed] == [("0001_a", "A"), ("0002_b", "B")]


@pytest.mark.parametrize(("files", "complaint"), [
    ({"0001_a.sql": "", "0003_c.sql": ""}, "expected migration 0002, found 0003_c"),
    ({"0001_a.sql": "", "0002_b.sql": "", "0002_c.sql": ""}, "expected migration 0003, found 0002_"),
    ({"0001_a.sql": "", "2_b.sql": ""}, "2_b.sql: a migration is named NNNN_<what>.sql"),
])
def test_a_gap_a_twin_or_a_stray_name_is_refused(files: dict[str, str], complaint: str) -> None:
    """Two branches that each add the next number meet here: the one landing second renumbers."""
    with pytest.raises(MigrationError, match=complaint):
        parse_migrations(files)


def test_the_shipped_migrations_start_with_the_baseline() -> None:
    assert shipped()[0].label == "0001_baseline"


def test_status_names_pending_changed_and_newer_migrations() -> None:
    one, two, three = parse_migrations({"0001_a.sql": "A", "0002_b.sql": "B", "0003_c.sql": "C"})
    fresh = status_of([one, two, three], [])
    assert (fresh.pending, fresh.changed, fresh.newer) == ((one, two, three), (), ())

    changed = status_of([one, two, three], [record(one), record(two, "0" * 64)])
    assert changed.pending == (three,)
    assert changed.changed == ((two, record(two, "0" * 64)),)

    ahead = status_of([one], [record(one), record(two)])
    assert (ahead.pending, ahead.changed, ahead.newer) == ((), (), (record(two),))


def test_the_checksum_is_the_sha256_of_the_text() -> None:
    assert Migration(1, "a", "").checksum == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert Migration(1, "a", "SELECT 1;").checksum != Migration(1, "a", "SELECT 1; ").checksum
