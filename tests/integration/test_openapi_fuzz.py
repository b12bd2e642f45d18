"""A schema-driven fuzzer against ``/openapi.json`` (API.md "Operations": "accurate enough for a
schema-driven fuzzer to exercise the API"). Schemathesis generates requests from the document,
valid and invalid, for every operation, sends them in-process to the real app over the real
database (the app opens its own services in its lifespan), as a caller of the operation's role,
and checks each answer: never a 5xx, a documented status, the documented content type and a
body that matches the documented schema. Derandomized and bounded, so it is repeatable and fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from gateway.app import create_app
from gateway.settings import Settings
from tests.integration.test_openapi import tokens

__all__ = ["tokens"]

EXAMPLES_PER_OPERATION = 10
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def api(settings: Settings) -> Iterator[schemathesis.BaseSchema]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(settings))
    try:
        yield schema
    finally:
        asgi.shutdown_lifespans()  # closes the app's pool, so the test database can be dropped


async def test_fuzzed_requests_get_documented_answers_and_never_a_server_error(
        api: schemathesis.BaseSchema, tokens: dict[str, dict[str, str]]) -> None:
    for result in api.get_all_operations():
        if isinstance(result, Err):
            raise result.err()  # the document has an operation schemathesis cannot read
        operation = result.ok()
        roles = operation.definition.raw.get("x-roles", [])
        headers = tokens[roles[0]] if roles else {}
        _exercise(operation.as_strategy(schemathesis.GenerationMode.POSITIVE, headers=headers), headers)
        try:
            _exercise(operation.as_strategy(schemathesis.GenerationMode.NEGATIVE, headers=headers), headers)
        except Unsatisfiable:
            pass  # nothing to make invalid: no body, no query, only free-form string path parameters


def _exercise(strategy: Any, headers: dict[str, str]) -> None:
    # Generation only: shrinking a failure would multiply the run time; the failure is printed as is.
    @hypothesis_settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None, deadline=None,
                         phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate(headers=headers, checks=CHECKS)

    run()
