"""The README's ten-minute tour stays true ("Keep it true with a test that runs
the tour's commands against `paygate up`"). Every ``sh`` block between the README's tour markers is
run, in order, in one bash session (the variables of the first block serve the rest), from a
directory where ``paygate up`` runs as the two commands above the tour start it: the demo file in
``./.paygate``, ``.venv/bin/paygate`` on the path the tour names. Each step's visible result, the
one its sentence tells the newcomer to look for, is checked in that step's own output; the console's
Overview then shows what the tour did."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from paygate_local.servers import free_port

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
STEP = "=== paygate tour step ==="
START_TIMEOUT_S = 90
TOUR_TIMEOUT_S = 420
# What each block's sentence tells the newcomer to look for, in the order the block prints it.
SEEN = [
    ["console: http://127.0.0.1:"],
    ['"state":"Succeeded"', '"protocol_state":"CERTIFIED"', '"state":"Paid"', "valid"],
    ['"state":"Unknown"', '"state":"Succeeded"'],
    ['"status":204', "1 confirmation of ORD-DEMO-1"],
    ['"state":"CancelRequested"', '"cause":"paid-after-cancel"', '"state":"Refunded"'],
    ['"outcome":"EscalationRecommended"', '"outcome":"Allowed"', '"state":"Paid"'],
]


def tour_blocks(readme: str) -> list[str]:
    """The ``sh`` blocks between ``<!-- tour`` and ``<!-- /tour -->``, in order."""
    section = readme.split("<!-- tour", 1)[1].split("<!-- /tour -->", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```$", section, flags=re.S | re.M)


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}


def test_the_readme_tour_runs_as_written_against_paygate_up(work_dir: Path) -> None:
    blocks = tour_blocks(README.read_text())
    assert len(blocks) == len(SEEN), "a tour step was added or removed: say here what it shows"
    (work_dir / ".venv").symlink_to(Path(sys.prefix))  # the first command's virtualenv
    log = (work_dir / "up.log").open("wb")
    up = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "up", "--web-port", str(free_port()), "--provider-port", str(free_port())],
        stdout=log, stderr=subprocess.STDOUT, env=_environment(), cwd=work_dir)
    try:
        demo_file = work_dir / ".paygate" / "paygate-demo.json"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not demo_file.exists():
            assert up.poll() is None and time.monotonic() < deadline, (work_dir / "up.log").read_text()[-3000:]
            time.sleep(0.3)
        script = f"\necho '{STEP}'\n".join(blocks)
        ran = subprocess.run(["bash", "-c", script], cwd=work_dir, capture_output=True, text=True,
                             timeout=TOUR_TIMEOUT_S, env=_environment())
        steps = ran.stdout.split(STEP + "\n")
        assert ran.returncode == 0 and len(steps) == len(SEEN), (ran.returncode, ran.stdout, ran.stderr)
        for number, (output, wanted) in enumerate(zip(steps, SEEN, strict=True)):
            at = 0
            for text in wanted:
                found = output.find(text, at)
                assert found >= 0, f"step {number}: {text!r} not shown (in order) in:\n{output}\n{ran.stderr}"
                at = found + len(text)

        # The console's Overview shows what the tour did: four payments started and all settled,
        # nothing left Unknown, one payout paid.
        demo = json.loads(demo_file.read_text())
        seen = httpx.get(f"{demo['gateway_url']}/v1/ops/overview", timeout=10,
                         headers={"Authorization": f"Bearer {demo['tokens']['operator']}"}).json()
        hour = seen["attempts_last_hour"]
        assert (hour["started"], hour["succeeded"], hour["unknown"]) == (3, 3, 1), hour
        assert [u["unknown"] for u in seen["unknown_attempts"]] == [0, 0, 0, 0]
        assert seen["payouts_by_state"] == {"Paid": 1}
        up.send_signal(signal.SIGINT)
        up.wait(30)
    finally:
        if up.poll() is None:
            up.kill()
            up.wait(10)
        log.close()
