"""The one statement that locks a payment attempt for its evidence: the order row, then the
attempt row (seed 004, "Cancellation goes through the same lock"; docs/decisions/0049).

``queries.sql`` ``lock_for_evidence`` is a template over the attempt's id. :data:`LOCK_FOR_EVIDENCE`
binds it to the ``attempt_id`` parameter (Attempts.apply_evidence); the notifications'
``identify_and_record`` embeds :func:`lock_for_evidence` of the attempt it has just recorded a
notification for, so that path keeps its one round trip and both lock exactly alike.
"""

from __future__ import annotations

from psycopg import sql

from gateway.store.queries import load_queries

_TEMPLATE = load_queries("gateway.payments")["lock_for_evidence"]


def lock_for_evidence(attempt_id: str, *, commented: bool = True) -> str:
    """The lock statement for the attempt ``attempt_id`` names (SQL text: a parameter or a
    subquery). Embedded in a longer statement it goes ``commented=False``, without its leading
    comment, so that statement stays within psycopg's query cache (docs/decisions/0048)."""
    template = _TEMPLATE if commented else _TEMPLATE[_TEMPLATE.index("\nWITH ") + 1:]
    return sql.SQL(template).format(attempt_id=sql.SQL(attempt_id)).as_string(None)


LOCK_FOR_EVIDENCE = lock_for_evidence("%(attempt_id)s")
