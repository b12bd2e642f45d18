"""``GET /openapi.json`` (API.md "Operations": "an OpenAPI 3.1 document describing every /v1/
endpoint, its request schema and its responses, accurate enough for a schema-driven fuzzer";
"Authentication": no token). The document is built from ``routes()``, so these tests hold the
catalog to the routes, and the documented bodies and queries to what the handlers really parse."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from gateway.app import routes
from gateway.http.api_catalog import CATALOG
from gateway.http.openapi import documented_routes
from gateway.services import Services

HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await client.get("/openapi.json")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
async def tokens(services: Services) -> dict[str, dict[str, str]]:
    """A bearer header per role; the clerk belongs to a tenant, as clerks must."""
    made = {role: await services.tokens.create(role, f"{role}-1")
            for role in ("merchant", "customer", "operator", "admin")}
    made["clerk"] = await services.tokens.create("clerk", "clerk-1", tenant_id="tenant-1", approval_limit_minor=10**8)
    return {role: {"Authorization": f"Bearer {token}"} for role, token in made.items()}


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, spec) for path, item in document["paths"].items()
            for method, spec in item.items() if method in HTTP_METHODS]


async def test_the_document_is_valid_openapi_3_1_and_needs_no_token(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http", "scheme": "bearer", "description": "A token from `paygate token create`"}


async def test_every_v1_route_is_documented_and_every_entry_names_a_route(document: dict[str, Any]) -> None:
    """A route added to routes() without a catalog entry, or an entry whose route is gone, fails here."""
    served = {(method, route.path_format) for route in routes() if route.path_format.startswith("/v1/")  # type: ignore[attr-defined]
              for method in route.methods or () if method != "HEAD"}  # type: ignore[attr-defined]
    documented = {(method, path) for method, path, _ in operations(document)}
    assert served <= documented, f"undocumented routes: {sorted(served - documented)}"
    assert set(CATALOG) == {(method, path) for method, path, _ in documented_routes(routes())}


async def test_every_operation_documents_its_parameters_security_and_problems(document: dict[str, Any]) -> None:
    for method, path, spec in operations(document):
        declared = {p["name"] for p in spec["parameters"] if p["in"] == "path"}
        assert declared == {part[1:-1] for part in path.split("/") if part.startswith("{")}, (method, path)
        assert "default" in spec["responses"]
        if path.startswith("/v1/") and spec["security"]:
            assert spec["responses"]["401"]["content"]["application/problem+json"]
        if "requestBody" in spec:
            assert {"413", "422"} <= set(spec["responses"]) or spec["security"] == [], (method, path)


async def test_the_ops_operations_carry_the_contracts_codes(document: dict[str, Any]) -> None:
    """API.md codes are part of the contract: ``attempt.not_found``, ``request.invalid`` for a bad state."""
    detail = document["paths"]["/v1/ops/attempts/{attempt_id}"]["get"]
    assert detail["responses"]["404"]["content"]["application/problem+json"]["schema"]["allOf"][1] == {
        "properties": {"code": {"enum": ["attempt.not_found", "not_found"]}}}
    assert detail["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AttemptHistory"}
    listing = document["paths"]["/v1/ops/attempts"]["get"]
    [state] = [p for p in listing["parameters"] if p["name"] == "state"]
    assert state["schema"]["enum"] == ["NotStarted", "Started", "Unknown", "Succeeded", "Failed", "NotApplied", "all"]
    order = document["paths"]["/v1/orders"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert order == {"$ref": "#/components/schemas/NewOrder"}
    assert set(document["components"]["schemas"]["NewOrder"]["required"]) == {
        "order_id", "customer_id", "amount_minor", "currency", "payment_method", "provider_account"}


async def test_documented_bodies_and_queries_are_the_ones_the_handlers_parse(
        client: httpx.AsyncClient, document: dict[str, Any], tokens: dict[str, dict[str, str]]) -> None:
    """For each operation, as a caller of its role: an unexpected field is refused 422
    ``request.invalid`` exactly when the document says the operation takes a body (or a query)."""
    for method, path, spec in operations(document):
        if not spec["security"]:
            continue  # signature-authenticated (webhooks) or public: nothing parsed before the check
        # Integer ids are 1; string ids are a policy operation, the one path value checked first.
        url = path.format(**{p["name"]: 1 if p["schema"]["type"] == "integer" else "payout.submit"
                             for p in spec["parameters"] if p["in"] == "path"})
        headers = tokens[spec["x-roles"][0]]
        if method == "GET":
            response = await client.get(url, headers=headers, params={"zzz": "1"})
            takes = any(p["in"] == "query" for p in spec["parameters"])
        else:
            response = await client.request(method, url, headers=headers, json={"zzz": 1})
            takes = "requestBody" in spec
        refused = response.status_code == 422 and response.json()["code"] == "request.invalid"
        assert refused == takes, (method, path, response.status_code, response.text)



async def test_the_served_document_enumerates_the_order_states_and_the_refunded_answer(
        document: dict[str, Any]) -> None:
    """API.md "Orders": an order's ``state`` is one of ``Open``, ``Paid``, ``Cancelled``,
    ``CancelRequested``, ``PaidAfterCancel`` and ``Refunded``, wherever an order is answered; a
    payment for a refunded order is 409 ``order.refunded`` (seed 004, "Cancellation": the refund
    is its own operation, the order takes no new payment). The document stays valid OpenAPI 3.1."""
    validate(document)
    schemas = document["components"]["schemas"]
    assert schemas["Order"]["properties"]["state"]["enum"] == [
        "Open", "Paid", "Cancelled", "CancelRequested", "PaidAfterCancel", "Refunded"]
    order = {"$ref": "#/components/schemas/Order"}
    paths = document["paths"]
    for method, path, status in (("post", "/v1/orders", "201"), ("get", "/v1/orders/{order_id}", "200"),
                                 ("post", "/v1/orders/{order_id}/cancel", "200")):
        assert paths[path][method]["responses"][status]["content"]["application/json"]["schema"] == order, path
    conflict = paths["/v1/orders/{order_id}/payment"]["post"]["responses"]["409"]
    codes = conflict["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]["code"]["enum"]
    assert {"order.paid", "order.cancelled", "order.refunded"} <= set(codes)
    refund = paths["/v1/orders/{order_id}/refund"]["post"]["responses"]["409"]
    assert {"order.not_refundable", "order.refund_unresolved"} <= set(
        refund["content"]["application/problem+json"]["schema"]["allOf"][1]["properties"]["code"]["enum"])
