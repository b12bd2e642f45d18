"""Stripe's search query language, the part PaymentIntent search needs.

docs/rehearsing-incidents.md "Stripe dialect": a query is clauses joined by `AND` or by `OR`
(never both); a clause is `field:value`, or `field>n` / `<` / `>=` / `<=` for numbers, negated
by a leading `-`. Fields: `metadata['key']` (or `metadata["key"]`), `status`, `currency`,
`customer` (quoted strings, exact match), `amount` and `created` (numbers). Anything else is a
400 naming the `query` parameter. What a query cannot see is the search index's lag
(api.py, `visibility_delay_s`).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from provider_fake.stripe.errors import StripeError, invalid_request

_CLAUSE = re.compile(
    r"""\s*(?P<negated>-)?
    (?P<field>[a-z_]+)(?:\[(?P<quote>['"])(?P<key>[^'"\]]+)(?P=quote)\])?
    \s*(?P<op>:|>=|<=|>|<)\s*
    (?:(?P<vquote>['"])(?P<text>(?:\\.|(?!(?P=vquote)).)*)(?P=vquote)|(?P<number>-?\d+))\s*""",
    re.VERBOSE,
)
_JOIN = re.compile(r"(AND|OR)\s")
STRING_FIELDS = frozenset({"status", "currency", "customer"})
NUMBER_FIELDS = frozenset({"amount", "created"})
COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    ":": operator.eq, ">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le
}


@dataclass(frozen=True)
class Clause:
    field: str
    key: str | None
    op: str
    value: str | int
    negated: bool

    def matches(self, document: dict[str, Any]) -> bool:
        actual = (document.get("metadata") or {}).get(self.key) if self.key else document.get(self.field)
        found = actual is not None and COMPARISONS[self.op](actual, self.value)
        return found != self.negated


@dataclass(frozen=True)
class Query:
    clauses: list[Clause]
    any_of: bool

    def matches(self, document: dict[str, Any]) -> bool:
        results = (clause.matches(document) for clause in self.clauses)
        return any(results) if self.any_of else all(results)

    def metadata_value(self, key: str) -> str | None:
        """The value a conjunctive query requires of `metadata[key]`, if it names one."""
        for clause in self.clauses:
            if clause.key == key and clause.op == ":" and not clause.negated and not self.any_of:
                return str(clause.value)
        return None


def parse(text: str) -> Query:
    """The query, or Stripe's 400 (`param` "query") when it is not one this fake understands."""
    clauses: list[Clause] = []
    joins: set[str] = set()
    position = 0
    while True:
        match = _CLAUSE.match(text, position)
        if match is None:
            raise _invalid(text, f"could not parse the query at character {position}")
        clauses.append(_clause(text, match))
        position = match.end()
        if position == len(text):
            break
        join = _JOIN.match(text, position)
        if join is None:
            raise _invalid(text, f"expected AND or OR at character {position}")
        joins.add(join.group(1))
        position = join.end()
    if len(joins) > 1:
        raise _invalid(text, "AND and OR cannot be combined in one query")
    return Query(clauses, any_of=joins == {"OR"})


def _clause(text: str, match: re.Match[str]) -> Clause:
    name, key, op = match["field"], match["key"], match["op"]
    if name == "metadata" and key is not None and match["text"] is not None and op == ":":
        return Clause(name, key, op, match["text"], bool(match["negated"]))
    if name in STRING_FIELDS and key is None and match["text"] is not None and op == ":":
        return Clause(name, None, op, match["text"], bool(match["negated"]))
    if name in NUMBER_FIELDS and key is None and match["number"] is not None:
        return Clause(name, None, op, int(match["number"]), bool(match["negated"]))
    raise _invalid(text, f"{match.group(0).strip()!r} is not a supported search clause for payment intents")


def _invalid(text: str, reason: str) -> StripeError:
    return invalid_request(f"Invalid search query: {reason}: {text}", param="query")
