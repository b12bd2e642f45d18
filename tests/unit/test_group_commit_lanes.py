"""When a queued unit opens a free group-commit lane (gateway/store/group_commit.py ``opens_lane``,
docs/decisions/0082). The integration tests (tests/integration/test_group_commit.py) show the same
rule on real transactions; this table is the rule itself."""

from __future__ import annotations

import pytest

from gateway.store.group_commit import opens_lane


@pytest.mark.parametrize(("free", "queued", "in_lanes", "backlog", "opens"), [
    (2, 1, 0, 4, True),    # every lane free: a lone unit starts at once, whatever the backlog
    (1, 1, 1, 4, True),    # two in flight, no more than the backlog: no batch worth waiting for
    (1, 2, 2, 4, True),    # four in flight: still at once
    (1, 1, 4, 4, False),   # five in flight, one waiting: it waits for the busy lane
    (1, 3, 4, 4, False),   # three waiting, short of the backlog
    (1, 4, 4, 4, True),    # the backlog: a second lane opens for it
    (0, 9, 8, 4, False),   # no free lane: nothing opens
    (1, 1, 7, 1, True),    # backlog 1: any waiting unit opens a free lane (decision 0073's rule)
])
def test_a_free_lane_opens_for_few_in_flight_or_for_a_backlog(free: int, queued: int, in_lanes: int, backlog: int,
                                                              opens: bool) -> None:
    assert opens_lane(free=free, queued=queued, in_lanes=in_lanes, backlog=backlog) is opens
