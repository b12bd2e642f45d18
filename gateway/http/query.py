"""Query strings validated by a pydantic model, or 422 ``request.invalid`` with the field errors
(API.md, Conventions), the same way :mod:`gateway.http.bodies` validates bodies. The paging
parameters of a list (``limit``, ``order``, ``cursor``) are read by :mod:`gateway.http.paging`."""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request

from gateway.domain.errors import RequestInvalid
from gateway.http.bodies import field_errors

Query = TypeVar("Query", bound=BaseModel)


class AfterId(BaseModel):
    """``after``: only rows whose integer id is greater (how these lists were paged before the
    ``Link`` header; kept, docs/decisions/0036)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: int = Field(default=0, ge=0)


def parse_query(request: Request, model: type[Query], *, leave: Collection[str] = ()) -> Query:
    """``model`` from the query string, without the parameters named in ``leave`` (read elsewhere)."""
    params = {name: value for name, value in request.query_params.items() if name not in leave}
    try:
        return model.model_validate(params)
    except ValidationError as error:
        raise RequestInvalid("the query does not match the schema", errors=field_errors(error)) from None
