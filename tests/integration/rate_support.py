"""What the lookup-rate tests (docs/decisions/0042) check of a run: that the
provider reads made at each moment of the injected clock never exceed ``rate x elapsed + burst``
over any window of it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any


def over_the_limit(counts: Mapping[datetime, int], rate: float, burst: int) -> list[str]:
    """Every window [t_i, t_j] of the moments in ``counts`` holding more reads than
    ``rate x (t_j - t_i) + burst`` (empty: the limit held)."""
    moments = sorted(counts)
    found = []
    for i, start in enumerate(moments):
        made = 0
        for end in moments[i:]:
            made += counts[end]
            allowed = rate * (end - start).total_seconds() + burst
            if made > allowed + 1e-9:
                found.append(f"{made} reads in [{start.time()}, {end.time()}], at most {allowed:g} allowed")
    return found


def reads_by_moment(requests: Iterable[Mapping[str, Any]], account: str) -> Counter[datetime]:
    """CardCo's GET requests on ``account`` (its request log), counted by when CardCo received
    them on the shared clock."""
    return Counter(datetime.fromisoformat(str(r["received_at"]).replace("Z", "+00:00")) for r in requests
                   if r["method"] == "GET" and r["headers"].get("cardco-account") == account)
