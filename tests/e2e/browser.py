"""A headless Chromium driven over the DevTools protocol, just enough to use the console as a person
does: open a page, run a line of script (type, click), wait for something to show, take a picture.
The protocol travels over a WebSocket (the ``websockets`` package uvicorn already brings)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import websockets

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
START_TIMEOUT_S = 20.0


class Page:
    def __init__(self, socket: websockets.ClientConnection, session_id: str) -> None:
        self._socket = socket
        self._session = session_id
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        await self._socket.send(json.dumps({"id": message_id, "sessionId": self._session, "method": method,
                                            "params": params}))
        while True:
            answer = json.loads(await self._socket.recv())
            if answer.get("id") == message_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout_s: float = 10.0) -> Any:
        """Poll ``expression`` until it is truthy (the page renders asynchronously)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.05)
        raise AssertionError(f"never true: {expression}")

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@asynccontextmanager
async def browser_page(url: str) -> AsyncIterator[Page]:
    """A fresh headless Chromium (its own profile) showing ``url``."""
    profile, process, endpoint = await _launch()
    try:
        async with websockets.connect(endpoint, max_size=None) as socket:
            target = await _call(socket, "Target.createTarget", url="about:blank")
            attached = await _call(socket, "Target.attachToTarget", targetId=target["targetId"], flatten=True)
            page = Page(socket, attached["sessionId"])
            await page.send("Page.enable")
            await page.send("Page.navigate", url=url)
            await page.wait_for("document.readyState === 'complete'")
            yield page
    finally:
        await _stop(process, profile)


async def _launch() -> tuple[Path, asyncio.subprocess.Process, str]:
    """Chromium on a fresh profile and its DevTools endpoint. A launch that shows no endpoint in
    time is stopped and tried once more (a first start on a new machine can stall); the error
    after the second says what chromium printed (its output goes to ``chromium.log`` in the profile)."""
    if CHROMIUM is None:
        raise RuntimeError("chromium is not installed")
    for tries_left in (1, 0):
        profile = Path(tempfile.mkdtemp(prefix="paygate-chromium-"))
        with (profile / "chromium.log").open("wb") as output:
            process = await asyncio.create_subprocess_exec(
                CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-extensions", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                "--remote-debugging-port=0", "--window-size=1400,900", "about:blank",
                stdout=output, stderr=subprocess.STDOUT)
        endpoint = await _devtools_endpoint(profile / "DevToolsActivePort", process)
        if endpoint is not None:
            return profile, process, endpoint
        printed = (profile / "chromium.log").read_text(errors="replace")[-2000:]
        await _stop(process, profile)
        if not tries_left:
            raise RuntimeError(f"chromium did not open its DevTools port (exit {process.returncode}); "
                               f"it printed:\n{printed}")
    raise AssertionError("unreachable")


async def _stop(process: asyncio.subprocess.Process, profile: Path) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), timeout=10)
        except TimeoutError:
            process.kill()
            await process.wait()
    shutil.rmtree(profile, ignore_errors=True)


async def _devtools_endpoint(port_file: Path, process: asyncio.subprocess.Process) -> str | None:
    """The endpoint chromium writes to ``port_file``; None if it exits or writes none in time."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.returncode is None:
        if port_file.exists():
            lines = port_file.read_text().split()
            if len(lines) == 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        await asyncio.sleep(0.05)
    return None


async def _call(socket: websockets.ClientConnection, method: str, **params: Any) -> dict[str, Any]:
    await socket.send(json.dumps({"id": 0, "method": method, "params": params}))
    while True:
        answer = json.loads(await socket.recv())
        if answer.get("id") == 0:
            result: dict[str, Any] = answer["result"]
            return result
