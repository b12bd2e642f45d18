"""Dramatiq actors and the clock process (DESIGN.md, "Parts and how they run").

``dramatiq jobs`` loads this package. The broker is installed by :mod:`jobs.broker` before any
actor module is imported, so no broker is ever created implicitly (STYLE). Actors carry
references only and are safe to run twice and on many machines at once.
"""

from jobs.broker import broker
from jobs import heartbeat, outbox, recovery, reminders
from jobs import payouts  # noqa: F401 - declares the payout actors (seed 000)

__all__ = ["broker", "heartbeat", "outbox", "recovery", "reminders"]
