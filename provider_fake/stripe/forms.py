"""Stripe's request parameters: form-encoded, nested with brackets.

docs/rehearsing-incidents.md "Stripe dialect": v1 bodies (and query strings) are
`application/x-www-form-urlencoded`; `metadata[client_reference]=ORD-1` is a hash and
`expand[0]=latest_charge` (or `expand[]=...`) a list, as the official clients encode them.
Invalid parameters are Stripe's 400s: `parameter_missing`, `parameter_unknown`,
`parameter_invalid_integer`, or an `invalid_request_error` naming the `param`.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar
from urllib.parse import parse_qsl

from pydantic import BaseModel, ValidationError

from provider_fake.stripe.errors import StripeError, invalid_request

Model = TypeVar("Model", bound=BaseModel)

_BRACKETS = re.compile(r"(?:\[[^\[\]]*\])*")
_SEGMENT = re.compile(r"\[([^\[\]]*)\]")


def decode(encoded: bytes | str) -> dict[str, Any]:
    """`a=1&metadata[k]=v&expand[0]=x` -> `{"a": "1", "metadata": {"k": "v"}, "expand": ["x"]}`."""
    text = encoded.decode() if isinstance(encoded, bytes) else encoded
    root: dict[str, Any] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        head, bracket, rest = name.partition("[")
        if not head or "]" in head or not _BRACKETS.fullmatch(bracket + rest):
            raise invalid_request(f"Invalid parameter name: {name}", param=name)
        segments = [head, *_SEGMENT.findall(bracket + rest)]
        node = root
        for segment in segments[:-1]:
            child = node.setdefault(segment, {})
            if not isinstance(child, dict):
                raise invalid_request(f"Invalid hash: {name}", param=name)
            node = child
        last = segments[-1] or str(len(node))  # `[]` appends
        node[last] = value
    return _listed(root)


def _listed(node: dict[str, Any]) -> dict[str, Any]:
    """Hashes whose keys are all indexes become lists, in index order."""
    result: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            inner = _listed(value)
            if inner and all(k.isdigit() for k in inner):
                result[key] = [inner[k] for k in sorted(inner, key=int)]
            else:
                result[key] = inner
        else:
            result[key] = value
    return result


def param_name(location: tuple[int | str, ...]) -> str:
    """`("metadata", "client_reference")` -> `metadata[client_reference]`."""
    head, *rest = (str(part) for part in location)
    return head + "".join(f"[{part}]" for part in rest)


def validated(model: type[Model], params: dict[str, Any]) -> Model:
    """The parameters as `model`, or Stripe's 400 for the first one that is wrong."""
    try:
        return model.model_validate(params)
    except ValidationError as invalid:
        raise _stripe_error(invalid.errors()[0]) from invalid


def _stripe_error(error: Any) -> StripeError:
    param = param_name(tuple(error["loc"])) if error["loc"] else None
    kind = error["type"]
    if kind == "missing":
        return invalid_request(f"Missing required param: {param}.", code="parameter_missing", param=param)
    if kind == "extra_forbidden":
        return invalid_request(f"Received unknown parameter: {param}", code="parameter_unknown", param=param)
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return invalid_request(
            f"Invalid integer: {error.get('input')}", code="parameter_invalid_integer", param=param
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    return invalid_request(f"Invalid {param}: {message}", param=param)
