"""Query strings validated by a pydantic model, or 422 ``request.invalid`` with the field errors
(API.md, Conventions), the same way :mod:`gateway.http.bodies` validates bodies."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request

from gateway.domain.errors import RequestInvalid
from gateway.http.bodies import field_errors

Query = TypeVar("Query", bound=BaseModel)


class Page(BaseModel):
    """A page of a list, oldest first: at most ``limit`` items with ids greater than ``after``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    limit: int = Field(default=100, ge=1, le=1000)
    after: int = Field(default=0, ge=0)


def parse_query(request: Request, model: type[Query]) -> Query:
    try:
        return model.model_validate(dict(request.query_params))
    except ValidationError as error:
        raise RequestInvalid("the query does not match the schema", errors=field_errors(error)) from None


