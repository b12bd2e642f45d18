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
    if CHROMIUM is None:
        raise RuntimeError("chromium is not installed")
    profile = Path(tempfile.mkdtemp(prefix="paygate-chromium-"))
    process = await asyncio.create_subprocess_exec(
        CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        f"--user-data-dir={profile}", "--remote-debugging-port=0", "--window-size=1400,900", "about:blank",
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        endpoint = await _devtools_endpoint(profile / "DevToolsActivePort", process)
        async with websockets.connect(endpoint, max_size=None) as socket:
            target = await _call(socket, "Target.createTarget", url="about:blank")
            attached = await _call(socket, "Target.attachToTarget", targetId=target["targetId"], flatten=True)
            page = Page(socket, attached["sessionId"])
            await page.send("Page.enable")
            await page.send("Page.navigate", url=url)
            await page.wait_for("document.readyState === 'complete'")
            yield page
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


async def _devtools_endpoint(port_file: Path, process: asyncio.subprocess.Process) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.returncode is not None:
            raise RuntimeError(f"chromium exited with {process.returncode}")
        if port_file.exists():
            lines = port_file.read_text().split()
            if len(lines) == 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        await asyncio.sleep(0.05)
    raise RuntimeError("chromium did not open its DevTools port")


async def _call(socket: websockets.ClientConnection, method: str, **params: Any) -> dict[str, Any]:
    await socket.send(json.dumps({"id": 0, "method": method, "params": params}))
    while True:
        answer = json.loads(await socket.recv())
        if answer.get("id") == 0:
            result: dict[str, Any] = answer["result"]
            return result
