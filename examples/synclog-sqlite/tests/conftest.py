"""The one fixture synclog's conformance suite asks of a plugin: a fresh target URL per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def synclog_target_url(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'conformance.sqlite'}"
