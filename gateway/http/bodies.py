"""Request bodies: JSON validated by a pydantic model, or 422 ``request.invalid`` with the field
errors (API.md, Conventions). Validation runs before any handler work, so nothing is written for
a rejected request."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request

from gateway.domain.errors import RequestInvalid

Model = TypeVar("Model", bound=BaseModel)
# An id a caller chooses (order, customer, payout, beneficiary, destination, tenant): API.md, Conventions.
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")]


class Body(BaseModel):
    """Base for request bodies: unknown fields are refused, strings are not coerced to numbers."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def field_errors(error: ValidationError) -> list[dict[str, Any]]:
    return [{"field": ".".join(str(p) for p in problem["loc"]) or "body", "message": problem["msg"]}
            for problem in error.errors()]


async def parse_body(request: Request, model: type[Model]) -> Model:
    raw = await request.body()
    try:
        document = json.loads(raw) if raw.strip() else None
    except ValueError:
        raise RequestInvalid("the body is not valid JSON",
                             errors=[{"field": "body", "message": "invalid JSON"}]) from None
    if not isinstance(document, dict):
        raise RequestInvalid("the body must be a JSON object",
                             errors=[{"field": "body", "message": "expected an object"}])
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise RequestInvalid("the body does not match the schema", errors=field_errors(error)) from None
