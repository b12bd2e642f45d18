"""Binding the product's statements for pgbench (bench/pgbench_scripts.py): every parameter bound,
no binding unused, the product's comments gone (pgbench would end a command at a semicolon in
one), and no ``:name`` in the product's text that pgbench would take for a variable."""

from __future__ import annotations

import pytest

from bench.pgbench_scripts import SCRIPTS, Statement, bound, script, without_comments


def test_each_parameter_is_replaced_by_its_binding_and_a_doubled_percent_is_one() -> None:
    statement = Statement("q", "-- why; and how\nSELECT %(a)s, x %% 2 -- trailing; comment\n  FROM t\n WHERE '--' = %(b)s;",
                          {"a": ":a", "b": "now()"}, gset=True)
    assert bound(statement) == "SELECT :a, x % 2\n  FROM t\n WHERE '--' = now() \\gset"


@pytest.mark.parametrize("bind, problem", [({"a": "1"}, "unbound ['b']"), ({"a": "1", "b": "2", "c": "3"}, "unused ['c']")])
def test_a_parameter_left_unbound_or_a_binding_left_unused_is_refused(bind: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        bound(Statement("q", "SELECT %(a)s, %(b)s", bind))


def test_a_colon_name_in_the_products_text_is_refused_but_a_cast_is_not() -> None:
    assert bound(Statement("q", "SELECT %(a)s::text", {"a": "1"})) == "SELECT 1::text;"
    with pytest.raises(ValueError, match="as a variable"):
        bound(Statement("q", "SELECT 'attempt:order' || %(a)s", {"a": "1"}))


def test_comments_go_but_a_double_dash_inside_a_literal_stays() -> None:
    assert without_comments("-- head\nSELECT '--x' -- tail\n\n  -- inner\nFROM t") == "SELECT '--x'\nFROM t"


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_script_generates(name: str) -> None:
    text = script(name)
    assert "%(" not in text and text.startswith("-- pgbench: ")
