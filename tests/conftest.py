"""Real servers for every test (DESIGN.md, "Embedded default and scale-out"; STYLE, example 5).

PostgreSQL: ``DATABASE_URL`` when given, else an embedded server for the session. The migrations
run once into a template database (as ``paygate db migrate`` does); each test that asks for
``database_url`` gets its own ``CREATE DATABASE ... TEMPLATE`` copy (about 50 ms), so tests never
see each other's rows.
Broker: ``REDIS_URL`` when given, else an embedded Valkey. Its URL is fixed when this file is
imported, because ``jobs`` builds its broker from ``REDIS_URL`` at import (redis-py connects
lazily, so the server only has to be up by the time a test uses it).
Workers: the default run has two pytest-xdist workers (pyproject's addopts). A session is a
worker's: each starts its own embedded PostgreSQL and Valkey on free ports and makes its own
template database; workers sharing a given ``REDIS_URL`` each use their own database number.
Time: ``clock`` is a :class:`ManualClock`; tests move it, they never sleep for deadlines.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
import respx
from psycopg.conninfo import make_conninfo

from gateway import instruments
from gateway.app import create_app
from gateway.clock import ManualClock
from gateway.services import Services
from gateway.settings import Settings, build_settings
from gateway.store.db import Database
from gateway.store.migrate import migrate
from paygate_local.servers import EmbeddedPostgres, EmbeddedValkey, free_port
from provider_fake import CardCo, CardCoConfig
from provider_fake import Clock as CardCoClock
from provider_fake.config import Account
from provider_fake.inprocess import mount
from tests.server_dirs import server_dir

# The URL of the embedded Valkey an earlier import set (pytest-xdist's controller imports this file
# too, and its workers inherit its environment): such a REDIS_URL was not given, and each worker
# starts its own server.
_OWN_REDIS_URL = "PAYGATE_TESTS_EMBEDDED_REDIS_URL"
_EMBEDDED_VALKEY_PORT: int | None = None
if os.environ.get("REDIS_URL", "") in ("", os.environ.get(_OWN_REDIS_URL)):
    _EMBEDDED_VALKEY_PORT = free_port()
    os.environ["REDIS_URL"] = os.environ[_OWN_REDIS_URL] = f"redis://127.0.0.1:{_EMBEDDED_VALKEY_PORT}/0"
elif _WORKER := os.environ.get("PYTEST_XDIST_WORKER"):
    # A given server the workers share: each worker its own database number (gw0 -> 0, gw1 -> 1).
    os.environ["REDIS_URL"] = urlunsplit(urlsplit(os.environ["REDIS_URL"])._replace(path=f"/{_WORKER.removeprefix('gw')}"))

TEST_PEPPER = "test-pepper-not-secret"
TEST_ACCOUNT = "cardco:acct_store:test"
LIVE_ACCOUNT = "cardco:acct_store:live"
CARDCO_URL = "http://cardco.test"
# Effect certificates (seed 001): a fixed, public test key; never a production one.
CERTIFICATE_KEY_ID = "test-cert-1"
CERTIFICATE_PRIVATE_KEY = "nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """A URL with the right to create databases."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    with server_dir("paygate-test-pg-") as folder:
        server = EmbeddedPostgres(folder / "pg", ephemeral=True)
        try:
            yield server.url()
        finally:
            server.stop()


def _url_for(admin_url: str, dbname: str) -> str:
    return make_conninfo(admin_url, dbname=dbname)


@pytest.fixture(scope="session")
def template_database(postgres_admin_url: str) -> Iterator[str]:
    name = f"paygate_template_{os.getpid()}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    migrate(_url_for(postgres_admin_url, name), ManualClock())
    yield name
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(postgres_admin_url: str, template_database: str) -> Iterator[str]:
    """A fresh database with the schema applied, dropped after the test."""
    name = f"paygate_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"')
    yield _url_for(postgres_admin_url, name)
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    if _EMBEDDED_VALKEY_PORT is None:
        yield os.environ["REDIS_URL"]
        return
    server = EmbeddedValkey(_EMBEDDED_VALKEY_PORT)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _no_counts_from_earlier_tests() -> None:
    """Events counted in this process (gateway.instruments) are flushed into whichever database
    the next flush uses: drop what an earlier test counted, so each test's database holds its own."""
    instruments.take()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


def account_config(account_id: str, **overrides: object) -> dict[str, object]:
    environment = account_id.rsplit(":", 1)[1]
    return {
        "id": account_id,
        "base_url": CARDCO_URL,
        "api_key": f"ck_{environment}_key",
        "webhook_endpoint_id": f"cardco-{environment}",
        "webhook_secrets": [f"whsec_{'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' if environment == 'test' else 'bGl2ZXNlY3JldGxpdmVzZWNyZXRsaXZlc2VjcmV0'}"],
        **overrides,
    }


def settings_with(database_url: str, redis_url: str, accounts: list[dict[str, object]]) -> Settings:
    """The tests' settings on ``accounts`` (the ``settings`` fixture's are CardCo's test and live)."""
    return build_settings({
        "database_url": database_url,
        "redis_url": redis_url,
        "token_pepper": TEST_PEPPER,
        "log_format": "console",
        "provider_accounts": accounts,
        "certificate_keys": [{"key_id": CERTIFICATE_KEY_ID, "private_key": CERTIFICATE_PRIVATE_KEY, "active": True}],
    })


@pytest.fixture
def settings(database_url: str, redis_url: str) -> Settings:
    return settings_with(database_url, redis_url, [account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT)])


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = await Database.open(database_url, size=4, name="paygate-test")
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
async def services(settings: Settings, clock: ManualClock) -> AsyncIterator[Services]:
    # httpx's own transport, which respx mocks (the process's default is aiohttp: gateway.outbound).
    opened = await Services.open(settings, clock, httpx.AsyncHTTPTransport())
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def client(settings: Settings, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client for the real gateway app, in-process, over the real database and broker."""
    app = create_app(settings, services=services)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway.test") as http:
        yield http


@pytest.fixture
def cardco(clock: ManualClock) -> CardCo:
    """The bundled CardCo fake, with the same accounts and keys as ``settings`` and its clock
    driven by the test's ManualClock (``clock.advance`` moves both; the fake's own
    ``cardco.clock.advance`` moves only the provider, e.g. to model skew)."""
    accounts = [Account(id=str(a["id"]), api_key=str(a["api_key"]), webhook_secrets=list(a["webhook_secrets"]))  # type: ignore[call-overload]
                for a in (account_config(TEST_ACCOUNT), account_config(LIVE_ACCOUNT))]
    return CardCo(CardCoConfig(accounts=accounts), clock=CardCoClock(base=clock.now))


@pytest.fixture
def cardco_http(cardco: CardCo) -> Iterator[respx.MockRouter]:
    """Route every httpx call to ``CARDCO_URL`` into the in-process CardCo (respx), so the
    gateway's own payment client talks to the real fake through the same app logic."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        mount(router, cardco, CARDCO_URL)
        yield router
