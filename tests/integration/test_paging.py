"""Paging that callers can follow (docs/decisions/0036): every list endpoint answers a
JSON array and, whenever more rows exist, an RFC 8288 ``Link: <...>; rel="next"`` header whose URL
fetches the next page with the same filters; ``limit`` and ``order=asc|desc`` everywhere; keyset
paging by (time, id), so a page boundary between rows stamped at the same instant neither skips nor
repeats one, and a row inserted during a walk disturbs nothing.

Every list route of the app must have an entry in :data:`LISTS` (how to add one of its rows), so a
new list that does not page fails :func:`test_every_list_route_is_walked_here`."""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from psycopg.types.json import Jsonb

from gateway.app import routes
from gateway.http.openapi import build
from gateway.services import Services
from gateway.store.registry import register_provider_accounts
from tests.integration.outbox_support import World, receiver, settings, sinks, world

__all__ = ["receiver", "settings", "sinks", "world"]

UUID_IDS = ("attempt_id", "grant_id")
NEXT = re.compile(r'^<(?P<url>/[^>]*)>; rel="next"$')


@dataclass(frozen=True)
class Listed:
    """One list endpoint: the filters a walk uses, the item's id and time fields, and how to add a
    row the filters select (it returns the row's id as the list renders it)."""

    filters: dict[str, str]
    id: str
    time: str
    add: Callable[[World], Awaitable[Any]]


async def _escalation(world: World) -> int:
    return await world.escalate(f"attempt:{uuid.uuid4()}:deadline")


async def _attempt(world: World) -> str:
    return str(await world.attempt())


async def _message(world: World) -> int:
    return await world.effect(await world.attempt(), "order-confirmation")


async def _notification(world: World) -> int:
    """A stored notification no attempt took (the reconciliation queue)."""
    row = await world.db.fetch_one(
        "INSERT INTO payment_attempt_events (attempt_id, occurred_at, kind, actor, provider_account,"
        " notification_key, detail) VALUES (NULL, %(now)s, 'notification', 'notification-handler',"
        " 'cardco:acct_store:test', %(key)s, %(detail)s) RETURNING event_id",
        {"now": world.clock.now(), "key": f"evt_{uuid.uuid4().hex}", "detail": Jsonb({
            "object": "payment", "type": "payment.succeeded", "amount_minor": 4250, "currency": "EUR",
            "escalation_key": "notification:cardco:acct_store:test:unmatched-unidentified"})})
    assert row is not None
    return int(row["event_id"])


async def _payout(world: World, outcome: str | None = None) -> str:
    """A Draft payout, with a latest decision of ``outcome`` when given."""
    payout_id, now = f"PAY-{uuid.uuid4().hex[:12]}", world.clock.now()
    async with world.db.transaction() as conn:
        await conn.execute(
            "INSERT INTO payouts (payout_id, tenant_id, requester_id, beneficiary_id, destination_id,"
            " destination_version, amount_minor, currency, purpose, release_at, state, correlation_id, created_at,"
            " updated_at) VALUES (%(p)s, 'T-1', 'clerk-1', 'BEN-1', 'DST-1', 1, 1000, 'EUR', 'test', %(now)s,"
            " 'Draft', 'cor-1', %(now)s, %(now)s)", {"p": payout_id, "now": now})
        if outcome is not None:
            await conn.execute(
                "INSERT INTO payout_decisions (decision_id, payout_id, operation, outcome, reason, terms_fingerprint,"
                " actor_id, evaluated_payout_version, observed_at, correlation_id) VALUES (%(d)s, %(p)s,"
                " 'payout.submit', %(o)s, 'amount.above-requester-limit', 'fp', 'clerk-1', 1, %(now)s, 'cor-1')",
                {"d": uuid.uuid4(), "p": payout_id, "o": outcome, "now": now})
    return payout_id


async def _awaiting(world: World) -> str:
    return await _payout(world, "EscalationRecommended")


async def _recall(world: World) -> str:
    """An Unknown recall attempt of a Paid payout (docs/decisions/0015), as its claim and send leave it."""
    await register_provider_accounts(world.db, world.clock, world.settings.provider_accounts)
    payout_id, now = await _payout(world), world.clock.now()
    decision_id, grant_id, attempt_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with world.db.transaction() as conn:
        await conn.execute("UPDATE payouts SET state = 'Paid' WHERE payout_id = %(p)s", {"p": payout_id})
        await conn.execute(
            "INSERT INTO payout_recall_decisions (decision_id, payout_id, outcome, reason, actor_id,"
            " evaluated_payout_version, observed_at, correlation_id) VALUES (%(d)s, %(p)s, 'Allowed',"
            " 'recall.allowed', 'clerk-1', 1, %(now)s, 'cor-1')", {"d": decision_id, "p": payout_id, "now": now})
        await conn.execute(
            "INSERT INTO payout_recall_grants (grant_id, decision_id, payout_id, tenant_id, audience, recall_number,"
            " provider_payout_id, policy_version, not_before, expires_at, state, consumed_at, consumed_by)"
            " VALUES (%(g)s, %(d)s, %(p)s, 'T-1', 'payout-recall-executor', 1, 'po_1', 'v1', %(now)s,"
            " %(later)s, 'Consumed', %(now)s, 'worker-1')",
            {"g": grant_id, "d": decision_id, "p": payout_id, "now": now, "later": now + timedelta(minutes=30)})
        await conn.execute(
            "INSERT INTO payout_recall_attempts (attempt_id, payout_id, grant_id, decision_id, recall_number,"
            " provider_account, provider_payout_id, client_reference, idempotency_key, amount_minor, currency,"
            " state, claimed_by, claimed_at, send_deadline, started_at, sends, escalation_deadline) VALUES"
            " (%(a)s, %(p)s, %(g)s, %(d)s, 1, 'cardco:acct_store:test', 'po_1', %(ref)s, %(key)s, 1000, 'EUR',"
            " 'Unknown', 'worker-1', %(now)s, %(later)s, %(now)s, 1, %(later)s)",
            {"a": attempt_id, "p": payout_id, "g": grant_id, "d": decision_id, "ref": f"{payout_id}-r1",
             "key": f"recall-{payout_id}-r1", "now": now, "later": now + timedelta(minutes=30)})
    return str(attempt_id)


async def _refund(world: World) -> str:
    """A requested refund of a paid order: its Allowed decision and Issued grant (docs/decisions/0019)."""
    attempt_id, now = await world.attempt(), world.clock.now()
    decision_id, grant_id = uuid.uuid4(), uuid.uuid4()
    order = await world.db.fetch_one("SELECT order_id FROM payment_attempts WHERE attempt_id = %(a)s",
                                     {"a": attempt_id})
    assert order is not None
    order_id = order["order_id"]
    async with world.db.transaction() as conn:
        await conn.execute(
            "INSERT INTO payment_refund_decisions (decision_id, order_id, cause, outcome, reason, policy_version,"
            " actor_id, evaluated_order_version, observed_at, correlation_id) VALUES (%(d)s, %(o)s,"
            " 'merchant-request', 'Allowed', 'refund.allowed', 'v1', 'merchant:m-1', 0, %(now)s, 'cor-1')",
            {"d": decision_id, "o": order_id, "now": now})
        await conn.execute(
            "INSERT INTO payment_refund_grants (grant_id, decision_id, order_id, merchant_id, audience, refund_number,"
            " provider_payment_id, policy_version, not_before, expires_at, state) VALUES (%(g)s, %(d)s, %(o)s,"
            " 'm-1', 'payment-refund-executor', 1, 'pay_1', 'v1', %(now)s, %(later)s, 'Issued')",
            {"g": grant_id, "d": decision_id, "o": order_id, "now": now, "later": now + timedelta(minutes=30)})
    return str(grant_id)


async def _run(world: World) -> str:
    """A provider-side reconciliation run an operator started (docs/decisions/0071)."""
    await world.attempt()  # registers the configured provider accounts
    run_id, now = uuid.uuid4(), world.clock.now()
    await world.db.fetch_one(
        "INSERT INTO reconciliation_runs (run_id, provider_account, window_from, window_to, state, started_by,"
        " requested_at) VALUES (%(r)s, %(a)s, %(from)s, %(now)s, 'Running', 'op-1', %(now)s) RETURNING run_id",
        {"r": run_id, "a": world.settings.provider_accounts[0].id, "from": now - timedelta(hours=1), "now": now})
    return str(run_id)


LISTS: dict[str, Listed] = {
    "/v1/ops/escalations": Listed({"state": "open"}, "escalation_id", "raised_at", _escalation),
    "/v1/ops/attempts": Listed({"state": "Started"}, "attempt_id", "created_at", _attempt),
    "/v1/ops/outbox": Listed({"state": "pending"}, "message_id", "created_at", _message),
    "/v1/ops/notifications": Listed({"state": "unmatched"}, "notification_event_id", "received_at", _notification),
    "/v1/ops/payouts": Listed({"state": "Draft"}, "payout_id", "created_at", _payout),
    "/v1/ops/payout-approvals": Listed({}, "payout_id", "created_at", _awaiting),
    "/v1/ops/recalls": Listed({"state": "Unknown"}, "attempt_id", "claimed_at", _recall),
    "/v1/ops/refunds": Listed({"state": "Requested"}, "grant_id", "requested_at", _refund),
    "/v1/ops/reconciliation/runs": Listed({"state": "Running"}, "run_id", "requested_at", _run),
}


@pytest.fixture
async def ops(client: httpx.AsyncClient, services: Services) -> httpx.AsyncClient:
    client.headers["Authorization"] = f"Bearer {await services.tokens.create('operator', 'op-paging')}"
    return client


def _key(item: dict[str, Any], listed: Listed) -> tuple[str, Any]:
    """The list's order as the database has it: time, then id (a uuid compares as its bytes, a
    payout id as text)."""
    identifier = item[listed.id]
    return item[listed.time], uuid.UUID(identifier) if listed.id in UUID_IDS else identifier


async def seven_rows_in_two_instants(world: World, listed: Listed) -> None:
    """Three rows at one instant, four at the next: with ``limit=2`` every page boundary falls
    between two rows stamped at the same instant."""
    for _ in range(3):
        await listed.add(world)
    world.clock.advance(1)
    for _ in range(4):
        await listed.add(world)


async def everything(ops: httpx.AsyncClient, path: str, listed: Listed) -> list[dict[str, Any]]:
    """Every item in one page (the reference the walks are checked against), in the database's order."""
    response = await ops.get(path, params={**listed.filters, "limit": 1000})
    assert response.status_code == 200 and "link" not in response.headers
    items: list[dict[str, Any]] = response.json()
    assert items == sorted(items, key=lambda item: _key(item, listed))
    return items


async def walk(ops: httpx.AsyncClient, path: str, listed: Listed, order: str, *, limit: int = 2,
               between: Callable[[], Awaitable[Any]] | None = None) -> list[dict[str, Any]]:
    """Follow ``rel="next"`` from the first page to the last; ``between`` runs after the first page."""
    response = await ops.get(path, params={**listed.filters, "limit": limit, "order": order})
    items: list[dict[str, Any]] = []
    while True:
        assert response.status_code == 200, response.text
        page = response.json()
        items += page
        link = response.headers.get("link")
        if link is None:
            assert len(page) <= limit
            return items
        assert len(page) == limit
        match = NEXT.match(link)
        assert match, link
        query = parse_qs(urlsplit(match["url"]).query)
        assert {name: query[name] for name in listed.filters} == {k: [v] for k, v in listed.filters.items()}
        assert (query["limit"], query["order"]) == ([str(limit)], [order])
        if between is not None:
            await between()
            between = None
        response = await ops.get(match["url"])


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("path", sorted(LISTS))
async def test_following_link_headers_shows_every_row_once_in_order(
        ops: httpx.AsyncClient, world: World, path: str, order: str) -> None:
    """The Link header's rel="next" URL fetches the next page with the same filters,
    to the last page (no Link); a page boundary between rows with equal timestamps skips and repeats
    nothing, in both orders."""
    listed = LISTS[path]
    await seven_rows_in_two_instants(world, listed)
    expected = await everything(ops, path, listed)
    assert len(expected) == 7
    seen = await walk(ops, path, listed, order)
    assert seen == (expected if order == "asc" else expected[::-1])


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("path", sorted(LISTS))
async def test_a_row_inserted_during_a_walk_disturbs_nothing(
        ops: httpx.AsyncClient, world: World, path: str, order: str) -> None:
    """Keyset paging "stable under concurrent inserts": a row added after the first
    page (later, as time moves on) neither shifts nor repeats a row; oldest first it comes last, newest
    first it is beyond the walk's start."""
    listed = LISTS[path]
    await seven_rows_in_two_instants(world, listed)
    before = await everything(ops, path, listed)
    added: list[Any] = []

    async def insert() -> None:
        world.clock.advance(1)
        added.append(await listed.add(world))

    seen = await walk(ops, path, listed, order, between=insert)
    ids = [item[listed.id] for item in seen]
    expected = [item[listed.id] for item in before]
    assert ids == (expected + added if order == "asc" else expected[::-1])


async def test_limit_defaults_to_100_and_the_last_page_has_no_link(ops: httpx.AsyncClient, world: World) -> None:
    """The default page is today's 100 items; the next one is announced, not silent."""
    for _ in range(101):
        await world.escalate(f"attempt:{uuid.uuid4()}:deadline")
    first = await ops.get("/v1/ops/escalations")
    assert len(first.json()) == 100
    match = NEXT.match(first.headers["link"])
    assert match
    last = await ops.get(match["url"])
    assert len(last.json()) == 1 and "link" not in last.headers
    assert "link" not in (await ops.get("/v1/ops/escalations", params={"limit": 101})).headers


async def test_after_keeps_working_and_the_link_keeps_it(ops: httpx.AsyncClient, world: World) -> None:
    """API.md "Operations" is extended, never broken: ``after`` (only ids greater than it) still
    filters, and is a filter the next page keeps."""
    ids = [await world.escalate(f"attempt:{uuid.uuid4()}:deadline") for _ in range(5)]
    first = await ops.get("/v1/ops/escalations", params={"after": ids[0], "limit": 2})
    assert [item["escalation_id"] for item in first.json()] == ids[1:3]
    match = NEXT.match(first.headers["link"])
    assert match
    assert parse_qs(urlsplit(match["url"]).query)["after"] == [str(ids[0])]
    assert [item["escalation_id"] for item in (await ops.get(match["url"])).json()] == ids[3:]


@pytest.mark.parametrize("params, field", [
    ({"limit": "0"}, "limit"), ({"limit": "1001"}, "limit"),
    ({"limit": "x"}, "limit"), ({"limit": "-1"}, "limit"),
    ({"limit": ""}, "limit"), ({"limit": "２"}, "limit"),
    ({"order": "newest"}, "order"), ({"order": "DESC"}, "order"),
    ({"order": ""}, "order"),
    ({"cursor": "!!"}, "cursor"), ({"cursor": ""}, "cursor"),
    ({"cursor": "bm90IGEgY3Vyc29y"}, "cursor"),
])
async def test_bad_paging_parameters_are_422_naming_the_parameter(
        ops: httpx.AsyncClient, params: dict[str, str], field: str) -> None:
    """Paging with API.md's error rule: an invalid limit, order or cursor is a problem
    document, 422 ``request.invalid`` (as a bad ``limit`` always was), whose field errors name it; on
    every list (one database for all of them: the lists are many)."""
    for path in sorted(LISTS):
        response = await ops.get(path, params=params)
        assert (response.status_code, response.json()["code"]) == (422, "request.invalid"), path
        assert [error["field"] for error in response.json()["errors"]] == [field]
        assert response.headers["content-type"] == "application/problem+json"


async def test_a_cursor_of_another_list_or_order_is_refused(ops: httpx.AsyncClient, world: World) -> None:
    """A cursor names its list and order: used elsewhere it is 422 ``request.invalid`` naming ``cursor``, never a
    silent restart or a skip."""
    for _ in range(3):
        await world.escalate(f"attempt:{uuid.uuid4()}:deadline")
    match = NEXT.match((await ops.get("/v1/ops/escalations", params={"limit": 1})).headers["link"])
    assert match
    cursor = parse_qs(urlsplit(match["url"]).query)["cursor"][0]
    assert (await ops.get("/v1/ops/escalations", params={"cursor": cursor})).status_code == 200
    for path, order in [("/v1/ops/outbox", "asc"), ("/v1/ops/escalations", "desc")]:
        response = await ops.get(path, params={"cursor": cursor, "order": order})
        assert (response.status_code, response.json()["code"]) == (422, "request.invalid")
        assert [error["field"] for error in response.json()["errors"]] == ["cursor"]


def _list_routes(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every GET of the document whose 200 answer is a JSON array: the lists."""
    return {path: item["get"] for path, item in document["paths"].items()
            if "get" in item and item["get"]["responses"]["200"].get("content", {})
            .get("application/json", {}).get("schema", {}).get("type") == "array"}


def test_the_openapi_document_describes_paging_for_every_list() -> None:
    """OpenAPI names limit, order and cursor, the Link header and the 422 answer of
    every route whose answer is a list; a new list that does not page fails here."""
    lists = _list_routes(build(routes()))
    assert lists
    for path, operation in lists.items():
        parameters = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
        assert {"limit", "order", "cursor"} <= set(parameters), path
        assert parameters["order"]["schema"]["enum"] == ["asc", "desc"], path
        assert "Link" in operation["responses"]["200"].get("headers", {}), path
        codes = operation["responses"]["422"]["content"]["application/problem+json"]["schema"]["allOf"][1]
        assert "request.invalid" in codes["properties"]["code"]["enum"], path


def test_every_list_route_is_walked_here() -> None:
    """Every list route of the app has an entry in LISTS, so the walks above run against it."""
    assert set(_list_routes(build(routes()))) == set(LISTS)
