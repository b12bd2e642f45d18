"""``GET /openapi.json`` (API.md "Operations"; "Authentication": no token): an OpenAPI 3.1 document
of the gateway's API, built from the app's own routes so it cannot drift from them.

Each route's path, methods and path parameters come from the route itself; what it accepts,
answers and refuses from :data:`gateway.http.api_catalog.CATALOG`, whose request and query schemas
are the pydantic models' JSON Schemas and whose problem codes are the domain errors' ``code``.
Routes without a catalog entry (the console's static files) are not part of the API.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.convertors import IntegerConvertor
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.domain import errors as e
from gateway.domain.paging import DEFAULT_LIMIT, MAX_LIMIT, ORDERS
from gateway.http.api_catalog import CATALOG, Operation, Reply
from gateway.http.api_shapes import SHAPES, Schema, array_of, ref
from gateway.http.problems import PROBLEM_TYPE_BASE

TITLE = "paygate"
VERSION = "1"
_HEADERS: dict[str, Schema] = {
    "Location": {"description": "Where to poll the payment's status", "schema": {"type": "string"}},
    "Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "string"}},
    "Link": {"description": 'RFC 8288: `<URL>; rel="next"`, a root-relative URL of the next page (the same '
                            "filters, limit and order, and a cursor); absent on the last page "
                            "(docs/decisions/0036)",
             "schema": {"type": "string"}},
}
# The paging parameters of every list (gateway.http.paging).
_PAGING: list[dict[str, Any]] = [
    {"name": "limit", "in": "query", "required": False,
     "description": "At most this many items (422 request.invalid otherwise)",
     "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT}},
    {"name": "order", "in": "query", "required": False,
     "description": "asc: oldest first; desc: newest first (422 request.invalid otherwise)",
     "schema": {"type": "string", "enum": list(ORDERS), "default": "asc"}},
    {"name": "cursor", "in": "query", "required": False,
     "description": "Where the page starts: only from the URL of a Link rel=\"next\" header of the same list "
                    "and order (422 request.invalid otherwise)",
     "schema": {"type": "string", "minLength": 1}},
]


def documented_routes(routes: Iterable[BaseRoute]) -> list[tuple[str, str, Route]]:
    """``(method, path, route)`` for every route method the catalog documents (HEAD is implied)."""
    return [(method, route.path_format, route)
            for route in routes if isinstance(route, Route)
            for method in sorted(route.methods or ()) if (method, route.path_format) in CATALOG]


def build(routes: Iterable[BaseRoute]) -> dict[str, Any]:
    """The whole document for ``routes``."""
    listed = documented_routes(routes)
    models = {m for method, path, _ in listed for m in (CATALOG[method, path].body,) if m is not None}
    refs, definitions = models_json_schema([(m, "validation") for m in sorted(models, key=lambda m: m.__name__)],
                                           ref_template="#/components/schemas/{model}")
    paths: dict[str, dict[str, Any]] = {}
    for method, path, route in listed:
        operation = CATALOG[method, path]
        body = refs[(operation.body, "validation")] if operation.body else None
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, route, operation, body)
    return {
        "openapi": "3.1.0",
        "info": {"title": TITLE, "version": VERSION,
                 "description": "paygate HTTP contract, version 1. Errors are RFC 9457 problem documents with a "
                                f"stable `code`; `type` is {PROBLEM_TYPE_BASE}<code>."},
        "paths": paths,
        "components": {
            "schemas": {**SHAPES, **definitions.get("$defs", {})},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "A token from `paygate token create`"}},
        },
    }


def _operation(method: str, path: str, route: Route, operation: Operation, body: Schema | None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "operationId": f"{method.lower()}{path.replace('/', '_').replace('{', '').replace('}', '').replace('.', '_')}",
        "summary": operation.summary,
        "tags": [path.split("/")[2] if path.startswith("/v1/") else "service"],
        "security": [{"bearer": []}] if operation.roles else [],
        "parameters": [*_path_parameters(route), *_query_parameters(operation.query),
                       *(_PAGING if operation.paged else ()),
                       *({"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
                         for name in operation.header_params)],
        "responses": _responses(operation, takes_body=bool(body or operation.raw_body),
                                has_path_parameters=bool(route.param_convertors)),
    }
    if operation.roles:
        document["x-roles"] = list(operation.roles)
        document["description"] = f"Role: {' or '.join(operation.roles)}."
    if body or operation.raw_body:
        document["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": body or ref(str(operation.raw_body))}}}
    return document


def _path_parameters(route: Route) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True,
             "schema": {"type": "integer", "minimum": 0}
             if isinstance(convertor, IntegerConvertor) else {"type": "string", "minLength": 1}}
            for name, convertor in route.param_convertors.items()]


def _query_parameters(model: type[BaseModel] | None) -> list[dict[str, Any]]:
    if model is None:
        return []
    schema = model.model_json_schema()
    required = set(schema.get("required", ()))
    return [{"name": name, "in": "query", "required": name in required, "schema": _not_null(prop)}
            for name, prop in schema["properties"].items()]


def _not_null(schema: Schema) -> Schema:
    """A query string has no null: ``X | None`` with default None means "leave the parameter out"."""
    options = [option for option in schema.get("anyOf", ()) if option.get("type") != "null"]
    if len(options) != 1:
        return schema
    return {**options[0], **{k: v for k, v in schema.items() if k not in ("anyOf", "default")}}


def _responses(operation: Operation, *, takes_body: bool, has_path_parameters: bool) -> dict[str, Any]:
    refusals: list[type[e.PaygateError]] = []
    if has_path_parameters:
        refusals += [e.NotFound]  # a value the route's pattern refuses (a negative id) matches no route
    if operation.roles:
        refusals += [e.AuthMissing, e.AuthInvalid, operation.refusal]
    if takes_body:
        refusals += [e.RequestTooLarge]
    if operation.body or operation.query or operation.paged:
        refusals += [e.RequestInvalid]
    responses: dict[str, Any] = {str(status): _success(reply, paged=operation.paged and status == 200)
                                 for status, reply in operation.ok.items()}
    for status, codes in _by_status([*operation.errors, *refusals]).items():
        schema = {"allOf": [ref("Problem"), {"properties": {"code": {"enum": list(codes)}}}]}
        responses[str(status)] = {"description": "; ".join(f"{code}: {title}" for code, title in codes.items()),
                                  "content": {"application/problem+json": {"schema": schema}}}
    responses["default"] = {"description": "Any other failure, as a problem document",
                            "content": {"application/problem+json": {"schema": ref("Problem")}}}
    return responses


def _by_status(raised: Iterable[type[e.PaygateError]]) -> dict[int, dict[str, str]]:
    grouped: dict[int, dict[str, str]] = {}
    for error in raised:
        grouped.setdefault(error.status, {})[error.code] = (error.__doc__ or error.code).strip().splitlines()[0]
    return dict(sorted(grouped.items()))


def _success(reply: Reply, *, paged: bool) -> dict[str, Any]:
    document: dict[str, Any] = {"description": reply.description}
    if reply.shape is not None:
        listed = reply.shape.startswith("[")
        schema = array_of(reply.shape.strip("[]")) if listed else ref(reply.shape)
        document["content"] = {"application/json": {"schema": schema}}
    headers = (*reply.headers, *(("Link",) if paged else ()))
    if headers:
        document["headers"] = {name: _HEADERS[name] for name in headers}
    return document


async def openapi(request: Request) -> JSONResponse:
    """The document for the app serving this request, built once per app."""
    document = getattr(request.app.state, "openapi", None)
    if document is None:
        document = request.app.state.openapi = build(request.app.routes)
    return JSONResponse(document)
