"""When the campaign kills what (issue 12: "on a seeded random schedule: SIGKILL a worker (and
restart it), SIGKILL a web process mid-request, SIGKILL the clock, restart PostgreSQL once (fast
shutdown and start), restart Valkey once with its data lost").

The load runs in waves (``gateway.campaign.load``); each disruption is placed in one wave, a
seeded delay after the wave starts, so it lands while that wave's requests are in flight. Every
run, however small, gets at least one of each; larger runs kill workers and web processes more
often. The schedule is a pure function of the seed and the number of waves.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Action = Literal["kill-worker", "kill-web", "kill-clock", "restart-postgres", "restart-broker"]
WAVES_PER_WORKER_KILL = 8
WAVES_PER_WEB_KILL = 12
MIN_WAVES = 6


@dataclass(frozen=True, order=True)
class Disruption:
    wave: int
    delay_s: float
    action: Action
    target: int  # which worker or web process (1 or 2); 1 for the others


def plan(seed: int, waves: int) -> list[Disruption]:
    """The disruptions for a run of ``waves`` waves, in the order they happen. The first and the
    last wave stay calm, and the two server restarts never share a wave."""
    if waves < MIN_WAVES:
        raise ValueError(f"a campaign needs at least {MIN_WAVES} waves, got {waves}")
    rng = random.Random(f"schedule:{seed}")
    middle = range(1, waves - 1)
    postgres, broker = rng.sample(middle, 2)
    actions: list[tuple[int, Action]] = [(postgres, "restart-postgres"), (broker, "restart-broker"),
                                         (rng.choice(middle), "kill-clock")]
    actions += [(rng.choice(middle), "kill-worker") for _ in range(max(1, waves // WAVES_PER_WORKER_KILL))]
    actions += [(rng.choice(middle), "kill-web") for _ in range(max(1, waves // WAVES_PER_WEB_KILL))]
    return sorted(Disruption(wave, round(rng.uniform(0.3, 2.0), 2), action, rng.choice((1, 2)))
                  for wave, action in actions)
