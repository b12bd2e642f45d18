"""The alert rules a team loads ("A documented set of alert rules (Prometheus rule
file in docs/) that a team can load, and a test that every metric named there exists").

``docs/alerts.rules.yml`` must be a Prometheus rule file (groups of named rules, each an alert with
an expression, labels and annotations), every metric its expressions name must be in a real
``/metrics`` scrape with the suffix its type exposes, and every alert must be explained in
``docs/observability.md``. ``promtool check rules`` parses the PromQL itself where it is installed
(.ci/run installs Debian's prometheus package for it)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.metrics_support import Scrape, scrape
from tests.integration.payouts.conftest import World

DOCS = Path(__file__).resolve().parents[3] / "docs"
RULES = DOCS / "alerts.rules.yml"
PAGE = DOCS / "observability.md"

_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# What PromQL spells with identifiers besides metric names: keywords, and the label lists of
# aggregations and vector matching (removed with their parentheses before names are read).
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    assert isinstance(document, dict) and set(document) == {"groups"}
    rules: list[dict[str, Any]] = []
    names = [group["name"] for group in document["groups"]]
    assert len(names) == len(set(names)), "group names are unique"
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["rules"], group.get("name")
        rules += group["rules"]
    return rules


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: string literals, label matchers, ranges and the
    label lists of ``by``/``on``/... removed; an identifier before ``(`` is a function."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = _LABEL_LISTS.sub(" ", text)
    names = set()
    for match in _NAME.finditer(text):
        rest = text[match.end():].lstrip()
        if match.group() in _KEYWORDS or rest.startswith("("):
            continue
        if text[max(0, match.start() - 1)].isdigit():  # the unit of a duration or a number's exponent
            continue
        names.add(match.group())
    return names


def test_the_name_reader_finds_metrics_and_skips_functions_labels_and_keywords() -> None:
    expr = ('histogram_quantile(0.99, sum by (le, kind) (rate(a_seconds_bucket{outcome!="ok",x=~"a|b"}[10m])))'
            ' / on (kind) group_left b_total offset 5m > 1e3 and absent(c{kind="clock"})')
    assert metric_names(expr) == {"a_seconds_bucket", "b_total", "c"}


def test_the_rule_file_has_the_shape_of_prometheus_alerting_rules() -> None:
    page = PAGE.read_text(encoding="utf-8").lower()
    alerts = [rule["alert"] for rule in _rules()]
    assert len(alerts) == len(set(alerts)), "alert names are unique"
    for rule in _rules():
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
        assert re.fullmatch(r"Paygate[A-Z][A-Za-z]+", rule["alert"]), rule["alert"]
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        assert "for" not in rule or _DURATION.match(rule["for"]), rule
        assert rule["labels"]["severity"] in ("page", "ticket"), rule["alert"]
        assert {"summary", "description", "runbook"} <= set(rule["annotations"]), rule["alert"]
        anchor = rule["alert"].lower()
        assert rule["annotations"]["runbook"] == f"docs/observability.md#{anchor}"
        assert f"### {anchor}" in page, f"{rule['alert']} is explained in docs/observability.md"


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (Debian package prometheus; .ci/run installs it)")
def test_promtool_accepts_the_rule_file() -> None:
    checked = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _exposed(seen: Scrape, name: str) -> bool:
    """Whether ``name`` is a sample name of a family in the scrape, with its type's suffix."""
    return any(name == family + suffix
               for family, typ in seen.families.items() for suffix in _SUFFIXES.get(typ, ("",)))


async def test_every_metric_an_alert_reads_is_in_a_real_scrape(world: World) -> None:
    """After a payout that ended Unknown and was reconciled (so the provider-call and reconciler
    families have samples too), every metric the rules name is exposed by /metrics."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    await world.run(await world.approved())
    world.clock.advance(60)
    await world.reconcile()
    seen = await scrape(world.http)
    named = set().union(*(metric_names(rule["expr"]) for rule in _rules()))
    assert len(named) >= 15
    assert {name for name in named if not _exposed(seen, name)} == set()
    assert all(name.startswith("paygate_") for name in named)


def _series(before: Scrape, after: Scrape, names: set[str], samples: int) -> list[dict[str, str]]:
    """promtool input series: each series of ``names`` holds its value in ``before`` for
    ``samples`` evaluation steps, then its value in ``after`` for as many."""
    keys = {key for key in (*before.values, *after.values) if key[0] in names}
    series = []
    for name, labels in sorted(keys, key=lambda key: (key[0], sorted(key[1]))):
        selector = name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels)) + "}"
        first, then = before.values.get((name, labels), 0.0), after.values.get((name, labels), 0.0)
        series.append({"series": selector, "values": f"{first:g}+0x{samples - 1} {then:g}+0x{samples - 1}"})
    return series


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool is not installed (Debian package prometheus; .ci/run installs it)")
async def test_the_unknown_too_old_alert_fires_on_what_a_real_scrape_shows(world: World, tmp_path: Path) -> None:
    """Seed 000 section 21: "An attempt that stays Unknown past the provider's processing window
    needs a person." The series of two real scrapes (the payout Unknown for 30 minutes, then for
    two hours) are fed to ``promtool test rules``: quiet on the first, firing on the second."""
    await world.faults({"operation": "create_payout", "action": "drop_response"})
    await world.run(await world.approved())
    world.clock.advance(30 * 60)
    young = await scrape(world.http)
    world.clock.advance(90 * 60)
    old = await scrape(world.http)
    [rule] = [r for r in _rules() if r["alert"] == "PaygatePayoutUnknownTooOld"]
    annotations = {key: value.replace("{{ $value }}", "1").replace("{{ $labels.kind }}", "payout")
                   for key, value in rule["annotations"].items()}
    unit = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": _series(young, old, metric_names(rule["expr"]), samples=20),
        "alert_rule_test": [
            {"eval_time": "15m", "alertname": rule["alert"], "exp_alerts": []},
            {"eval_time": "30m", "alertname": rule["alert"], "exp_alerts": [
                {"exp_labels": {"severity": "page", "kind": "payout"}, "exp_annotations": annotations}]}]}]}
    path = tmp_path / "unknown.tests.yml"
    path.write_text(yaml.safe_dump(unit), encoding="utf-8")
    checked = subprocess.run(["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
