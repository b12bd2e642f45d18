"""What the end-to-end tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server_dirs import server_dir


@pytest.fixture
def work_dir() -> Iterator[Path]:
    """The directory a test runs ``paygate up`` or ``paygate campaign`` in, whose embedded
    PostgreSQL keeps its data there: outside pytest's ``tmp_path`` (tests/server_dirs.py)."""
    with server_dir("paygate-e2e-") as path:
        yield path
