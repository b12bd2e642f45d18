"""Reading a real ``/metrics`` scrape in tests: the text is parsed by
prometheus_client's own parser, so a malformed exposition fails the test that reads it."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    families: dict[str, str]  # family name -> type
    values: dict[tuple[str, frozenset[tuple[str, str]]], float]

    def value(self, sample: str, **labels: str) -> float:
        """One series' value; 0 when the series is absent (a counter nobody incremented)."""
        return self.values.get((sample, frozenset(labels.items())), 0.0)

    def total(self, sample: str, **labels: str) -> float:
        """The sum over every series of ``sample`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return sum(v for (name, have), v in self.values.items() if name == sample and wanted <= have)

    def series(self, sample: str) -> list[dict[str, str]]:
        return [dict(labels) for name, labels in self.values if name == sample]


async def scrape(http: httpx.AsyncClient) -> Scrape:
    response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    families: dict[str, str] = {}
    values: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(response.text):
        families[family.name] = family.type
        for sample in family.samples:
            values[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(families, values)
