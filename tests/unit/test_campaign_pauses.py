"""The pause past a lease (seed 000 "lease epochs", seed 004 "The Recovery Loop"): which
leases a stopped worker may hold, and when one counts as lapsed and taken over."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from paygate_local.campaign.pauses import LEASE_WAIT_S, TAKEOVER_WAIT_S, Lease, Watch, candidates, choose, owner_pid

T0 = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


def _lease(attempt_id: str, kind: str = "payout", owner: str | None = None, expires_in_s: float = 10) -> Lease:
    return Lease(kind, attempt_id, owner, f"{attempt_id}-held", T0 + timedelta(seconds=expires_in_s))


def test_a_recovery_owner_names_its_worker_by_pid_and_a_host_may_hold_dashes() -> None:
    assert owner_pid("recovery-my-host-1-4242-a1b2c3") == 4242
    assert owner_pid("svc-payout-worker") is None
    assert owner_pid(None) is None


def test_the_stopped_worker_may_hold_its_own_recovery_leases_and_any_pipeline_lease() -> None:
    """A pipeline lease names no process (claimed_by is the service), so it is watched; another
    worker's recovery lease is not."""
    mine, theirs = _lease("a", "payment", "recovery-h-100-aaaaaa"), _lease("b", "payment", "recovery-h-200-bbbbbb")
    pipeline = _lease("c", "refund")
    assert candidates([mine, theirs, pipeline], lambda pid: pid == 100) == [mine, pipeline]


def test_a_lease_unchanged_at_its_expiry_lapsed_and_a_later_change_is_its_takeover() -> None:
    lease = _lease("a", expires_in_s=10)
    watch = Watch([lease])
    watch.observe(T0 + timedelta(seconds=5), {"a": lease.signature})
    assert not watch.lapsed
    watch.observe(T0 + timedelta(seconds=10), {"a": lease.signature})
    assert watch.lapsed == {"a"} and not watch.taken_over
    assert not watch.settled(T0 + timedelta(seconds=11), hold_s=1)
    watch.observe(T0 + timedelta(seconds=12), {"a": "fenced"})
    assert watch.taken_over == {"a"} and watch.kinds() == {"payout": 1}
    assert watch.settled(T0 + timedelta(seconds=12), hold_s=1)
    assert not watch.settled(T0 + timedelta(seconds=10.5), hold_s=1)


def test_a_lease_released_before_its_expiry_was_a_live_workers_and_never_counts() -> None:
    """The other worker, alive, resolves its own pipeline attempt before the lease ends."""
    lease = _lease("a", expires_in_s=10)
    watch = Watch([lease])
    watch.observe(T0 + timedelta(seconds=1), {"a": "resolved"})
    watch.observe(T0 + timedelta(seconds=11), {"a": "resolved"})
    assert watch.released == {"a"} and not watch.lapsed and not watch.kinds()
    assert watch.settled(T0 + timedelta(seconds=11), hold_s=1)


def test_a_change_first_seen_after_the_expiry_is_not_counted_as_lapsed() -> None:
    """It may have changed just before its expiry: only "unchanged at or after expiry" counts."""
    lease = _lease("a", expires_in_s=10)
    watch = Watch([lease])
    watch.observe(T0 + timedelta(seconds=9), {"a": lease.signature})
    watch.observe(T0 + timedelta(seconds=11), {"a": "fenced"})
    assert not watch.lapsed and not watch.taken_over


def test_a_lapsed_lease_nobody_takes_over_ends_the_pause_after_the_takeover_wait() -> None:
    lease = _lease("a", expires_in_s=10)
    watch = Watch([lease])
    watch.observe(T0 + timedelta(seconds=10), {"a": lease.signature})
    assert not watch.settled(T0 + timedelta(seconds=10 + TAKEOVER_WAIT_S - 1), hold_s=1)
    assert watch.settled(T0 + timedelta(seconds=10 + TAKEOVER_WAIT_S), hold_s=1)


def test_a_worker_is_stopped_as_soon_as_it_holds_a_recovery_lease_and_on_a_pipeline_lease_later() -> None:
    """A recovery lease names its holder's pid: certain (the preferred worker if both hold one); a
    pipeline lease (holder unknown) only after half the wait, on the preferred worker."""
    workers = {100: 1, 200: 2}.get
    one, two = _lease("a", "payment", "recovery-h-100-aaaaaa"), _lease("b", "payment", "recovery-h-200-bbbbbb")
    pipeline = _lease("c", "payout")
    assert choose([one, two], workers, preferred=2, waited_s=0) == 2
    assert choose([two, pipeline], workers, preferred=1, waited_s=0) == 2
    assert choose([pipeline], workers, preferred=1, waited_s=LEASE_WAIT_S / 3) is None
    assert choose([pipeline], workers, preferred=1, waited_s=LEASE_WAIT_S / 2) == 1
    assert choose([], workers, preferred=1, waited_s=LEASE_WAIT_S) is None


def test_a_stop_whose_every_watched_lease_was_released_before_expiry_missed_and_one_that_lapsed_did_not() -> None:
    """Seed 000 "lease epochs": a pause counts only if the stopped worker held a lease; a stop whose
    watched pipeline leases were all released alive (the other worker's) is a miss, continued at
    once and tried again; one with a lease still unchanged at its expiry is not."""
    theirs, mine = _lease("a", expires_in_s=10), _lease("b", expires_in_s=10)
    watch = Watch([theirs, mine])
    watch.observe(T0 + timedelta(seconds=1), {"a": "resolved", "b": mine.signature})
    assert not watch.missed()
    watch.observe(T0 + timedelta(seconds=10), {"a": "resolved", "b": mine.signature})
    assert not watch.missed() and watch.lapsed == {"b"}
    alone = Watch([theirs])
    alone.observe(T0 + timedelta(seconds=1), {"a": "resolved"})
    assert alone.missed()
    assert Watch([]).missed()
