"""The operator console (API.md "Operations": "A browser console under /console/ for operators
(sign-in with an operator token)"; "Authentication": no token for the console's sign-in page)."""

from __future__ import annotations

import re
from importlib import resources

import httpx
import pytest

SCRIPTS = ("console.js", "core.js", "views-ops.js", "views-money.js", "views-overview.js", "views-reconciliation.js")
CONSOLE_FILES = ("index.html", "console.css", *SCRIPTS)


async def test_the_sign_in_page_loads_without_a_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert 'id="sign-in-form"' in response.text and 'type="password"' in response.text
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_the_bare_path_redirects_to_the_console(client: httpx.AsyncClient) -> None:
    response = await client.get("/console")
    assert (response.status_code, response.headers["location"]) == (307, "http://gateway.test/console/")


@pytest.mark.parametrize(("name", "content_type"), [
    *((script, ("text/javascript", "application/javascript")) for script in SCRIPTS), ("console.css", ("text/css",))])
async def test_assets_are_served_with_their_content_types(client: httpx.AsyncClient, name: str,
                                                          content_type: tuple[str, ...]) -> None:
    response = await client.get(f"/console/{name}")
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] in content_type
    assert response.content == resources.files("gateway").joinpath("console", name).read_bytes()


async def test_an_unknown_console_file_is_a_problem_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/console/nothing.js")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_the_console_renders_text_only_and_loads_nothing_from_elsewhere() -> None:
    """Data from the API is untrusted: the script never parses it as HTML or code. The machine
    the console runs on may have no internet: nothing is fetched from another origin."""
    for name in SCRIPTS:
        script = resources.files("gateway").joinpath("console", name).read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in script, (name, sink)
    for name in CONSOLE_FILES:
        source = resources.files("gateway").joinpath("console", name).read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)=["']?(https?:)?//|url\(\s*["']?(https?:)?//|fetch\(\s*["'`]https?:""",
                             source), name
        assert " on" + "click=" not in source and "javascript:" not in source, name
