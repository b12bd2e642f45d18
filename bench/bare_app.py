"""The ceiling for the HTTP side: a bare Starlette POST that reads the body and answers 204,
under the same uvicorn settings and load generator as the gateway (bench/README.md)."""

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def receive(request: Request) -> Response:
    await request.body()
    return Response(status_code=204)


app = Starlette(routes=[Route("/v1/webhooks/{endpoint_id}", receive, methods=["POST"])])
