"""The application's wiring as a handler sees it: the one :class:`Services` the app was built with."""

from __future__ import annotations

from starlette.requests import Request

from gateway.services import Services


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services
