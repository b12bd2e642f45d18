"""When the campaign disrupts what: kills, server restarts, crashes and outages,
pauses past a lease, sink faults, CardCo's lookup storms and its listing lag on lost payouts.

The load runs in waves (``paygate_local.campaign.load``); each disruption is placed in one wave, a
seeded delay after the wave starts, so it lands while that wave's requests are in flight. Every
run, however small, gets a SIGKILL of a worker, a web process and the clock, one fast restart of
PostgreSQL, one restart of the broker (data lost) and one pause of a worker past its lease; a run
of ``FULL_WAVES`` waves or more (``--checkouts 300``) also gets a PostgreSQL crash (``-m
immediate``) and outage, a broker outage, both workers killed at once, each sink fault (5xx,
hanging past the delivery budget, down), a lookup storm and a lost payout answer under CardCo's
listing lag. Bigger runs get each kind every ``EVERY`` waves, so the default 40 waves get each
at least twice. The server disruptions never share a wave, and no pause shares a wave with one
nor with a worker kill (a worker stopped while PostgreSQL is down, or killed while stopped,
proves nothing about its lease). The schedule is a
pure function of the seed and the number of waves.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Action = Literal[
    "kill-worker", "kill-workers", "kill-web", "kill-clock",
    "restart-postgres", "crash-postgres", "outage-postgres", "restart-broker", "outage-broker",
    "pause-worker", "sink-error", "sink-hang", "sink-down", "lookup-storm", "payout-lag",
]
# Disruptions of a server: at most one per wave, never with a pause.
SERVER: frozenset[Action] = frozenset({"restart-postgres", "crash-postgres", "outage-postgres", "restart-broker",
                                       "outage-broker"})
SINK_FAULTS: frozenset[Action] = frozenset({"sink-error", "sink-hang", "sink-down"})
MIN_WAVES = 6
FULL_WAVES = 12
# (the fewest waves a run needs to get the kind, a further one every so many waves)
EVERY: dict[Action, tuple[int, int]] = {
    "kill-worker": (MIN_WAVES, 8), "kill-web": (MIN_WAVES, 12), "kill-clock": (MIN_WAVES, 16),
    "restart-postgres": (MIN_WAVES, 20), "restart-broker": (MIN_WAVES, 20), "pause-worker": (MIN_WAVES, 6),
    "kill-workers": (FULL_WAVES, 20), "crash-postgres": (FULL_WAVES, 20), "outage-postgres": (FULL_WAVES, 20),
    "outage-broker": (FULL_WAVES, 20), "sink-error": (FULL_WAVES, 20), "sink-hang": (FULL_WAVES, 20),
    "sink-down": (FULL_WAVES, 20), "lookup-storm": (FULL_WAVES, 20), "payout-lag": (FULL_WAVES, 20),
}
# How long each timed disruption lasts, in seconds (an outage of 10 s or more; a pause
# lasts until the leases it stopped lapsed and were taken over, then this much longer).
DURATION_S: dict[Action, tuple[float, float]] = {
    "outage-postgres": (10.0, 13.0), "outage-broker": (10.0, 13.0), "pause-worker": (1.0, 3.0),
    "sink-error": (15.0, 25.0), "sink-hang": (15.0, 25.0), "sink-down": (20.0, 30.0), "lookup-storm": (20.0, 40.0),
}
MERCHANT, ALERTS = 1, 2  # a sink fault's target


@dataclass(frozen=True, order=True)
class Disruption:
    wave: int
    delay_s: float
    action: Action
    target: int  # which worker or web process (1 or 2), or sink (MERCHANT, ALERTS); 1 for the others
    duration_s: float = 0.0  # a timed disruption's length (DURATION_S); 0 for the others


def count(action: Action, waves: int) -> int:
    """How many times a run of ``waves`` waves gets ``action``."""
    first, every = EVERY[action]
    return 0 if waves < first else max(1, waves // every)


def plan(seed: int, waves: int) -> list[Disruption]:
    """The disruptions for a run of ``waves`` waves, in the order they happen. The first and the
    last wave stay calm; server disruptions each get a wave of their own, pauses a wave without
    one; sink faults alternate between the merchant and the alert sink."""
    if waves < MIN_WAVES:
        raise ValueError(f"a campaign needs at least {MIN_WAVES} waves, got {waves}")
    rng = random.Random(f"schedule:{seed}")
    middle = list(range(1, waves - 1))
    servers = [action for action in EVERY if action in SERVER for _ in range(count(action, waves))]
    server_waves = rng.sample(middle, min(len(servers), len(middle)))
    placed: list[tuple[int, Action]] = list(zip(server_waves, servers, strict=False))
    placed += [(rng.choice(middle), action) for action in EVERY if action not in SERVER and action != "pause-worker"
               for _ in range(count(action, waves))]
    # A pause needs its worker alive and PostgreSQL up: no server disruption, no worker kill.
    busy = {wave for wave, action in placed if action in SERVER or action.startswith("kill-worker")}
    quiet = [wave for wave in middle if wave not in busy] or [wave for wave in middle if wave not in server_waves]
    placed += [(rng.choice(quiet), "pause-worker") for _ in range(count("pause-worker", waves))]
    sink_targets = iter(rng.sample((MERCHANT, ALERTS), 2) * waves)
    disruptions = []
    for wave, action in placed:
        target = next(sink_targets) if action in SINK_FAULTS else rng.choice((1, 2))
        low, high = DURATION_S.get(action, (0.0, 0.0))
        disruptions.append(Disruption(wave, round(rng.uniform(0.3, 2.0), 2), action, target,
                                      round(rng.uniform(low, high), 1)))
    return sorted(disruptions)
