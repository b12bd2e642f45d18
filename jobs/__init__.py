"""Dramatiq actors and the clock process (DESIGN.md, "Parts and how they run").

``dramatiq jobs`` loads this package. The broker is installed by :mod:`jobs.broker` before any
actor module is imported, so no broker is ever created implicitly (STYLE). Actors carry
references only and are safe to run twice and on many machines at once.
"""

# isort: off
# The broker first: installing it before any actor module is imported is the point of this order.
from jobs.broker import broker
from jobs import grants, heartbeat, outbox, payouts, reconciliation, recovery, redelivery, refunds, reminders
# isort: on

__all__ = ["broker", "grants", "heartbeat", "outbox", "payouts", "reconciliation", "recovery", "redelivery", "refunds",
           "reminders"]
