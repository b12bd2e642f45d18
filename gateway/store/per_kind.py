"""Named SQL composed once per registered attempt kind (gateway.domain.attempt_kinds): a block
written for one kind, with placeholders for the kind's names, is repeated for each kind at load
time, so no statement keeps a list of the kinds by hand. Names become ``sql.Identifier`` and
values ``sql.Literal``; nothing is pasted into the text."""

from __future__ import annotations

from psycopg import sql

from gateway.domain.attempt_kinds import Kind


def _fields(kind: Kind) -> dict[str, sql.Composable]:
    """A kind's placeholders: ``{kind}`` its name, ``{attempts}`` its table, ``{sent_at}`` its send
    column, ``{provider_id}`` its provider-id column; a granted kind's ``{grants}`` table and
    ``{operation}``."""
    fields: dict[str, sql.Composable] = {
        "kind": sql.Literal(kind.name), "attempts": sql.Identifier(kind.attempts),
        "sent_at": sql.Identifier(kind.sent_at), "provider_id": sql.Identifier(kind.provider_id)}
    if kind.grants is not None:
        fields |= {"grants": sql.Identifier(kind.grants), "operation": sql.Literal(kind.grant_operation)}
    return fields


def per_kind(block: str, kinds: tuple[Kind, ...], joiner: str = " UNION ALL ") -> sql.Composed:
    """``block`` for each of ``kinds``, each in parentheses, joined by ``joiner``."""
    return sql.SQL(joiner).join(sql.SQL("({})").format(sql.SQL(block).format(**_fields(kind))) for kind in kinds)
